"""Helpers of the container tests: which tools are here, and the session's buildah store."""
from __future__ import annotations

import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from helpers import sh

TOOLS = ("buildah", "skopeo", "umoci", "docker-registry")
SITE = "/usr/local/lib/python3.12/dist-packages"  # where the sets' container.site_packages says

missing = [t for t in TOOLS if shutil.which(t) is None]
if missing and os.environ.get("PATCHKIT_REQUIRE_CONTAINER_TOOLS"):
    raise RuntimeError(f"container tools missing: {missing} (.ci/run installs them)")
needs_tools = pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)} (apt-get install {' '.join(missing)})")


class _Env:
    """os.environ set for session fixtures, which cannot use monkeypatch; restored on exit."""

    def __init__(self, **values: str) -> None:
        self.values, self.saved = values, {}

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in self.values}
        os.environ.update(self.values)

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def in_store(storage):
    return _Env(CONTAINERS_STORAGE_CONF=str(storage), BUILDAH_ISOLATION="chroot")


def new_layer(image: str, tmp: Path) -> dict[str, tarfile.TarInfo]:
    """The entries of the image's last layer (the one the build added), by path."""
    oci = tmp / "layer-oci"
    sh("skopeo", "copy", "-q", f"containers-storage:{image}", f"oci:{oci}:img")
    index = json.loads((oci / "index.json").read_text())
    blob = lambda digest: oci / "blobs" / "sha256" / digest.split(":", 1)[1]  # noqa: E731
    manifest = json.loads(blob(index["manifests"][0]["digest"]).read_text())
    with tarfile.open(blob(manifest["layers"][-1]["digest"])) as tar:
        return {m.name.removeprefix("./"): m for m in tar.getmembers()}

"""Small base images for tests and benchmarks: busybox-static and a fake dist-packages tree.

Made with buildah alone (no daemon): a scratch container, the files copied into its mount,
committed under a name. `ballast_mb` adds a file of that many MiB, for a large base.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from .. import proc

BUSYBOX = Path("/bin/busybox")
APPLETS = ("sh", "sha256sum", "echo", "test", "cat")


def make_base(name: str, package_tree: Path, site_packages: str, *, package: str = "tensorrt_llm",
              replace: dict[str, str] | None = None, ballast_mb: int = 0) -> str:
    """Commit an image `name` whose site_packages holds package_tree/package (files in replace overridden)."""
    ctr = proc.run(["buildah", "from", "scratch"]).stdout.strip()
    try:
        mnt = Path(proc.run(["buildah", "mount", ctr]).stdout.strip())
        (mnt / "bin").mkdir()
        shutil.copy(BUSYBOX, mnt / "bin" / "busybox")
        for applet in APPLETS:
            (mnt / "bin" / applet).symlink_to("busybox")
        site = mnt / site_packages.lstrip("/")
        shutil.copytree(package_tree / package, site / package)
        for rel, text in (replace or {}).items():
            (site / rel).write_text(text)
        if ballast_mb:
            with open(mnt / "ballast.bin", "wb") as fh:
                for _ in range(ballast_mb):
                    fh.write(os.urandom(1 << 20))
        proc.run(["buildah", "umount", ctr])
        proc.run(["buildah", "commit", "-q", ctr, name])
    finally:
        proc.run(["buildah", "rm", ctr], check=False)
    return name

"""make bench: the build time of the patched image from a small and from a ~1 GiB base."""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .. import miniature, patchset, proc, progress
from ..container import build as cbuild
from ..container.bases import make_base
from ..git import Repo
from . import store


@dataclass(frozen=True)
class ContainerBench:
    small_seconds: float
    big_seconds: float
    big_base_mb: int
    layer_bytes: int
    driver: str

    @property
    def ratio(self) -> float:
        return self.big_seconds / max(self.small_seconds, 1e-9)


def container_bench(root: Path, workdir: Path, big_mb: int = 1024, driver: str = "overlay") -> ContainerBench | str:
    """Build time of the patched image from a small base and from a ~1 GB base (buildah).

    overlay storage shares the base's layers, as docker and podman do; vfs (what the tests
    use, since it works everywhere) copies the whole base for every build, so its times grow
    with the base while the patched layer does not.
    """
    if not shutil.which("buildah") or not shutil.which("skopeo"):
        return "container bench skipped: needs buildah and skopeo"
    # A private store, shut down however the section ends: nothing stays mounted under build/.
    with store.private(workdir / "containers", driver):
        return _container_bench_in(root, workdir, big_mb, driver)


def _container_bench_in(root: Path, workdir: Path, big_mb: int, driver: str) -> ContainerBench:
    up = workdir / "container-upstream"
    if not up.exists():
        miniature.build(root, up)
    ps = patchset.load(root, "rc25")
    tree = workdir / "container-tree"
    if tree.exists():
        shutil.rmtree(tree)
    Repo(up).worktree_add(tree, ps.upstream.ref)
    site = ps.container.site_packages
    small = make_base("localhost/bench-base:small", tree, site)
    big = make_base("localhost/bench-base:big", tree, site, ballast_mb=big_mb)
    times = []
    for base in (small, big):
        with progress.step(f"measuring: the patched image from {base}"):
            t0 = time.perf_counter()
            res = cbuild.build(root, ps, Repo(up), context_dir=workdir / "ctx", base=base, builder_name="buildah")
            times.append(time.perf_counter() - t0)
    oci = workdir / "oci"
    if oci.exists():
        shutil.rmtree(oci)
    proc.run(["skopeo", "copy", "-q", f"containers-storage:{res.image}", f"oci:{oci}:img"])
    index = json.loads((oci / "index.json").read_text())
    manifest = json.loads((oci / "blobs" / "sha256" / index["manifests"][0]["digest"].split(":")[1]).read_text())
    layer = manifest["layers"][-1]["size"]
    Repo(up).worktree_remove(tree)
    return ContainerBench(times[0], times[1], big_mb, layer, driver)

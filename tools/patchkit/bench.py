"""make bench: the cold start by clone method, a full source-mode delta, the patched image
build, the waiver step at scale.

The clone upstream is generated with real proportions (benchgen: 15,000 files, 5,000
commits, a few large binaries, the miniature laid in); fetchbench measures it.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from . import benchgen, fetchbench, miniature, patchset, proc, progress
from .container import build as cbuild
from .container.bases import make_base
from .delta import command as delta_cmd
from .git import Repo
from .waives.bench import waiver_bench  # noqa: F401 (make bench runs it)


def clone_bench(root: Path, workdir: Path, files: int | None = None, commits: int | None = None) -> fetchbench.CloneBench:
    """The cold start by clone method, on a generated upstream (fetchbench); files and commits
    override the generated upstream's real proportions (benchgen.Shape)."""
    shape = benchgen.Shape(**{k: v for k, v in (("files", files), ("commits", commits)) if v})
    if files:  # keep about ten files a directory
        shape = dataclasses.replace(shape, dirs=max(len(benchgen.ATTACH) + 1, files // 9))
    return fetchbench.clone_bench(root, workdir, shape)


@dataclass(frozen=True)
class DeltaBench:
    target: str
    seconds: float
    cases: int
    target_seconds: float = 1.0
    steps: tuple[tuple[str, float], ...] = ()


def delta_bench(root: Path, workdir: Path, target: str = "rc25", repeat: int = 3) -> DeltaBench:
    """Wall time of a full source-mode delta (both trees) on the miniature; best of `repeat`."""
    up = workdir / "delta-upstream"
    workdir.mkdir(parents=True, exist_ok=True)
    if not up.exists():
        miniature.build(root, up)
    ps = patchset.load(root, target)
    best, cases, best_steps = float("inf"), 0, []
    for i in range(repeat):
        with progress.timings() as steps, progress.step(f"measuring: source-mode delta {target} ({i + 1}/{repeat})"):
            t0 = time.perf_counter()
            res = delta_cmd.delta(ps, repo=Repo(up), mode="source", report=workdir / "delta.json")
            seconds = time.perf_counter() - t0
        if seconds < best:
            best, best_steps = seconds, [s for s in steps if not s[0].startswith("measuring")]
        cases = res.unpatched["passed"] + res.unpatched["failed"]
    return DeltaBench(target, best, cases, steps=tuple(best_steps))


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
    store = workdir / "containers"
    if store.exists():
        shutil.rmtree(store)
    store.mkdir(parents=True)
    conf = store / "storage.conf"
    conf.write_text(f'[storage]\ndriver = "{driver}"\ngraphroot = "{store}/graph"\nrunroot = "{store}/run"\n')
    saved = {k: os.environ.get(k) for k in ("CONTAINERS_STORAGE_CONF", "BUILDAH_ISOLATION")}
    os.environ.update(CONTAINERS_STORAGE_CONF=str(conf), BUILDAH_ISOLATION="chroot")
    try:
        return _container_bench_in(root, workdir, big_mb, driver)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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

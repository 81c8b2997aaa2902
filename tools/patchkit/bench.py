"""make bench: partial versus full clone, a full source-mode delta, the patched image build.

The clone upstream is generated: the miniature, plus thousands of files and a long history
laid on top with git fast-import, so the comparison has something to save.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from . import apply as apply_mod, miniature, patchset, proc
from .container import build as cbuild
from .container.testbase import make_base
from .delta import command as delta_cmd
from .git import Repo, clone
from .waives.bench import render_waiver_bench, waiver_bench  # noqa: F401 (make bench runs it)


@dataclass(frozen=True)
class CloneBench:
    files: int
    commits: int
    partial_seconds: float
    full_seconds: float
    partial_bytes: int
    full_bytes: int

    @property
    def byte_ratio(self) -> float:
        return self.full_bytes / max(self.partial_bytes, 1)

    @property
    def time_ratio(self) -> float:
        return self.full_seconds / max(self.partial_seconds, 1e-9)


def large_upstream(root: Path, dest: Path, files: int, commits: int, seed: int = 7) -> Path:
    """The miniature with `files` extra files changed over `commits` commits (fast-import)."""
    miniature.build(root, dest)
    repo = Repo(dest)
    rng = random.Random(seed)
    tip = repo.rev_parse("main")
    out = []
    for c in range(commits):
        changed = range(files) if c == 0 else rng.sample(range(files), 25)
        msg = f"bulk change {c}\n"
        out.append(f"commit refs/heads/main\ncommitter Bench <bench@example.invalid> {1790000000 + c} +0000\n"
                   f"data {len(msg)}\n{msg}" + (f"from {tip}\n" if c == 0 else ""))
        for i in changed:
            body = "".join(f"line {j} of module {i}, revision {c} {rng.random()}\n" for j in range(40))
            out.append(f"M 100644 inline cpp/module_{i // 100}/file_{i}.cc\ndata {len(body.encode())}\n{body}")
    repo.fast_import("".join(out))
    repo.force_checkout("main")
    return dest


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def clone_bench(root: Path, workdir: Path, files: int = 3000, commits: int = 300) -> CloneBench:
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    up = large_upstream(root, workdir / "upstream", files, commits)
    ps = patchset.load(root, "main")
    url = up.as_uri()

    t0 = time.perf_counter()
    apply_mod.apply(ps, src=workdir / "partial", url=url)
    partial = time.perf_counter() - t0

    t0 = time.perf_counter()
    clone(url, workdir / "full")
    apply_mod.apply(ps, src=workdir / "full")
    full = time.perf_counter() - t0
    return CloneBench(files, commits, partial, full, _du(workdir / "partial"), _du(workdir / "full"))


@dataclass(frozen=True)
class DeltaBench:
    target: str
    seconds: float
    cases: int
    target_seconds: float = 2.0


def delta_bench(root: Path, workdir: Path, target: str = "rc25", repeat: int = 3) -> DeltaBench:
    """Wall time of a full source-mode delta (both trees) on the miniature; best of `repeat`."""
    up = workdir / "delta-upstream"
    workdir.mkdir(parents=True, exist_ok=True)
    if not up.exists():
        miniature.build(root, up)
    ps = patchset.load(root, target)
    best, cases = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = delta_cmd.delta(ps, repo=Repo(up), mode="source", report=workdir / "delta.json")
        best = min(best, time.perf_counter() - t0)
        cases = res.unpatched["passed"] + res.unpatched["failed"]
    return DeltaBench(target, best, cases)


def render_delta_bench(b: DeltaBench) -> str:
    verdict = "under" if b.seconds < b.target_seconds else "OVER"
    return (f"source-mode delta {b.target} (both trees, {b.cases} cases each): {b.seconds:.2f} s "
            f"({verdict} the {b.target_seconds:.0f} s target)")


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


def render_container_bench(b: "ContainerBench | str") -> str:
    if isinstance(b, str):
        return b
    return (f"[{b.driver} storage] patched image from a small base: {b.small_seconds:6.2f} s; from a {b.big_base_mb} MiB base: "
            f"{b.big_seconds:6.2f} s (ratio {b.ratio:.1f}x); patched layer {b.layer_bytes / 1024:.1f} KiB")


def render_bench(b: CloneBench) -> str:
    return "\n".join([
        f"upstream: {b.files} generated files over {b.commits} commits (plus the miniature)",
        f"partial clone + apply: {b.partial_seconds:7.2f} s  {b.partial_bytes / 1e6:9.2f} MB",
        f"full clone + apply:    {b.full_seconds:7.2f} s  {b.full_bytes / 1e6:9.2f} MB",
        f"ratio (full/partial):  {b.time_ratio:7.1f}x   {b.byte_ratio:8.1f}x",
    ])

"""make bench, the cold start: what a cold apply of each target costs, by clone method.

On an upstream generated with real proportions (generate.py), for each target: a full clone,
the blobless clone with the ref's history that apply made before #12, the clone apply makes
now (one commit, its trees, the set's blobs), and tree:0 with lazy fetches for comparison;
each followed by the apply itself. Reported per run: wall time, bytes on disk (the whole
checkout, .git included), bytes received (the packs git stored as they came), objects
received, and the steps' own times; and per target the limit: one pack of the commit, its
trees and the set's blobs.
"""
from __future__ import annotations

import dataclasses
import difflib
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import apply as apply_mod, patchset, progress
from ..git import Identity, Repo, Sha, clone, partial_clone
from ..model import PatchSet
from . import generate, measure
from .measure import Figure

GOAL = 0.005  # a cold apply receives at most 0.5 % of a full clone's bytes
TARGETS = ("rc25", "main")
FULL, BEFORE, NOW, TREE0 = "full clone", "blobless + history (before)", "depth 1, blob:none (now)", "depth 1, tree:0 + lazy"
# After upstream moved under a hunk: THREEWAY fetches the set's recorded base as one commit;
# without a base upstream has, it deepens history step by step.
THREEWAY_BASE, THREEWAY_DEEPEN = "THREEWAY, recorded base on demand", "THREEWAY, no recorded base: deepen"
DRIFTER = Identity("Bench Upstream", "bench@upstream.invalid")


@dataclass(frozen=True)
class ColdApply:
    target: str
    method: str
    seconds: float
    disk_bytes: int
    received_bytes: int
    objects: int
    steps: tuple[tuple[str, float], ...] = ()
    outcome: str = ""  # how the series went, when it is news (3-way)


@dataclass(frozen=True)
class Limit:
    target: str
    received_bytes: int
    objects: int


@dataclass
class CloneBench:
    files: int
    dirs: int
    commits: int
    generate_seconds: float
    generate_cpu_seconds: float
    runs: list[ColdApply] = field(default_factory=list)
    limits: list[Limit] = field(default_factory=list)
    goal: float = GOAL

    def run(self, target: str, method: str) -> ColdApply:
        return next(r for r in self.runs if r.target == target and r.method == method)

    def ratio(self, target: str, method: str = NOW) -> float:
        return self.run(target, method).received_bytes / max(self.run(target, FULL).received_bytes, 1)

    @property
    def goal_met(self) -> bool:
        return all(self.ratio(t, r.method) <= self.goal for t in {r.target for r in self.runs}
                   for r in self.runs if r.target == t and r.method in (NOW, THREEWAY_BASE))

    def figures(self) -> list[Figure]:
        worst = max(self.ratio(r.target, r.method) for r in self.runs if r.method in (NOW, THREEWAY_BASE))
        return [Figure("cold apply's bytes / a full clone's (worst set)", f"{100 * worst:.2f} %",
                       f"at most {100 * self.goal:.1f} %", self.goal_met)]


def _du(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() or p.is_symlink())


def clone_bench(root: Path, workdir: Path, shape: generate.Shape = generate.Shape(),
                targets: tuple[str, ...] = TARGETS) -> CloneBench:
    """Generate the upstream under workdir, then cold-apply each target by each method."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    cpu0 = measure.own_cpu()
    with progress.step(f"generating an upstream of {shape.files:,} files and {shape.commits:,} commits"):
        gen = generate.generate(root, workdir / "upstream.git", shape)
    bench = CloneBench(gen.files, gen.dirs, gen.commits, gen.seconds, measure.own_cpu() - cpu0)
    url, up = gen.path.as_uri(), Repo(gen.path)

    # One full clone serves every target (it holds every ref); its time counts for each.
    full = workdir / "full"
    with progress.timings() as steps, progress.step("measuring: full clone"):
        t0 = time.perf_counter()
        clone(url, full)
        clone_seconds = time.perf_counter() - t0
    clone_steps = tuple(steps)
    for target in targets:
        ps = patchset.load(root, target)
        with progress.timings() as steps, progress.step(f"measuring: {target}, apply on the full clone"):
            t0 = time.perf_counter()
            apply_mod.apply(ps, src=full)
            seconds = clone_seconds + time.perf_counter() - t0
        stats = Repo(full).object_stats()
        bench.runs.append(ColdApply(target, FULL, seconds, _du(full), stats.pack_bytes, stats.objects,
                                    clone_steps + tuple(steps)))
        apply_mod.unapply(ps, src=full)
        for method, depth, filt in ((BEFORE, None, "blob:none"), (NOW, 1, "blob:none"), (TREE0, 1, "tree:0")):
            dest = workdir / f"{target}-{len(bench.runs)}"
            with progress.timings() as steps, progress.step(f"measuring: {target}, cold apply, {method}"):
                t0 = time.perf_counter()
                if method == NOW:  # exactly what make apply TRTLLM_URL=... does
                    apply_mod.apply(ps, src=dest, url=url)
                else:
                    partial_clone(url, dest, ps.upstream.ref, ps.sparse_paths, depth=depth, filter=filt)
                    apply_mod.apply(ps, src=dest)
                seconds = time.perf_counter() - t0
            stats = Repo(dest).object_stats()
            bench.runs.append(ColdApply(target, method, seconds, _du(dest), stats.pack_bytes, stats.objects, tuple(steps)))
        objects = up.commit_objects(ps.upstream.ref, ps.sparse_paths)
        bench.limits.append(Limit(target, up.packed_size(objects), len(objects)))
    if "main" in targets:
        _threeway_runs(bench, root, workdir, up, url)
    return bench


def sized(root: Path, workdir: Path, files: int | None = None, commits: int | None = None) -> CloneBench:
    """The cold start by clone method, on a generated upstream (clone_bench); files and commits
    override the generated upstream's real proportions (generate.Shape)."""
    shape = generate.Shape(**{k: v for k, v in (("files", files), ("commits", commits)) if v})
    if files:  # keep about ten files a directory
        shape = dataclasses.replace(shape, dirs=max(len(generate.ATTACH) + 1, files // 9))
    return clone_bench(root, workdir, shape)


def _threeway_runs(bench: CloneBench, root: Path, workdir: Path, up: Repo, url: str) -> None:
    """Upstream main moves under the fix's first hunk; a cold THREEWAY apply still merges."""
    ps = patchset.load(root, "main")
    moved = drift(up, ps, "main")
    if moved is None:
        return
    before, _after = moved
    with_base = dataclasses.replace(ps, upstream=dataclasses.replace(ps.upstream, base=before))
    for method, pset in ((THREEWAY_BASE, with_base), (THREEWAY_DEEPEN, ps)):
        dest = workdir / f"main-threeway-{len(bench.runs)}"
        with progress.timings() as steps, progress.step(f"measuring: main, cold apply, {method}"):
            t0 = time.perf_counter()
            res = apply_mod.apply(pset, src=dest, url=url, threeway=True)
            seconds = time.perf_counter() - t0
        stats = Repo(dest).object_stats()
        outcome = ", ".join(f"{o.patch.name[:4]} {o.status}" for o in res.outcomes)
        bench.runs.append(ColdApply("main", method, seconds, _du(dest), stats.pack_bytes, stats.objects,
                                    tuple(steps), outcome))


def drift(up: Repo, ps: PatchSet, ref: str) -> tuple[Sha, Sha] | None:
    """Upstream moves on under the set's first hunk that allows it: a commit on ref gives one
    of its context lines (one with an unchanged line between it and any change, so that a
    3-way merge resolves it) a trailing comment. (old tip, new tip), or None."""
    old = up.rev_parse(ref)
    for patch in ps.patches:
        for fc in patch.files:
            for h in fc.hunks:
                ops = difflib.SequenceMatcher(a=h.preimage, b=h.postimage, autojunk=False).get_opcodes()
                # A context line with an unchanged line between it and every change.
                idx = next((i1 if i1 == 0 else i1 + 1 for op, i1, i2, _, _ in ops
                            if op == "equal" and i2 - i1 >= (2 if i1 == 0 else 3)), None)
                text = up.show_file(old, fc.old_path) or b"" if fc.old_path else b""
                pre = "".join(h.preimage).encode()
                if idx is None or not pre or pre not in text:
                    continue
                lines = list(h.preimage)
                lines[idx] = lines[idx].rstrip("\n") + "  # upstream moved on\n"
                new = generate.commit_file(up, old, fc.old_path, text.replace(pre, "".join(lines).encode(), 1),
                                           "Upstream moves on under a hunk\n", DRIFTER)
                up.update_ref(f"refs/heads/{ref}", new, old)
                return old, new
    return None

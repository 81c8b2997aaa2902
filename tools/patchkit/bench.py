"""make bench: bytes and seconds to a patched checkout, partial clone versus full clone.

The upstream is generated: the miniature, plus thousands of files and a long history laid
on top with git fast-import, so the comparison has something to save.
"""
from __future__ import annotations

import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from . import apply as apply_mod, miniature, patchset
from .git import Repo, git


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
    tip = repo.out("rev-parse", "main")
    out = []
    for c in range(commits):
        changed = range(files) if c == 0 else rng.sample(range(files), 25)
        msg = f"bulk change {c}\n"
        out.append(f"commit refs/heads/main\ncommitter Bench <bench@example.invalid> {1790000000 + c} +0000\n"
                   f"data {len(msg)}\n{msg}" + (f"from {tip}\n" if c == 0 else ""))
        for i in changed:
            body = "".join(f"line {j} of module {i}, revision {c} {rng.random()}\n" for j in range(40))
            out.append(f"M 100644 inline cpp/module_{i // 100}/file_{i}.cc\ndata {len(body.encode())}\n{body}")
    repo.run("fast-import", "--quiet", input="".join(out))
    repo.run("checkout", "-q", "-f", "main")
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
    git("clone", "-q", "--no-local", url, str(workdir / "full"))
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
    from .delta import command
    up = workdir / "delta-upstream"
    workdir.mkdir(parents=True, exist_ok=True)
    if not up.exists():
        miniature.build(root, up)
    ps = patchset.load(root, target)
    best, cases = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = command.delta(ps, repo=Repo(up), mode="source", report=workdir / "delta.json")
        best = min(best, time.perf_counter() - t0)
        cases = res.unpatched["passed"] + res.unpatched["failed"]
    return DeltaBench(target, best, cases)


def render_delta_bench(b: DeltaBench) -> str:
    verdict = "under" if b.seconds < b.target_seconds else "OVER"
    return (f"source-mode delta {b.target} (both trees, {b.cases} cases each): {b.seconds:.2f} s "
            f"({verdict} the {b.target_seconds:.0f} s target)")


def render_bench(b: CloneBench) -> str:
    return "\n".join([
        f"upstream: {b.files} generated files over {b.commits} commits (plus the miniature)",
        f"partial clone + apply: {b.partial_seconds:7.2f} s  {b.partial_bytes / 1e6:9.2f} MB",
        f"full clone + apply:    {b.full_seconds:7.2f} s  {b.full_bytes / 1e6:9.2f} MB",
        f"ratio (full/partial):  {b.time_ratio:7.1f}x   {b.byte_ratio:8.1f}x",
    ])

"""make bench: the wall time of a full source-mode delta (both trees) on the miniature."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .. import miniature, patchset, progress
from ..delta import command as delta_cmd
from ..git import Repo


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
        cases = sum(f.unpatched["passed"] + f.unpatched["failed"] for f in res.fixes)
    return DeltaBench(target, best, cases, steps=tuple(best_steps))

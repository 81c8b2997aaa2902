"""make bench: the wall time of a full source-mode delta (both trees) on the miniature.

Called in this process (as make delta's own work, not its interpreter's start), a few times:
the figure is the median run's, with the fastest beside it."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from .. import miniature, patchset, progress
from ..delta import command as delta_cmd
from ..git import Repo
from .measure import Figure


@dataclass(frozen=True)
class DeltaBench:
    target: str
    seconds: float  # the median run's
    cases: int
    target_seconds: float = 1.0
    steps: tuple[tuple[str, float], ...] = ()  # the median run's
    fastest: float = 0.0
    runs: int = 1

    def figures(self) -> list[Figure]:
        return [Figure(f"full source-mode delta {self.target}", f"{self.seconds:.2f} s",
                       f"under {self.target_seconds:.0f} s", self.seconds < self.target_seconds)]


def delta_bench(root: Path, workdir: Path, target: str = "rc25", repeat: int = 3) -> DeltaBench:
    """Wall time of a full source-mode delta (both trees) on the miniature; the median of `repeat`."""
    up = workdir / "delta-upstream"
    workdir.mkdir(parents=True, exist_ok=True)
    if not up.exists():
        miniature.build(root, up)
    ps = patchset.load(root, target)
    runs, cases = [], 0
    for i in range(repeat):
        with progress.timings() as steps, progress.step(f"measuring: source-mode delta {target} ({i + 1}/{repeat})"):
            t0 = time.perf_counter()
            res = delta_cmd.delta(ps, repo=Repo(up), mode="source", report=workdir / "delta.json")
            seconds = time.perf_counter() - t0
        runs.append((seconds, [s for s in steps if not s[0].startswith("measuring")]))
        cases = sum(f.unpatched["passed"] + f.unpatched["failed"] for f in res.fixes)
    median = statistics.median_low(s for s, _ in runs)
    steps = next(st for s, st in runs if s == median)
    return DeltaBench(target, median, cases, steps=tuple(steps), fastest=min(s for s, _ in runs), runs=repeat)

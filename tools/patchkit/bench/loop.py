"""make bench, the developer's loop (#34 item 2): `make test` in the project, wall and CPU seconds.

The test setup (make test's prerequisite, TEST_SETUP: the test extra, the warm lint cache) is
made first and not timed, as a developer's second run finds it; then `make test` runs once,
as typed, from the project root. Wall seconds from outside; CPU seconds of every process it
started, by perf's task-clock where perf is here (rusage missed the fenced tests: 26 of 98
CPU-s of make test, #34 item 2), else this process's rusage of its children (make, pytest,
its workers and what they waited for); the line says which. One run: it takes a minute. The
load is said before and after, since on a shared machine the wall time says little alone.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .. import progress
from . import measure
from .measure import Figure

GOAL_WALL, GOAL_CPU = 60.0, 60.0
# make test's prerequisite, made by the project's own Makefile (its TEST_SETUP, whatever that names).
SETUP = ["make", "-s", "--eval", "bench-test-setup: $(TEST_SETUP)", "bench-test-setup"]


@dataclass(frozen=True)
class LoopBench:
    command: str
    wall: float
    cpu: float
    exit: int
    said: str  # pytest's last line: what passed, failed, skipped
    setup_wall: float  # making the setup first, not in wall
    load_before: float
    load_after: float
    cores: int
    counted_by: str = measure.BY_RUSAGE
    goal_wall: float = GOAL_WALL
    goal_cpu: float = GOAL_CPU

    def figures(self) -> list[Figure]:
        failed = "" if self.exit == 0 else f" (exit {self.exit})"
        return [Figure("make test, wall", f"{self.wall:.1f} s{failed}", f"under {self.goal_wall:.0f} s on 2 cores",
                       self.wall < self.goal_wall and self.exit == 0),
                Figure("make test, CPU", f"{self.cpu:.1f} s{failed}", f"about {self.goal_cpu:.0f} s (at most)",
                       self.cpu <= self.goal_cpu and self.exit == 0)]


def loop_bench(root: Path, workdir: Path, target: str = "test") -> LoopBench | str:
    """make <target> (make test) in root, once, after its setup: wall and CPU seconds."""
    if not (root / "Makefile").is_file():
        return f"make {target}: skipped (no Makefile in {root})"
    env = measure.own_make_env(root)
    with progress.step("making the test setup first (not timed)"):
        setup = measure.timed(SETUP, cwd=root, env=env)
    if not setup.ok:
        return f"make {target}: could not measure: its setup failed ({setup.why()})"
    argv = ["make", target]
    before = measure.load()
    with progress.step(f"measuring: make {target}, once"):
        run, counted_by = measure.timed_all(argv, cwd=root, env=env)
    lines = [line for line in run.result.stdout.splitlines() if re.search(r"\b(passed|failed|error|no tests ran)\b", line)]
    said = re.sub(r"^=+ | =+$", "", lines[-1].strip()) if lines else run.why()
    failed = [line.split(" - ")[0] for line in run.result.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    if failed:  # which, so that a developer can run them alone
        said += "; " + ", ".join(failed[:3]) + (f" and {len(failed) - 3} more" if failed[3:] else "")
    return LoopBench(" ".join(argv), run.wall, run.cpu, run.result.returncode, said, setup.wall, before, measure.load(),
                     os.cpu_count() or 1, counted_by)


def render(b: LoopBench) -> str:
    wall, cpu = b.figures()
    return (f"{b.command}: {b.wall:.1f} s wall, {b.cpu:.1f} s CPU by {b.counted_by} ({b.said}); goal {wall.goal} wall: "
            f"{wall.verdict}; {cpu.goal} CPU: {cpu.verdict}; "
            f"load {b.load_before:.1f} before, {b.load_after:.1f} after, on {b.cores} cores "
            f"(its setup made first in {b.setup_wall:.1f} s, not timed)")

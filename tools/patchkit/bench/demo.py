"""make bench: make demo as a newcomer first runs it, the whole command, on a fresh clone.

cold: a fresh clone of this project (its committed state) and `make demo` in it, setup included:
the virtual environment, patchkit and its dependencies, the hook tools' wheels, then the demo
with make lint's hook environments built from nothing (the clone's own .venv/lint-cache; an
outer PATCHKIT_LINT_CACHE is not passed on). warm: `make demo` again in the same clone. Goals
(#34 item 6): cold at most 20 s, warm at most 8 s; at most 60 lines, none wider than 160
characters. The download cache (pip's, uv's) is the machine's, as
a newcomer's second project would find it; on a shared machine the wall time says little alone,
so the CPU seconds and the load are reported beside it.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import progress
from ..git import clone
from . import measure
from .measure import Figure

TARGET_COLD_SECONDS = 20.0
TARGET_WARM_SECONDS = 8.0
MAX_LINES, MAX_WIDTH = 60, 160


@dataclass(frozen=True)
class DemoBench:
    cold: float
    cold_cpu: float
    warm: float
    warm_cpu: float
    lines: int  # what make demo printed (stdout), warm
    load: float  # the load average over the last minute, when it ended
    widest: int = 0  # its widest line
    target_cold: float = TARGET_COLD_SECONDS
    target_warm: float = TARGET_WARM_SECONDS

    def figures(self) -> list[Figure]:
        return [Figure("make demo, fresh clone, setup included", f"{self.cold:.1f} s",
                       f"at most {self.target_cold:.0f} s", self.cold <= self.target_cold),
                Figure("make demo, warm", f"{self.warm:.1f} s", f"at most {self.target_warm:.0f} s",
                       self.warm <= self.target_warm),
                Figure("make demo's output", f"{self.lines} lines, widest {self.widest}",
                       f"at most {MAX_LINES} lines, none over {MAX_WIDTH}",
                       self.lines <= MAX_LINES and self.widest <= MAX_WIDTH)]


def demo_bench(root: Path, workdir: Path) -> DemoBench | str:
    """make demo on a fresh clone of the project, cold then warm: wall and CPU seconds."""
    if not (root / ".git").exists():
        return "make demo: skipped (the project is not a git repository to clone fresh)"
    if shutil.which("make") is None:
        return "make demo: skipped (no make here)"
    project = workdir / "demo-fresh-clone"
    shutil.rmtree(project, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    # The demo's own make: none of the outer run's make variables or lint cache reach it.
    env = measure.own_make_env(root)
    argv = ["make", "-s", "-C", str(project), "demo"]
    try:
        with progress.step("measuring: make demo on a fresh clone (setup included), then warm"):
            clone(str(root), project).close()
            first = measure.timed(argv, env=env)
            if not first.ok:
                return f"make demo: could not measure: on a fresh clone, {first.why()}"
            second = measure.timed(argv, env=env)
            if not second.ok:
                return f"make demo: could not measure: warm, {second.why()}"
    finally:
        shutil.rmtree(project, ignore_errors=True)
    said = second.result.stdout.splitlines()
    return DemoBench(first.wall, first.cpu, second.wall, second.cpu, len(said), measure.load(),
                     max(map(len, said), default=0))


def render(b: DemoBench) -> str:
    cold, warm, out = (f.verdict for f in b.figures())
    return (f"make demo, the whole command: fresh clone {b.cold:.1f} s, setup included ({b.cold_cpu:.1f} s of CPU; "
            f"goal at most {b.target_cold:.0f} s: {cold}); warm {b.warm:.1f} s ({b.warm_cpu:.1f} s of CPU; "
            f"goal at most {b.target_warm:.0f} s: {warm}); {b.lines} lines of output, the widest {b.widest} "
            f"(goal at most {MAX_LINES}, none over {MAX_WIDTH}: {out}); load {b.load:.1f} on {os.cpu_count()} cores\n"
            f"  ours: make -s demo, on a fresh clone of the project (git clone; make's setup included), then again")

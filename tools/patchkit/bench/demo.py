"""make bench: make demo as a newcomer first runs it, the whole command, on a fresh clone.

cold: a fresh clone of this project (its committed state) and `make demo` in it, setup included:
the virtual environment, patchkit and its dependencies, the hook tools' wheels, then the demo
with make lint's hook environments built from nothing (the clone's own .venv/lint-cache; an
outer PATCHKIT_LINT_CACHE is not passed on). warm: `make demo` again in the same clone. Targets
(#27 item 5): cold at most 25 s, warm under 10 s. pip's own download cache is the machine's, as
a newcomer's second project would find it; on a shared machine the wall time says little alone,
so the CPU seconds and the load are reported beside it.
"""
from __future__ import annotations

import os
import resource
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .. import proc, progress
from ..git import clone

TARGET_COLD_SECONDS = 25.0
TARGET_WARM_SECONDS = 10.0


@dataclass(frozen=True)
class DemoBench:
    cold: float
    cold_cpu: float
    warm: float
    warm_cpu: float
    lines: int  # what make demo printed (stdout)
    load: float  # the load average over the last minute, when it ended
    target_cold: float = TARGET_COLD_SECONDS
    target_warm: float = TARGET_WARM_SECONDS


def _cpu() -> float:
    """CPU seconds of the children that have ended (make, pip, patchkit, pre-commit, git)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _make_demo(project: Path, env: dict[str, str]) -> tuple[float, float, proc.Result]:
    t0, cpu0 = time.perf_counter(), _cpu()
    res = proc.run(["make", "-s", "-C", str(project), "demo"], env=env, check=False)
    return time.perf_counter() - t0, _cpu() - cpu0, res


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
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MAKE", "PATCHKIT_", "VIRTUAL_ENV")) and k not in ("MFLAGS", "BUILD", "TRTLLM")}
    try:
        with progress.step("measuring: make demo on a fresh clone (setup included), then warm"):
            clone(str(root), project).close()
            cold, cold_cpu, first = _make_demo(project, env)
            if first.returncode != 0:
                return f"make demo: could not measure: exit {first.returncode} on a fresh clone " \
                       f"({(first.stderr.strip().splitlines() or ['no output'])[-1][:200]})"
            warm, warm_cpu, second = _make_demo(project, env)
            if second.returncode != 0:
                return f"make demo: could not measure: exit {second.returncode} warm"
    finally:
        shutil.rmtree(project, ignore_errors=True)
    return DemoBench(cold, cold_cpu, warm, warm_cpu, len(second.stdout.splitlines()), os.getloadavg()[0])


def render(b: DemoBench) -> str:
    cold = "met" if b.cold <= b.target_cold else "NOT met"
    warm = "met" if b.warm < b.target_warm else "NOT met"
    return (f"make demo, the whole command: fresh clone {b.cold:.1f} s, setup included ({b.cold_cpu:.1f} s of CPU; "
            f"target at most {b.target_cold:.0f} s: {cold}); warm {b.warm:.1f} s ({b.warm_cpu:.1f} s of CPU; "
            f"target under {b.target_warm:.0f} s: {warm}); {b.lines} lines of output; "
            f"load {b.load:.1f} on {os.cpu_count()} cores")

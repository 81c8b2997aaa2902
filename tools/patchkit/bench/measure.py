"""How make bench measures (#34): a command's wall and CPU seconds, paired ratios, and goals.

- A command runs as a user runs it (a new process, make or git) and is timed from outside:
  its wall seconds, and its CPU seconds from this process's rusage of its children, which
  holds every descendant the command waited for (pytest's workers, the git it ran), not a
  timer inside it.
- A ratio is paired: runs of A and of B alternate (A B A B ...), after one untimed run of
  each (caches, bytecode), so that a load that comes and goes on a shared machine falls on
  both; the figure is the median of the per-pair ratios, with both commands printed beside it.
- A figure with a goal says both, and whether the goal is met (Figure): each section's
  result lists its figures, and make bench ends with all of them in one table.
"""
from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import proc, scratch

RUNS = 7  # pairs (or runs) of a cheap command; a section whose runs cost seconds may take fewer


@dataclass(frozen=True)
class Figure:
    """One measured figure beside its goal."""

    what: str
    measured: str
    goal: str
    met: bool

    @property
    def verdict(self) -> str:
        return "met" if self.met else "NOT met"


@dataclass(frozen=True)
class Timed:
    """One run of a command: wall and CPU seconds, and how it ended."""

    wall: float
    cpu: float
    result: proc.Result | None = None  # None: a call in this process, which raises when it fails

    @property
    def ok(self) -> bool:
        return self.result is None or self.result.returncode == 0

    def why(self) -> str:
        """How a failed run ended, in one line: its exit code and the last line it said."""
        if self.result is None:
            return "ok"
        said = (self.result.stderr.strip() or self.result.stdout.strip()).splitlines() or ["no output"]
        return f"exit {self.result.returncode}: {said[-1][:200]}"


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's children that have ended, and theirs."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv: Sequence[str | os.PathLike], *, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Timed:
    """Run argv once (never raising on its exit code): its wall and CPU seconds."""
    t0, cpu0 = time.perf_counter(), children_cpu()
    res = proc.run(argv, cwd=cwd, env=env, check=False)
    return Timed(time.perf_counter() - t0, children_cpu() - cpu0, res)


# How a figure's CPU seconds were counted (timed_all()).
BY_TASK_CLOCK = "perf's task-clock"
BY_RUSAGE = "rusage: what ran in the fence's namespaces is not counted"


def timed_all(argv: Sequence[str | os.PathLike], *, cwd: Path | None = None,
              env: Mapping[str, str] | None = None) -> tuple[Timed, str]:
    """Run argv once: its wall and CPU seconds, and how the CPU seconds were counted. rusage
    (timed()) misses every process of a new PID namespace (bubblewrap's fence: the delta's
    and a PR's tests, a fenced build): no ancestor outside it waits for them. So where perf is
    on PATH, argv runs under `perf stat -e task-clock` (its figure written to a scratch folder,
    not into build/, which make test's hygiene check watches), which counts each process it
    started as it runs; where perf may not count (perf_event_paranoid), the same run's
    rusage, said so."""
    if shutil.which("perf") is None:
        return timed(argv, cwd=cwd, env=env), BY_RUSAGE
    with scratch.folder("bench") as tmp:
        out = tmp / "task-clock.csv"
        t0, cpu0 = time.perf_counter(), children_cpu()
        res = proc.run(["perf", "stat", "-x,", "-e", "task-clock", "-o", str(out), "--", *map(str, argv)],
                       cwd=cwd, env=env, check=False)
        wall, rusage = time.perf_counter() - t0, children_cpu() - cpu0
        try:
            m = re.search(r"^([0-9.]+),msec,task-clock,", out.read_text(), re.M)
        except OSError:
            m = None
    if m is None:  # "<not counted>", "<not supported>", or perf itself refused
        return Timed(wall, rusage, res), BY_RUSAGE
    return Timed(wall, float(m.group(1)) / 1000, res), BY_TASK_CLOCK


def sequence(steps: Sequence[tuple[Sequence[str | os.PathLike], Mapping[str, str] | None]], *,
             cwd: Path | None = None) -> Timed:
    """Commands, each with its environment, one after the other as `a && b && c` runs them
    (stopping at the first that fails), timed as one."""
    t0, cpu0 = time.perf_counter(), children_cpu()
    res = None
    for argv, env in steps:
        res = proc.run(argv, cwd=cwd, env=env, check=False)
        if res.returncode != 0:
            break
    assert res is not None, "no command to run"
    return Timed(time.perf_counter() - t0, children_cpu() - cpu0, res)


def called(call: Callable[[], object]) -> Timed:
    """A call in this process, timed: wall seconds, and CPU seconds of this process and of the
    children it waited for (git)."""
    t0, cpu0 = time.perf_counter(), own_cpu()
    call()
    return Timed(time.perf_counter() - t0, own_cpu() - cpu0)


def own_cpu() -> float:
    """CPU seconds of this process and of its children that have ended (git, pytest)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Failed(Exception):
    """A run the bench could not measure (the command failed): the section says so instead."""


Run = Callable[[], Timed]


@dataclass(frozen=True)
class Paired:
    """Alternating runs of ours (A) and of a baseline (B): the median of the per-pair ratios."""

    ours: str  # the commands, as printed
    baseline: str
    a: tuple[float, ...]  # wall seconds, run by run
    b: tuple[float, ...]

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(x / max(y, 1e-9) for x, y in zip(self.a, self.b))

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def a_median(self) -> float:
        return statistics.median(self.a)

    @property
    def b_median(self) -> float:
        return statistics.median(self.b)

    def text(self) -> str:
        """'1.23x (0.41 s vs 0.33 s, medians of 7 pairs; per pair 1.1x-1.4x)'."""
        return (f"{self.ratio:.2f}x ({self.a_median:.3f} s vs {self.b_median:.3f} s, median of {len(self.a)} "
                f"alternating pairs; per pair {min(self.ratios):.2f}x-{max(self.ratios):.2f}x)")


def paired(ours: str, a: Run, baseline: str, b: Run, runs: int = RUNS, warmup: bool = True) -> Paired:
    """runs pairs, A then B each time, after one untimed run of each (warmup). A run that
    fails raises Failed, naming which command and how it ended."""
    def once(run: Run, what: str) -> float:
        t = run()
        if not t.ok:
            raise Failed(f"{what}: {t.why()}")
        return t.wall
    if warmup:
        once(a, ours)
        once(b, baseline)
    xs, ys = [], []
    for _ in range(runs):
        xs.append(once(a, ours))
        ys.append(once(b, baseline))
    return Paired(ours, baseline, tuple(xs), tuple(ys))


@dataclass(frozen=True)
class Repeated:
    """runs runs of one command: the median wall seconds, with the fastest and slowest."""

    command: str
    walls: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.walls)

    def text(self) -> str:
        return f"{self.median:.3f} s (median of {len(self.walls)}; {min(self.walls):.3f}-{max(self.walls):.3f} s)"


def repeated(command: str, run: Run, runs: int = RUNS, warmup: bool = True) -> Repeated:
    if warmup:
        run()
    walls = []
    for _ in range(runs):
        t = run()
        if not t.ok:
            raise Failed(f"{command}: {t.why()}")
        walls.append(t.wall)
    return Repeated(command, tuple(walls))


def own_make_env(root: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a make the bench starts as a user would: none of the outer make's
    variables (make bench runs under make, which exports every variable root's Makefile
    exports, TRTLLM_SRC among them), patchkit's settings or an active venv reach it."""
    makefile = root / "Makefile"
    text = makefile.read_text() if makefile.is_file() else ""
    exported = {name for line in re.findall(r"^export[ \t]+([A-Z0-9_ \t]+)$", text, re.M) for name in line.split()}
    env = {k: v for k, v in os.environ.items() if k not in exported and k not in ("MFLAGS", "BUILD")
           and not k.startswith(("MAKE", "PATCHKIT_", "VIRTUAL_ENV"))}
    return {**env, **(extra or {})}


def load() -> float:
    """The load average over the last minute."""
    return os.getloadavg()[0]

"""The waiver step on a large waives.txt, timed (issue #11 item 13: it was quadratic).

The upstream is the miniature at its rc25 tag plus one commit (git fast-import) that grows
waives.txt to `lines` lines of every form upstream uses, adds `files` test files and a test-db
stage listing their directories. Timed: the whole `make waivers` command (a new
interpreter running `patchkit waivers`, which the 2 s target is for), and inside it the step
apply does for the waiver commit: read waives.txt and the test-db from the ref, list the test
files, parse, match, narrow, prove.
"""
from __future__ import annotations

import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import miniature, patchset, progress
from ..git import Repo
from ..model import TEST_DB, WAIVES_FILE
from ..waives.edit import compute, read_waives
from . import measure

TAG = "v1.3.0rc25"


@dataclass(frozen=True)
class WaiverBench:
    lines: int
    test_files: int
    seconds: float  # the waiver step alone: best of the runs, wall clock
    cpu_seconds: float  # that run's process CPU time (the machine may be shared)
    removed: int
    added: int
    command_seconds: float = 0.0  # the whole `make waivers` command (patchkit waivers): best wall clock
    command_cpu_seconds: float = 0.0  # that run's CPU time (user + system)
    target_seconds: float = 2.0  # for the whole command: what a user waits for (#17 item 16)

    def figures(self) -> list[measure.Figure]:
        return [measure.Figure(f"make waivers, {self.lines:,}-line waives.txt", f"{self.command_seconds:.2f} s",
                               f"under {self.target_seconds:.0f} s", self.command_seconds < self.target_seconds)]


def _waiver_lines(n: int, files: int, rng: random.Random) -> list[str]:
    """n waiver lines of upstream's forms, over the generated test files and other suites."""
    bug = lambda: f"https://nvbugs/{rng.randrange(5_000_000, 7_000_000)}"  # noqa: E731
    forms = [
        lambda i, f, d: f"unittest/gen/d{d}/test_{f}.py::test_case[p{i}] SKIP ({bug()})",
        lambda i, f, d: f"accuracy/test_llm_api_pytorch.py::TestModel{i}::test_auto_dtype[tp{i % 8}] SKIP",
        lambda i, f, d: f"perf/test_perf.py::test_perf[m{i}-bench-float16-input_output_len:128,20] SKIP # ({bug()})",
        lambda i, f, d: f'full:sm100/unittest/gen/d{d}/test_{f}.py -k "part{i % 4}" SKIP (Disable for Blackwell)',
        lambda i, f, d: f"full:A10/unittest/gen/d{d}/test_{f}.py::test_case XFAIL ({bug()})",
        lambda i, f, d: f"examples/test_example_{i}.py::test_run[{i}] TIMEOUT ({30 + i % 90})",
        lambda i, f, d: f"full:H100/accuracy/test_disagg.py::TestD{i}::test_auto_dtype[False] UNSTABLE ({bug()})",
        lambda i, f, d: f"full:sm100/unittest/gen/d{d}/test_{f}.py unittest/gen/d{(d + 1) % 100}/test_{f}.py SKIP ({bug()})",
    ]
    out = set()
    i = 0
    while len(out) < n:
        f = rng.randrange(files)
        out.add(forms[i % len(forms)](i, f, f // 100))
        i += 1
    return sorted(out)


def large_waives_upstream(root: Path, dest: Path, lines: int, files: int, seed: int = 11) -> Repo:
    """The miniature with a commit on top of its rc25 tag (re-tagged) carrying the large lists."""
    miniature.build(root, dest)
    repo = Repo.open(dest)
    rng = random.Random(seed)
    base = read_waives(repo, TAG, WAIVES_FILE) or ""
    generated = _waiver_lines(max(lines - len(base.splitlines()), 0), files, rng)
    waives = "\n".join(sorted(base.splitlines() + generated, key=lambda s: (not s.startswith("#"), s))) + "\n"
    db = "version: 0.0.1\nl0_gen:\n- condition:\n    terms:\n      stage: pre_merge\n  tests:\n" + "".join(
        f"  - unittest/gen/d{d}\n" for d in range((files + 99) // 100))
    tip = repo.rev_parse(TAG)
    msg = "Bench: a large waives.txt\n"
    out = [f"commit refs/heads/bench\ncommitter Bench <bench@example.invalid> 1790000000 +0000\n"
           f"data {len(msg)}\n{msg}from {tip}\n"]
    for path, body in [(WAIVES_FILE, waives), (f"{TEST_DB}/l0_gen.yml", db)]:
        out.append(f"M 100644 inline {path}\ndata {len(body.encode())}\n{body}")
    for f in range(files):
        body = f"def test_case():\n    assert {f} == {f}\n"
        out.append(f"M 100644 inline tests/unittest/gen/d{f // 100}/test_{f}.py\ndata {len(body)}\n{body}")
    out.append(f"reset refs/tags/{TAG}\nfrom refs/heads/bench\n")
    repo.fast_import("".join(out))
    return repo


def waiver_bench(root: Path, workdir: Path, lines: int = 100_000, files: int = 5_000, repeat: int = 3) -> WaiverBench:
    """Best-of-`repeat` time of the rc25 set's waiver computation on a `lines`-line waives.txt."""
    dest = workdir / "waiver-upstream"
    if dest.exists():
        shutil.rmtree(dest)
    workdir.mkdir(parents=True, exist_ok=True)
    repo = large_waives_upstream(root, dest, lines, files)
    intent = patchset.load(root, "rc25").waivers
    best = None
    for i in range(repeat):
        with progress.step(f"measuring: the waiver step on a {lines:,}-line waives.txt ({i + 1}/{repeat})"):
            c0, t0 = time.process_time(), time.perf_counter()
            n = compute(repo, TAG, intent)
            run = (time.perf_counter() - t0, time.process_time() - c0, n)
        best = run if best is None or run[0] < best[0] else best
    seconds, cpu, n = best
    total = len((read_waives(repo, TAG, intent.waives_file) or "").splitlines())
    wall, cpu_all = _whole_command(root, dest, lines, repeat)
    return WaiverBench(total, files, seconds, cpu, len(n.removed), len(n.added), wall, cpu_all)


def _whole_command(root: Path, dest: Path, lines: int, repeat: int) -> tuple[float, float]:
    """Best-of-`repeat` wall and CPU time of `patchkit waivers` on dest, as `make waivers` runs it:
    a new interpreter, its imports, reading the set, the report before and after, the output.
    The inner step above was 2 s while the command took 3.5 s (issue #17 item 16)."""
    argv = [sys.executable, "-m", "patchkit", "--root", str(root), "waivers", "--target", "rc25", "--src", str(dest)]
    best: tuple[float, float] | None = None
    for i in range(repeat):
        with progress.step(f"measuring: make waivers on a {lines:,}-line waives.txt ({i + 1}/{repeat})"):
            run = measure.timed(argv)
        if not run.ok:
            raise measure.Failed(f"make waivers: {run.why()}")
        best = (run.wall, run.cpu) if best is None or run.wall < best[0] else best
    assert best is not None
    return best

"""Waiver processing grows linearly with waives.txt (issue #11 item 13).

Regression: apply took 0.9 s with 4k extra waives.txt lines, 9.9 s with 16k and 58 s with
32k. Counting the Python lines executed (not seconds: the machine is shared) for an input and
for one twice its size tells linear from quadratic work: the ratio is about 2, not about 4.
The timed figure is `make bench` (patchkit.bench.waivers).
"""
from __future__ import annotations

import sys

import pytest

from patchkit.waives.match import Matcher
from patchkit.waives.narrow import narrow
from patchkit.waives.parse import parse_test_db, parse_waives, split_name

BLANKET = "unittest/_torch/executor SKIP (https://nvbugs/6800103)"
NEW = "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"
STAGES = parse_test_db("l0_cpu:\n- tests:\n  - unittest/_torch/executor TIMEOUT (90)\n  - unittest/gen\n", "l0_cpu.yml")


def inputs(n: int):
    """n waiver lines of several forms, and n/10 test files under the blanket directory to expand."""
    lines = [BLANKET]
    for i in range(n - 1):
        lines.append([f"unittest/gen/test_{i}.py::test_c[{i}] SKIP (https://nvbugs/{i})",
                      f"perf/test_perf.py::test_perf[m{i}] SKIP # note",
                      f'full:sm100/unittest/gen/test_{i}.py -k "p{i}" SKIP (why)',
                      f"accuracy/test_a.py::T{i}::t TIMEOUT ({i % 90 + 1})"][i % 4])
    files = [NEW] + [f"tests/unittest/_torch/executor/test_f{i}.py" for i in range(n // 10)] + [
        f"tests/unittest/gen/test_{i}.py" for i in range(n)]
    return "\n".join(sorted(lines)) + "\n", files


def line_events(fn) -> int:
    """The Python lines fn executes, cold: split_name remembers names across calls."""
    split_name.cache_clear()
    count = 0

    def local(frame, event, arg):
        nonlocal count
        count += event == "line"
        return local

    sys.settrace(lambda frame, event, arg: local)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def growth(step) -> float:
    small, large = inputs(1000), inputs(2000)
    return line_events(lambda: step(*large)) / line_events(lambda: step(*small))


def test_narrowing_is_linear_in_the_file_and_the_lines_it_adds():
    def step(text, files):
        n = narrow(text, STAGES, files, [NEW])
        assert n.changed and len(n.added) == len(files) - 1 - sum(f.startswith("tests/unittest/gen/") for f in files)
    assert growth(step) < 2.4


def test_parsing_and_matching_are_linear():
    def step(text, files):
        m = Matcher(parse_waives(text), STAGES)
        for f in files:
            m.hits(f[len("tests/"):])
    assert growth(step) < 2.4


@pytest.mark.slow  # a bench's own test: make test-slow (.ci/run)
def test_the_waiver_bench_runs_the_real_step_on_a_grown_upstream(tmp_path):
    """make bench's waiver figure comes from the apply code path on a file of the size asked for."""
    from patchkit.bench.report import waiver_bench as render_waiver_bench
    from patchkit.bench.waivers import waiver_bench
    from helpers import ROOT
    b = waiver_bench(ROOT, tmp_path, lines=3000, files=150, repeat=1)
    mini = ROOT / "tests/fixtures/miniature/base/tests/unittest/_torch/executor"
    others = [p for p in mini.rglob("test_*.py") if p.name != "test_cross_kv_cache_layout.py"]
    assert (b.lines, b.test_files, b.removed, b.added) == (3000, 150, 1, len(others))
    assert render_waiver_bench(b).startswith("make waivers on a 3,000-line waives.txt and 150 test files: ")
    # #17.16: the whole command is measured, and it contains the step (it was only the step)
    assert b.command_seconds > b.seconds > 0 and b.command_cpu_seconds > 0

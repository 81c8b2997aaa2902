"""make bench's harness (#34): how it times a command, pairs a ratio, sets each figure beside
its goal, runs one section alone, and that its baselines do the work ours does. On tiny
inputs (a Makefile of a few lines, the miniature, one pair), never the real sections' sizes."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT
from patchkit import bench, patchset, proc
from patchkit.bench import demo, loop, measure, raw, report
from patchkit.errors import BadInput

pytestmark = pytest.mark.slow  # a bench's own tests: make test-slow (.ci/run)


def _ran(wall: float, code: int = 0) -> measure.Timed:
    return measure.Timed(wall, 0.0, proc.Result(("x",), code, "", "" if code == 0 else "it broke\n"))


def test_a_ratio_alternates_its_runs_after_one_untimed_run_of_each_and_is_the_median_of_the_pairs():
    """A B A B: the load of a shared machine falls on both. The median of per-pair ratios, not
    the ratio of the medians (here 2.0 and 1.5)."""
    order, a, b = [], iter([9.0, 1.0, 2.0, 4.0]), iter([9.0, 1.0, 1.0, 1.0])
    p = measure.paired("ours", lambda: order.append("A") or _ran(next(a)),
                       "raw", lambda: order.append("B") or _ran(next(b)), runs=3)
    assert order == ["A", "B", "A", "B", "A", "B", "A", "B"]
    assert (p.a, p.b) == ((1.0, 2.0, 4.0), (1.0, 1.0, 1.0))  # the warm-up pair is not counted
    assert p.ratios == (1.0, 2.0, 4.0) and p.ratio == 2.0 and p.a_median / p.b_median == 2.0
    assert p.text().startswith("2.00x (2.000 s vs 1.000 s, median of 3 alternating pairs; per pair 1.00x-4.00x)")
    odd = measure.paired("ours", lambda: _ran(3.0), "raw", iter([_ran(1.0), _ran(1.0), _ran(2.0)]).__next__,
                         runs=2)
    assert odd.ratios == (3.0, 1.5) and odd.ratio == 2.25 != odd.a_median / odd.b_median


def test_a_command_that_fails_is_said_with_its_last_line_and_measures_nothing(tmp_path, monkeypatch):
    with pytest.raises(measure.Failed, match=r"^raw: exit 2: it broke$"):
        measure.paired("ours", lambda: _ran(1.0), "raw", lambda: _ran(1.0, code=2))

    def fails(root, work, opt):
        raise measure.Failed("make check: exit 3: conflict")
    monkeypatch.setattr(bench, "SECTIONS", {"check": fails, "startup": lambda root, work, opt: "measured"})
    assert bench.run(ROOT, tmp_path / "bench") == ["check: could not measure: make check: exit 3: conflict", "measured"]


def test_one_section_runs_alone_by_name_and_a_name_that_is_none_is_refused(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(bench, "SECTIONS", {n: (lambda root, work, opt, n=n: ran.append(n) or n) for n in "abc"})
    assert bench.run(ROOT, tmp_path, bench.Options(only=("c, a",))) == ["a", "c"]  # make bench's order
    assert bench.run(ROOT, tmp_path, bench.Options(only=("b",))) == ["b"] and ran == ["a", "c", "b"]
    for bad, said in (("d", "no bench section 'd'; the sections: a, b, c"), (" ", "an empty section name")):
        with pytest.raises(BadInput, match=said):
            bench.run(ROOT, tmp_path, bench.Options(only=(bad,)))
    assert ran == ["a", "c", "b"]


BURN = """import sys, time
t = time.process_time()
while time.process_time() - t < 0.3:
    pass
open(sys.argv[1], "w").write(str(time.process_time()))
"""


def _project(tmp_path: Path, test_recipe: str) -> Path:
    """A project of a few lines: its test setup, and a test target whose CPU is a grandchild's."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "burn.py").write_text(BURN)
    (root / "Makefile").write_text(
        "TEST_SETUP ?= .setup-made\n"
        "export TRTLLM_SRC\n"
        ".setup-made: ; touch $@\n"
        f"test: $(TEST_SETUP) ; {test_recipe}\n")
    return root


def test_make_tests_cpu_is_its_childrens_and_their_childrens_from_rusage(tmp_path, monkeypatch):
    """make test's CPU seconds count pytest's workers and what they ran: a grandchild of make
    burns CPU and says how much; the bench counts at least that. Its setup is made first, and
    the outer make's variables (make bench runs under make) do not reach it."""
    monkeypatch.setenv("TRTLLM_SRC", "from-the-outer-make")
    monkeypatch.setenv("MAKEFLAGS", "-j9")
    spawn = "import subprocess, sys; subprocess.run([sys.executable, 'burn.py', 'cpu.txt'], check=True)"
    root = _project(tmp_path, f"{sys.executable} -c \"{spawn}\" && echo \"$${{TRTLLM_SRC:-unset}} $${{MAKEFLAGS:-}}\" "
                              ">env.txt && echo '3 passed, 1 skipped in 0.31s'")
    b = loop.loop_bench(root, tmp_path / "work")
    assert isinstance(b, loop.LoopBench) and (root / ".setup-made").exists()
    assert b.cpu >= float((root / "cpu.txt").read_text()) >= 0.3 and b.wall >= 0.3
    assert (b.exit, b.said, b.command) == (0, "3 passed, 1 skipped in 0.31s", "make test")
    assert (root / "env.txt").read_text().split() == ["unset"]
    subprocess.run(["make", "-s", "-C", str(root), "test"], capture_output=True, check=True)
    assert (root / "env.txt").read_text().split()[0] == "from-the-outer-make"  # what the bench kept out
    assert [f.met for f in b.figures()] == [b.wall < 60, b.cpu <= 60]
    assert loop.render(b).startswith("make test: ") and "not timed" in loop.render(b)


@pytest.mark.skipif(not (shutil.which("perf") and shutil.which("bwrap")), reason="needs perf and bubblewrap")
def test_make_tests_cpu_counts_what_runs_in_the_fences_namespace(tmp_path):
    """#34 item 2: the delta's and a PR's tests run in bubblewrap's fence, a PID namespace of
    its own whose processes no ancestor outside it waits for: rusage counted none of their CPU
    (make test: 72 CPU-s by rusage, 98 by perf's task-clock). A grandchild burning in such a
    namespace is counted now, and the line says how."""
    root = _project(tmp_path, f"bwrap --dev-bind / / --unshare-pid {sys.executable} burn.py cpu.txt")
    b = loop.loop_bench(root, tmp_path / "work")
    assert b.exit == 0, b.said
    if b.counted_by != measure.BY_TASK_CLOCK:
        pytest.skip(f"perf cannot count here: {b.counted_by}")
    assert b.cpu >= float((root / "cpu.txt").read_text()) >= 0.3
    assert f"s CPU by {measure.BY_TASK_CLOCK} (" in loop.render(b)


def test_a_failing_make_test_is_timed_and_said_and_meets_no_goal(tmp_path):
    root = _project(tmp_path, "echo 'FAILED tests/test_x.py::test_y - assert 1 == 2'; echo '1 failed, 2 passed in 0.01s'; exit 1")
    b = loop.loop_bench(root, tmp_path / "work")
    assert (b.exit, b.said) == (2, "1 failed, 2 passed in 0.01s; FAILED tests/test_x.py::test_y")  # make's exit: 2
    assert [f.met for f in b.figures()] == [False, False] and "(exit 2)" in b.figures()[0].measured


def test_every_figure_stands_beside_its_goal_in_one_table():
    fast = demo.DemoBench(cold=12.0, cold_cpu=9.0, warm=9.5, warm_cpu=4.0, lines=58, load=1.0, widest=170)
    text = report.results([fast, "radar: skipped (why)"])
    table = text.split("\n\n", 1)[1].splitlines()
    assert [re.split(r"\s{2,}", row) for row in table[:4]] == [
        ["figure", "measured", "goal"],
        ["make demo, fresh clone, setup included", "12.0 s", "at most 20 s", "met"],
        ["make demo, warm", "9.5 s", "at most 8 s", "NOT met"],
        ["make demo's output", "58 lines, widest 170", "at most 60 lines, none over 160", "NOT met"]]
    assert table[-1] == "2 of 3 goals not met" and "radar: skipped (why)" in text


def test_the_raw_check_is_printed_as_it_runs_and_checks_every_series(tmp_path):
    """The baseline does the work make check does (each set's series against its ref) and
    nothing more; its printed line runs as printed."""
    b = raw.check_bench(ROOT, tmp_path / "bench", runs=1)
    assert set(b.sets) == {"main", "rc25"} and b.pair.ratio > 0
    for target in b.sets:
        assert f"git apply --cached --check {ROOT}/patches/{target}/*.patch" in b.pair.baseline
    assert subprocess.run(["bash", "-c", b.pair.baseline]).returncode == 0
    for target in b.sets:  # the glob is printed only when it names exactly the series, in order
        assert sorted((ROOT / "patches" / target).glob("*.patch")) == [p.file for p in patchset.load(ROOT, target).patches]
    assert b.pair.ours == f"make -s check TRTLLM_SRC={tmp_path / 'bench' / 'check-upstream'}"
    assert raw.shown(["git", "am", str(ROOT / "patches/rc25/0002-x.patch")]) == f"git am {ROOT}/patches/rc25/0002-x.patch"


def test_the_route_by_hand_makes_the_commits_make_apply_makes(tmp_path):
    """A baseline that did less would flatter us, one that did more would too: the series'
    commits by hand have make apply's trees (make apply then narrows the waiver: one commit more)."""
    from patchkit import miniature
    work = tmp_path / "bench"
    miniature.build(ROOT, work / "up")
    p = raw.cold_pair(ROOT, work, work / "up", "rc25", runs=1)
    assert len(p.a) == len(p.b) == 1 and p.ratio > 0 and "--filter=blob:none --no-checkout" in p.baseline

    def trees(repo: str, n: int) -> list[str]:
        return subprocess.run(["git", "-C", str(work / repo), "log", "--format=%T", f"-{n}"], capture_output=True,
                              text=True, check=True).stdout.split()
    assert trees("apply-ours", 4)[1:] == trees("apply-by-hand", 3)
    said = subprocess.run(["git", "-C", str(work / "apply-by-hand"), "branch", "--show-current"], capture_output=True,
                          text=True).stdout.strip()
    assert said == "overlay/rc25"


def test_startup_figures_are_the_commands_a_user_types(tmp_path):
    b = raw.startup_bench(ROOT, tmp_path, runs=1)
    assert [r.command.rsplit("/", 1)[-1] for r in b.runs] == ["patchkit --version", "make -s help"]
    assert all(len(r.walls) == 1 and r.median > 0 for r in b.runs)
    assert [f.met for f in b.figures()] == [r.median < 0.1 for r in b.runs]

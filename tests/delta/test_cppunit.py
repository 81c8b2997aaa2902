"""make delta MODE=container and a compiled fix's C++ unit tests (#32 item 3): which targets are
the fix's (add_gtest in cpp/tests, read from the stack's commit: its own C++ test files, and the
unit test of each compiled file it touches), and where the build tree make wheel keeps is not
here, "not run here (needs the build tree)", never guessed. The run in a tree: the container
tests (test_delta_cpp.py, make test-slow)."""
from __future__ import annotations

import re
from pathlib import Path

from helpers import sh
from patchkit import patchset, stack
from patchkit.delta import cppunit
from patchkit.delta.result import DeltaResult
from patchkit.delta.text import cpp_lines, delta_result
from patchkit.git import Repo
from patchkit.upstream import base_of
from patchkit.wheel.command import Settings

TEST = "cpp/tests/unit_tests/batch_manager/capacitySchedulerTest.cpp"
SOURCE = "cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp"


def test_the_fixs_targets_are_its_test_files_and_the_unit_tests_of_what_it_compiles(stack_template, miniature_template):
    repo = Repo(miniature_template)
    registered = cppunit.gtests(repo, sh("git", "-C", miniature_template, "rev-parse", "v1.3.0rc25").stdout.strip())
    assert registered["capacitySchedulerTest"] == TEST and len(registered) == 3
    ps = patchset.load(stack_template, "rc25")
    targets, untested = cppunit.targets_of(stack.find(ps, "19302"), registered)
    assert targets == {"capacitySchedulerTest": {"why": f"its test {TEST}; the unit test of {SOURCE}", "files": [TEST]}}
    assert untested == []
    assert cppunit.targets_of(stack.find(ps, "19514"), registered) == ({}, [])  # Python alone: none


def test_without_the_build_tree_they_are_not_run_here(stack_template, miniature_template, tmp_path):
    ps = patchset.load(stack_template, "rc25")
    src = tmp_path / "src"
    sh("git", "clone", "-q", miniature_template.as_uri(), src)
    repo = Repo(src)
    _ref, base = base_of(repo, ps)
    settings = Settings(tmp_path / "wheel", tmp_path / "wheel-cache", where="host")
    out = cppunit.run_all(ps, repo, base, list(ps.fixes), settings)
    assert list(out) == ["19302"]
    entry = out["19302"]
    assert entry["not_run"].startswith("not run here (needs the build tree: make wheel TRTLLM=rc25 makes it; ")
    assert "unpatched" not in entry["targets"]["capacitySchedulerTest"]
    assert cpp_lines(entry) == [f"C++ unit tests capacitySchedulerTest: {entry['not_run']}"]
    assert not Path(tmp_path / "wheel-cache" / "trees").exists() or not any((tmp_path / "wheel-cache" / "trees").iterdir())


def test_a_target_that_fails_with_the_stack_fails_the_delta_and_one_the_tree_cannot_run_does_not():
    """The verdict counts a C++ unit test that failed or did not build with the whole stack; one
    the build tree cannot run ("not run: ...") is said, and counts neither way."""
    def result(patched: str) -> DeltaResult:
        entry = {"targets": {"capacitySchedulerTest": {"why": f"the unit test of {SOURCE}", "files": [],
                                                       "unpatched": "passed", "patched": patched}},
                 "untested": [], "where": "this machine, build tree /t", "log": "/t/cpp-tests.log"}
        return DeltaResult("rc25", "container", "refs/tags/v1.3.0rc25", "0" * 40, [], "/r.json",
                           not_graded={"19450": "declares no tests"}, stack=2, cpp={"19450": entry})
    failed = result("failed")
    text = delta_result(failed)
    assert not failed.ok and text.endswith("verdict: fix 19450's C++ unit tests fail with the whole stack; report: /r.json")
    assert "fix 19450: declares no tests; the C++ unit tests of the files it compiles, without it (unpatched)" in text
    assert re.search(r"^  capacitySchedulerTest +passed +failed +the unit test of ", text, re.M)
    assert "their output: /t/cpp-tests.log" in text
    assert not result("did not build").ok and not result("the run ended (exit 137) before it said").ok
    skipped = result("not run: no ctest test runs it")
    assert skipped.ok and delta_result(skipped).endswith("verdict: every fix matches the declared delta; report: /r.json")

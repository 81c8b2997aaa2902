"""make delta MODE=container grades a compiled fix (#32 item 3): its Python tests in the image
made from its wheel (unpatched: the release base), its C++ unit tests in the build tree make
wheel keeps, through the tree's own cmake and ctest: the tree without the fix (its test file
kept) fails capacitySchedulerTest, the whole stack passes it. Image builds: make test-slow."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cstore import needs_tools
from helpers import copy_project, sh
from patchkit.cli import main
from patchkit.delta.text import cpp_lines
from stacks import stacked
from wheels import wheel_cache

pytestmark = [needs_tools, pytest.mark.slow]
GUARDED = "tests/unittest/_torch/executor/test_reuse_policy.py"


def test_the_python_tests_run_in_its_image_and_the_cpp_tests_in_the_build_tree(wheel_release, miniature_template,
                                                                                 tmp_path, capsys, compiler_cache):
    base, _wheel = wheel_release
    root, src = copy_project(tmp_path / "project", "overlay"), tmp_path / "trtllm"
    stacked(root, "rc25", miniature_template, tmp_path)  # 19302 (C++, Python, tests) under our fix
    sh("git", "clone", "-q", miniature_template.as_uri(), src)
    wheel_cache(root / "build" / "wheel-cache", compiler_cache)
    common = ["--target", "rc25", "--src", str(src), "--base", base, "--builder", "buildah", "--wheel-build", "host",
              "--wheel-out", str(root / "build" / "wheel"), "--wheel-cache", str(root / "build" / "wheel-cache")]
    assert main(["--root", str(root), "container", *common, "--context", str(root / "ctx")]) == 0, capsys.readouterr().err
    capsys.readouterr()
    report = root / "build" / "delta" / "rc25.json"
    code = main(["--root", str(root), "--json", "delta", *common, "--mode", "container", "--report", str(report)])
    res = json.loads(capsys.readouterr().out)
    assert code == 0 and res["ok"], json.dumps(res, indent=1)[:4000]
    [section] = [f for f in res["fixes"] if f["id"] == "19302"]
    # the Python tests: the release base's wheel lacks the guard, the image made from the stack's wheel has it
    assert sorted(t.split("::", 1)[1] for t in section["fail_to_pass"] if t.startswith(GUARDED)) == [
        "test_feature_fed_encoder_is_scheduled[guaranteed_no_evict]", "test_feature_fed_encoder_is_scheduled[max_utilization]",
        "test_feature_fed_encoder_is_scheduled[static_batch]", "test_feature_fed_encoder_turns_reuse_off"]
    # the C++ unit test: in the host's build tree, without the fix and with the stack
    cpp = res["cpp"]["19302"]
    assert cpp["targets"]["capacitySchedulerTest"]["unpatched"] == "failed"
    assert cpp["targets"]["capacitySchedulerTest"]["patched"] == "passed"
    assert cpp["where"].startswith("this machine, build tree ") and Path(cpp["log"]).is_file()
    assert "FeatureFedEncoderReusesNothing" in Path(cpp["log"]).read_text()
    lines = cpp_lines(cpp)
    assert lines[0].startswith("C++ unit tests, in this machine") and "failed     passed" in lines[2]
    assert list(res["cpp"]) == ["19302"]  # our own fix is Python alone

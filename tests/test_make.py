"""End to end through make, the way a user runs it (the venv step is skipped: SETUP=)."""
from __future__ import annotations

import re
import sys

import pytest

from helpers import ROOT, sh


def make(*args, cwd=ROOT):
    return sh("make", "-s", "-C", cwd, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit", *args, check=False)


@pytest.mark.slow  # the whole demo (both sets, lint, pr): make test-slow; .ci/run also runs make test-slow
def test_make_demo_applies_both_targets_on_the_miniature(tmp_path):
    res = make(f"BUILD={tmp_path}/build", "demo")
    assert res.returncode == 0, res.stderr
    assert "rc25: refs/tags/v1.3.0rc25" in res.stdout and "(partial clone)" in res.stdout
    assert "1 line(s) of tests/integration/test_lists/waives.txt skipped" in res.stdout
    assert res.stdout.count("already applied on branch") == 2
    assert res.stdout.count("verdict: matches the declared delta") == 2
    assert res.stdout.count("[#19514][fix] Size the cross-attention KV cache") == 2
    waives = (ROOT / "tests/fixtures/miniature/base/tests/integration/test_lists/waives.txt").read_text().splitlines()
    blanket = waives.index("unittest/_torch/executor SKIP (https://nvbugs/6800103)") + 1
    assert f"waived by line {blanket} at the outer level in l0_cpu" in res.stdout
    assert (tmp_path / "build/demo/trtllm-rc25/tests/unittest/_torch/executor/test_cross_kv_cache_layout.py").is_file()


def test_make_apply_then_unapply_on_a_local_url(tmp_path, upstream):
    src = tmp_path / "src"
    res = make(f"TRTLLM_SRC={src}", f"TRTLLM_URL={upstream.as_uri()}", "TRTLLM=rc25", "apply")
    assert res.returncode == 0, res.stderr
    assert sh("git", "-C", src, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() == "overlay/rc25"
    res = make(f"TRTLLM_SRC={src}", "TRTLLM=rc25", "unapply")
    assert res.returncode == 0, res.stderr
    assert sh("git", "-C", src, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() == "HEAD"


def test_make_apply_with_bad_target_fails_with_one_line(tmp_path):
    res = make(f"TRTLLM_SRC={tmp_path}/x", "TRTLLM=../etc", "apply")
    assert res.returncode != 0
    assert "patchkit: error: invalid target name '../etc'" in res.stderr


def test_make_passes_the_defaults_it_declares(tmp_path):
    """`export VAR` before `VAR ?= default` defined VAR as empty, so the default never applied:
    `make container-push REGISTRY=...` died on --tls-verify='' and export got --branch=''."""
    argv_file, recorder = tmp_path / "argv", tmp_path / "record-argv"
    recorder.write_text(f"#!/bin/sh\nfor a; do printf '%s\\n' \"$a\"; done > {argv_file}\n")
    recorder.chmod(0o755)

    def argv(*args):
        res = sh("make", "-s", "-C", ROOT, "SETUP=", f"PATCHKIT={recorder}", *args, check=False)
        assert res.returncode == 0, res.stderr
        return argv_file.read_text().splitlines()

    assert "--tls-verify=true" in argv("TRTLLM=rc25", "REGISTRY=localhost:5000/x", "container-push")
    assert "--branch=overlay/rc25" in argv("TRTLLM=rc25", "export")
    assert "--branch=overlay/main" in argv("check-export")
    assert "--tls-verify=false" in argv("REGISTRY=r/x", "TLS_VERIFY=false", "container-push")


def test_a_verdicts_exit_1_says_so_beside_makes_own_error(checkout):
    """#27 item 4: a command whose exit 1 is its verdict (radar "changed", a delta mismatch, dco
    violations...) left `make: *** [...] Error 1` as the only word on stderr."""
    sh("git", "-C", checkout, "checkout", "-q", "-b", "work")
    (checkout / "NOTES.md").write_text("unsigned\n")
    sh("git", "-C", checkout, "add", "NOTES.md")
    sh("git", "-C", checkout, "commit", "-q", "-m", "An unsigned commit")
    res = make(f"TRTLLM_SRC={checkout}", "BRANCH=work", "dco")
    assert res.returncode == 2 and "1 violation(s)" in res.stdout, res.stderr
    said, make_said = res.stderr.splitlines()
    assert said == "patchkit: exit 1 is dco's verdict, not a failure to run: 1 commit(s) without a valid sign-off (above)"
    assert re.fullmatch(r"make(\[\d+\])?: \*\*\* \[.*\] Error 1", make_said), make_said  # make[1] under make test

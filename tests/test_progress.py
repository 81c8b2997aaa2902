"""Progress (#12): said on a terminal, never in --json output, never with --quiet or in a pipe.

The CLI runs in a subprocess with its stderr on a pseudo-terminal (pty), as a user's shell
gives it, or on a pipe, as CI or `2>log` gives it.
"""
from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

from helpers import ROOT
from patchkit import patchset


def run_cli(args, *, stderr_tty: bool) -> tuple[int, str, str]:
    cmd = [sys.executable, "-m", "patchkit", "--root", str(ROOT), *[str(a) for a in args]]
    if not stderr_tty:
        res = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        return res.returncode, res.stdout, res.stderr
    master, slave = pty.openpty()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    err = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        err += chunk
    out = child.stdout.read().decode()
    child.wait()
    os.close(master)
    return child.returncode, out, err.decode("utf-8", "replace")


def apply_args(upstream, where, *extra):
    where.mkdir(parents=True, exist_ok=True)
    return [*extra, "apply", "--target", "main", "--src", where / "trtllm", "--url", upstream.as_uri()]


def test_progress_on_a_terminal_says_each_step_and_shows_gits_own(upstream, tmp_path):
    code, out, err = run_cli(apply_args(upstream, tmp_path), stderr_tty=True)
    assert code == 0, err
    assert "patchkit: cloning main from file://" in err
    assert "Receiving objects:" in err  # git's own progress, passed through as git draws it
    names = [p.name for p in patchset.load(ROOT, "main").patches]
    assert all(f"patchkit: applying patch {i}/{len(names)}: {n}" in err for i, n in enumerate(names, 1)), err
    assert "patchkit:" not in out


@pytest.mark.slow  # make test keeps progress on a terminal
def test_json_output_never_contains_progress(upstream, tmp_path):
    code, out, err = run_cli(apply_args(upstream, tmp_path, "--json"), stderr_tty=True)
    assert code == 0, err
    assert "patchkit: applying patch 1/" in err  # progress still went to the terminal...
    assert json.loads(out)["target"] == "main"  # ...and stdout is JSON and nothing else


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_quiet_silences_progress_in_a_pipe_and_on_a_terminal(upstream, tmp_path):
    code, out, err = run_cli(apply_args(upstream, tmp_path / "a", "--quiet"), stderr_tty=False)
    assert code == 0, err
    assert err == ""
    assert "branch overlay/main" in out
    code, out, err = run_cli(apply_args(upstream, tmp_path / "b", "--quiet"), stderr_tty=True)
    assert code == 0, err
    assert "patchkit:" not in err and "Receiving objects" not in err and "Cloning into" not in err


@pytest.mark.slow  # make test keeps the terminal and --quiet cases
def test_a_pipe_gets_no_progress_without_quiet(upstream, tmp_path):
    code, out, err = run_cli(apply_args(upstream, tmp_path), stderr_tty=False)
    assert code == 0, err
    assert err == ""


def test_a_failing_clone_on_a_terminal_says_gits_complaint_not_its_progress(tmp_path):
    (tmp_path / "w").mkdir()
    code, out, err = run_cli(["apply", "--target", "main", "--src", tmp_path / "w" / "trtllm",
                              "--url", (tmp_path / "no-such-repo").as_uri()], stderr_tty=True)
    assert code == 4
    last = [ln for ln in err.splitlines() if ln.startswith("patchkit: error:")]
    assert len(last) == 1 and "does not appear to be a git repository" in last[0], err
    assert not (tmp_path / "w" / "trtllm").exists()

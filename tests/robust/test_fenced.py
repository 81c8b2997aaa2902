"""A pull request's code runs fenced (#31 item 3): make backport measured a PR's expectations by
importing its test files with pytest as the user, with the network; a test file writing
/tmp/PWNED at import time wrote it. Its tests now run inside bubblewrap (fence.py): no network,
the filesystem read-only but the measuring folder, a fresh HOME and /tmp; where bubblewrap
cannot run, make backport runs none of the PR's code and says what measures it later."""
from __future__ import annotations

import contextlib
import io
import os
import socket
import sys
from pathlib import Path

import pytest

from helpers import ROOT, copy_root, push_pr, sh
from patchkit import cli, fence, patchset
from patchkit.backport import command

TEST = "tests/unittest/_torch/executor/test_fence.py"
# The PR's test file: at import time it writes into its HOME and under the test's own folder,
# and connects to a server the test listens with; then it tests the PR's change.
HOSTILE = '''import contextlib
import io
import os
import socket
from pathlib import Path

for place in (Path(os.environ["HOME"]) / "PWNED", Path({outside!r}) / "PWNED"):
    try:
        place.write_text("pwned")
    except OSError:
        pass
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"pwned")
except OSError:
    pass

from tensorrt_llm._torch.pyexecutor.scheduler import block_budget


def test_budget():
    assert block_budget(3, 1) == 2


def test_doubled():
    from tensorrt_llm._torch.pyexecutor.scheduler import doubled
    assert doubled(2) == 4
'''
SCHEDULER = "tensorrt_llm/_torch/pyexecutor/scheduler.py"


@pytest.fixture
def listening():
    """A server on 127.0.0.1 that the PR's test file tries to reach."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.setblocking(False)
    yield server
    server.close()


def reached(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def hostile_pr(upstream: Path, outside: Path, port: int) -> None:
    def make(work: Path) -> str:
        (work / TEST).write_text(HOSTILE.format(outside=str(outside), port=port))
        with open(work / SCHEDULER, "a") as fh:
            fh.write("\n\ndef doubled(x):\n    return 2 * x\n")
        return "[None][fix] Doubled, tested by a hostile file"
    push_pr(upstream, "4242", make)


def fake_bwrap(tmp_path: Path) -> Path:
    """A bwrap that cannot make its namespaces, as in a container that refuses user namespaces."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    (bin_dir / "bwrap").chmod(0o755)
    return bin_dir


@pytest.mark.skipif(fence.find()[0] is None, reason=f"no fence here: {fence.find()[1]}")
def test_a_prs_tests_write_nothing_outside_and_reach_no_network_and_the_backport_completes(
        tmp_path, upstream, checkout, listening):
    outside = tmp_path / "outside"
    outside.mkdir()
    hostile_pr(upstream, outside, listening.getsockname()[1])
    root = copy_root(tmp_path)
    res = command.backport(patchset.load(root, "rc25"), root=root, src=checkout, pr="4242", today="2026-12-02")
    home = Path(os.environ["HOME"])
    assert not (home / "PWNED").exists() and not (outside / "PWNED").exists()
    assert not reached(listening)
    # measured all the same: without the fix one test fails, with the stack both pass
    assert res.expected == {TEST: {"unpatched": {"passed": 1, "failed": 1}, "patched": {"passed": 2}}}
    assert patchset.load(root, "rc25").fix("4242").expected["source"][TEST]["patched"]["passed"] == 2
    said = command.describe(res)
    assert f"tests of 4242, source mode, run fenced by bubblewrap ({fence.WORDS})" in said
    # make delta runs the stack's tests (the PR's among them) in the same fence, and says so
    code, out = delta(root, checkout, tmp_path)
    assert code == 0, out
    assert f"tests ran here, fenced by bubblewrap ({fence.WORDS})" in out.splitlines()
    assert not (home / "PWNED").exists() and not (outside / "PWNED").exists() and not reached(listening)


def test_without_a_fence_backport_runs_none_of_the_prs_code_and_says_what_measures_it(
        tmp_path, upstream, checkout, listening, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    hostile_pr(upstream, outside, listening.getsockname()[1])
    root = copy_root(tmp_path)
    monkeypatch.setenv("PATH", f"{fake_bwrap(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    res = sh("make", "-s", "-C", ROOT, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit --root {root}",
             "TRTLLM=rc25", f"TRTLLM_SRC={checkout}", "PR=4242", "backport", check=False)
    assert res.returncode == 0, res.stderr
    home = Path(os.environ["HOME"])
    assert not (home / "PWNED").exists() and not (outside / "PWNED").exists() and not reached(listening)
    fix = patchset.load(root, "rc25").fix("4242")
    assert fix.expected["source"][TEST]["not_measured"] == "no sandbox here; make delta measures it"
    assert f"expected delta (source): {TEST}: not measured (no sandbox here; make delta measures it)" in \
        sh("make", "-s", "-C", ROOT, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit --root {root}", "targets").stdout
    lines = res.stdout.splitlines()
    assert ("tests of 4242: not run: no sandbox here (bubblewrap cannot make its namespaces here (bwrap: No "
            "permissions to creating new namespace)); make delta measures them") in lines
    assert lines[-1] == (f"run: PATCHKIT_ROOT={root} make delta TRTLLM=rc25 TRTLLM_SRC={checkout} MODE=source FIXID=4242 (measures its "
                         "tests: without a fence they run with your network and home)")
    # make delta, which the user asks for, runs them unfenced, says so, and grades nothing declared
    code, out = delta(root, checkout, tmp_path, "--fix-id", "4242")
    assert code == 0, out
    assert ("tests ran here, NOT fenced (bubblewrap cannot make its namespaces here (bwrap: No permissions to "
            "creating new namespace)): with your network and home") in out.splitlines()
    assert f"nothing declared for {TEST} (no sandbox here; make delta measures it): the counts above are its measure" in out
    assert (home / "PWNED").exists() and reached(listening)  # what the fence keeps out, unfenced


def delta(root: Path, checkout: Path, tmp_path: Path, *argv: str) -> tuple[int, str]:
    """make delta of the rc25 stack (the CLI, in process), its exit code and text."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--root", str(root), "delta", "--target", "rc25", "--src", str(checkout), "--mode", "source",
                         "--report", str(tmp_path / "delta.json"), *argv])
    return code, out.getvalue() + err.getvalue()

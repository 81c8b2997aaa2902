"""The suite's hygiene check counts only what its own run made (#31 item 12)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from helpers import ROOT

PROBE = '''
import tempfile
from pathlib import Path


def test_probe():
    assert True
'''
LEAVES = '''
import tempfile
from pathlib import Path


def test_leaves_a_file_outside_its_folders():
    # the run's root, past the test's own TMPDIR: what a test must never do
    Path(tempfile.gettempdir()).parent.parent.parent.joinpath("left-behind.txt").write_text("x")
'''


def _inner(tmp_path: Path, body: str, shared: Path) -> subprocess.CompletedProcess:
    """A pytest run of one test file under the suite's conftest (its seal and its check), with
    the shared /tmp it watches and its TMPDIR in a folder of this test's."""
    probe = tmp_path / "probe" / "test_probe.py"
    probe.parent.mkdir()
    probe.write_text(body)
    env = dict(os.environ, TMPDIR=str(shared), PATCHKIT_HYGIENE_TMP=str(shared))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-c", str(ROOT / "pyproject.toml"),
                           "--rootdir", str(ROOT), "-p", "conftest", str(probe)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_a_green_run_is_green_while_others_write_into_tmp(tmp_path):
    """#31 item 12: make test exited 2 after "492 passed" because its check counted
    /tmp/pytest-of-root, which another user's pytest had just made."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    stop = threading.Event()

    def another_user():  # another pytest, and other programs, at work in the shared folder
        n = 0
        while not stop.is_set():
            (shared / "pytest-of-root" / f"pytest-{n}").mkdir(parents=True, exist_ok=True)
            (shared / f"tmp{n:06d}").write_text("theirs")
            n += 1
            time.sleep(0.05)

    t = threading.Thread(target=another_user)
    t.start()
    try:
        run = _inner(tmp_path, PROBE, shared)
    finally:
        stop.set()
        t.join()
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "hygiene" not in run.stdout
    # what the run made is gone; the other user's things are theirs, untouched
    assert sorted(p.name for p in shared.iterdir() if not p.name.startswith("tmp")) == ["pytest-of-root"]


def test_what_the_run_leaves_in_its_root_fails_it(tmp_path):
    """The converse: a test that leaves a file in the run's temporary root fails the run, named."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    run = _inner(tmp_path, LEAVES, shared)
    assert run.returncode == 1, run.stdout[-2000:]
    assert "left in the run's temporary root (1):" in run.stdout
    assert "left-behind.txt" in run.stdout

"""make radar killed at any point (#18): in the one-commit clone while it fetches the range
(before a fetch runs, and after one ran but before radar cleaned up after it), and in a
user's checkout while it probes the series and while it probes the tests. Each time the
second run, the same command, succeeds with the verdict of a run never killed, nothing is
left in $TMPDIR, and the user's checkout is as it was (no ref of ours left in it)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import ROOT, sh, state_of

# git on PATH that SIGKILLs patchkit at the KILL_AT-th call whose arguments hold KILL_ON (a git
# subcommand): before that git runs (KILL_WHEN=before), or once it has run to its end (after:
# what it did stays done, and patchkit never hears of it). Every other call goes through; the
# launcher execs into patchkit, so its pid is known.
WRAPPER = r'''#!/bin/sh
for a in "$@"; do
  if [ "$a" = "$KILL_ON" ]; then
    n=$(( $(cat "$KILL_COUNTER") + 1 )); echo $n > "$KILL_COUNTER"
    if [ "$n" = "$KILL_AT" ]; then
      [ "$KILL_WHEN" = after ] && "$REAL_GIT" "$@" >/dev/null 2>&1
      kill -9 "$FAULT_PID"; exit 128
    fi
  fi
done
exec "$REAL_GIT" "$@"
'''


def _run(tmp: Path, argv: list[str], kill: tuple[str, int, str] | None = None) -> subprocess.CompletedProcess:
    bin_dir = tmp / "killbin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "git").write_text(WRAPPER)
    (bin_dir / "git").chmod(0o755)
    (tmp / "kill-counter").write_text("0")
    on, at, when = kill or ("", 0, "")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", KILL_ON=on, KILL_AT=str(at), KILL_WHEN=when,
               KILL_COUNTER=str(tmp / "kill-counter"), REAL_GIT=shutil.which("git"),
               GIT_PYTHON_GIT_EXECUTABLE=str(bin_dir / "git"), PATCHKIT_LOCK_WAIT="0")
    launcher = 'FAULT_PID=$$; export FAULT_PID; exec "$0" "$@"'
    return subprocess.run(["sh", "-c", launcher, sys.executable, "-m", "patchkit", "--root", str(ROOT), "--quiet",
                           "--json", "radar", "--target", "main", *argv], capture_output=True, text=True, env=env,
                          timeout=180)


def _verdict(out: str) -> dict:
    res = json.loads(out)
    return {k: res[k] for k in ("timeline", "fixes", "action", "verdict", "changed", "candidates")}


def _leftovers() -> list[str]:
    return sorted(p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith("patchkit-"))


SINCE = ["--since", "v1.3.0rc25"]  # a SINCE that the second run finds with its history already there


@pytest.fixture(scope="module")
def unkilled(history_template, tmp_path_factory):
    """The verdict of a run that nobody killed."""
    tmp = tmp_path_factory.mktemp("unkilled")
    ran = _run(tmp, ["--src", str(tmp / "src"), "--url", str(history_template), "--out", str(tmp / "out"), *SINCE])
    assert ran.returncode == 1, ran.stderr
    return _verdict(ran.stdout)


def _sweep(*points, first=()):
    """The first point runs in make test (or in make test-slow with first=slow); the others
    under -m exhaustive: make test-slow, which .ci/run runs."""
    return [pytest.param(points[0], marks=first), *(pytest.param(p, marks=pytest.mark.exhaustive) for p in points[1:])]


@pytest.mark.parametrize("case", _sweep(
    (("fetch", 2, "after"), "tag"),  # the range's history arrived; radar never heard of it
    (("fetch", 1, "after"), "tag"),  # SINCE arrived under a temporary ref, which radar did not delete
    (("fetch", 1, "after"), "id"),  # SINCE arrived by id; the second run finds it there
    (("fetch", 2, "before"), "tag"),  # the clone is made, SINCE is there, no history yet
    (("fetch", 4, "after"), "tag"),  # some levels of the set's trees arrived, not all
    (("fetch", 8, "before"), "tag"),  # all the trees, none of the set's files
    first=pytest.mark.slow,  # make test kills radar once, while probing (below)
))
def test_killed_while_fetching_then_the_same_command_succeeds(history_template, tmp_path, unkilled, case):
    kill, since = case
    rev = SINCE[1] if since == "tag" else sh("git", "-C", history_template, "rev-parse", f"{SINCE[1]}^{{commit}}").stdout.strip()
    args = ["--src", str(tmp_path / "src"), "--url", str(history_template), "--out", str(tmp_path / "out"), "--since", rev]
    killed = _run(tmp_path, args, kill)
    assert killed.returncode == -9, killed.stderr
    again = _run(tmp_path, args)
    assert again.returncode == 1, again.stderr
    assert _verdict(again.stdout) == unkilled
    assert _leftovers() == []
    assert sh("git", "-C", tmp_path / "src", "for-each-ref", "refs/patchkit/").stdout == ""
    assert sh("git", "-C", tmp_path / "src", "status", "--porcelain").stdout == ""


@pytest.mark.slow  # radar killed: make test-slow (.ci/run); make test kills apply and clone
@pytest.mark.parametrize("kill", _sweep(
    ("apply", 3, "before"),  # probing the series on a state of the set's files
    ("merge-file", 1, "before"),  # its 3-way merge where the patch no longer applies cleanly
    ("commit-tree", 2, "after"),  # a test probe: upstream plus the test-only patch, committed
))
def test_killed_while_probing_leaves_the_checkout_as_it_was(history_template, tmp_path, unkilled, kill):
    clone = tmp_path / "trtllm"
    sh("git", "clone", "-q", history_template.as_uri(), clone)
    before = state_of(clone)
    args = ["--src", str(clone), "--out", str(tmp_path / "out"), *SINCE]
    killed = _run(tmp_path, args, kill)
    assert killed.returncode == -9, killed.stderr
    assert state_of(clone) == before
    again = _run(tmp_path, args)
    assert again.returncode == 1, again.stderr
    assert _verdict(again.stdout) == unkilled
    assert state_of(clone) == before
    assert _leftovers() == []

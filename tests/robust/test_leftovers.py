"""Nothing left behind (#17 item 9): a run killed while it holds temporary folders in $TMPDIR
(a temporary index, an export's patches, the delta's trees) leaves them only until the next
command, which sweeps them, whatever that command is; a live run's folders are never swept.
A clone's lock file beside TRTLLM_SRC goes once the clone has landed."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from patchkit import scratch
from helpers import ROOT, copy_root, tiered

# git on PATH that SIGKILLs patchkit the KILL_AT-th time KILL_ON (a git subcommand) is among its arguments (and
# does not run that git), and
# lets every other call through; the launcher execs into patchkit, so its pid is known.
WRAPPER = r'''#!/bin/sh
for a in "$@"; do
  if [ "$a" = "$KILL_ON" ]; then
    n=$(( $(cat "$KILL_COUNTER" 2>/dev/null || echo 0) + 1 )); echo $n > "$KILL_COUNTER"
    # killed, and this git does not run: an orphan git still writing into the folder would race the sweep
    [ "$n" = "$KILL_AT" ] && { kill -9 "$FAULT_PID"; exit 128; }
  fi
done
exec "$REAL_GIT" "$@"
'''


def patchkit(argv: list[str], tmp: Path, kill_on: str = "", root: Path = ROOT, at: int = 1) -> subprocess.CompletedProcess:
    bin_dir = tmp / "killbin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "git").write_text(WRAPPER)
    (bin_dir / "git").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", KILL_ON=kill_on, KILL_AT=str(at), KILL_COUNTER=str(tmp / "kill-counter"), REAL_GIT=shutil.which("git"),
               GIT_PYTHON_GIT_EXECUTABLE=str(bin_dir / "git"), PATCHKIT_LOCK_WAIT="0")
    launcher = 'FAULT_PID=$$; export FAULT_PID; exec "$0" "$@"'
    (tmp / "kill-counter").write_text("0")
    return subprocess.run(["sh", "-c", launcher, sys.executable, "-m", "patchkit", "--root", str(root), *argv],
                          capture_output=True, text=True, env=env, timeout=120)


def leftovers() -> list[str]:
    return sorted(p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith("patchkit-"))


@pytest.mark.parametrize("argv, kill_on, at, kind", tiered(
    (["apply", "--target", "rc25"], "--index-info", 1, "index"),  # the private index loads a diff's paths
    (["export", "--target", "rc25"], "format-patch", 2, "export"),  # the first writes build/export
    (["delta", "--target", "rc25"], "--index-info", 2, "delta"),  # the first is the probe's, before the trees
))
def test_a_killed_runs_temporary_folders_are_swept_by_the_next_command(checkout, tmp_path, argv, kill_on, at, kind):
    root = copy_root(tmp_path)  # export writes the set
    if argv[0] == "export":
        assert patchkit(["apply", "--target", "rc25", "--src", str(checkout)], tmp_path).returncode == 0
    killed = patchkit([*argv, "--src", str(checkout)], tmp_path, kill_on, root, at)
    assert killed.returncode == -9, killed.stderr
    left = leftovers()
    assert any(name.startswith(f"patchkit-{kind}-") for name in left), left  # the kill came in the window
    nxt = patchkit(["targets"], tmp_path)  # any command, not one on this checkout
    assert nxt.returncode == 0, nxt.stderr
    assert leftovers() == []


def test_a_live_runs_folder_is_not_swept(tmp_path):
    with scratch.folder("delta") as mine:
        (mine / "tree").write_text("in use\n")
        assert patchkit(["targets"], tmp_path).returncode == 0
        assert (mine / "tree").read_text() == "in use\n"
    assert leftovers() == []


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_clone_leaves_no_lock_file_beside_the_checkout(upstream, tmp_path):
    place = tmp_path / "build"
    place.mkdir()
    src = place / "trtllm-rc25"
    argv = ["apply", "--target", "rc25", "--src", str(src), "--url", upstream.as_uri()]
    first = patchkit(argv, tmp_path)
    assert first.returncode == 0, first.stderr
    assert sorted(os.listdir(place)) == ["trtllm-rc25"]
    again = patchkit(["unapply", "--target", "rc25", "--src", str(src)], tmp_path)
    assert again.returncode == 0, again.stderr
    assert patchkit(argv, tmp_path).returncode == 0  # the clone is there: opened, not cloned again
    assert sorted(os.listdir(place)) == ["trtllm-rc25"]

"""A failing git is attributed to git (issue #17, item 10), and a stalled clone or fetch is
detected and named (item 15)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchkit.cli import main
from helpers import NEVER_ANSWERS, ROOT, sh, state_of, tiered


def run(capsys, *argv):
    code = main(["--root", str(ROOT), *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv", tiered(["check"], ["apply", "--target", "rc25"], ["unapply", "--target", "rc25"],
                                  ["export", "--target", "rc25"], ["dco", "--branch", "main"]))
def test_a_git_that_dies_on_its_config_is_git_failing_not_a_missing_checkout(capsys, checkout, argv):
    """#17.10: with core.whitespace naming both indent-with-non-tab and tab-in-indent, git
    dies at start-up; every command said "<src> is not a git checkout" (exit 4) and dropped
    git's own message."""
    sh("git", "-C", checkout, "config", "core.whitespace", "indent-with-non-tab,tab-in-indent")
    before = state_of_files(checkout)
    code, _, err = run(capsys, *argv, "--src", str(checkout))
    assert (code, err.count("\n")) == (3, 1), err
    assert "fatal: cannot enforce both tab-in-indent and indent-with-non-tab" in err
    assert "not a git checkout" not in err
    assert state_of_files(checkout) == before


def state_of_files(repo: Path) -> dict:
    """The work tree's files and the git directory's config (git cannot read the rest now)."""
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and (p.relative_to(repo).parts[0] != ".git" or p.name == "config")}


FAKE_GIT = r'''#!/bin/sh
# A git that exits 128 with its own message for one subcommand, and is the real git otherwise.
for a in "$@"; do
  if [ "$a" = "$FAIL_SUBCOMMAND" ]; then echo "fatal: simulated failure of $a" >&2; exit 128; fi
done
exec "$REAL_GIT" "$@"
'''


def run_with_failing(tmp_path: Path, subcommand: str, *argv: str) -> subprocess.CompletedProcess:
    """patchkit in a subprocess whose git fails that subcommand with exit 128."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(FAKE_GIT)
    (bin_dir / "git").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", REAL_GIT=sh("sh", "-c", "command -v git").stdout.strip(),
               FAIL_SUBCOMMAND=subcommand, GIT_PYTHON_GIT_EXECUTABLE=str(bin_dir / "git"))
    return subprocess.run([sys.executable, "-m", "patchkit", "--root", str(ROOT), *argv],
                          capture_output=True, text=True, env=env, timeout=120)


def test_a_failing_check_ref_format_is_not_an_invalid_branch_name(tmp_path, checkout):
    """#17.10: a check-ref-format that fails (exit 128) was reported as
    "patchset.yaml: branch: 'overlay/rc25' is not a valid branch name" (exit 2); only git's
    verdict on a name it ran cleanly may call the name invalid. The set's names are now checked
    by names.py (git's rules, compared with git itself in tests/test_names.py), so a failing
    check-ref-format can no longer reach the verdict at all: check runs as usual."""
    res = run_with_failing(tmp_path, "check-ref-format", "check", "--src", str(checkout))
    assert res.returncode == 0, res.stderr
    assert "not a valid" not in res.stderr


def test_a_git_exiting_128_when_opening_the_checkout_is_not_a_missing_checkout(tmp_path, checkout):
    """#17.10: a git that exits 128 made every command say "<src> is not a git checkout" (exit 4)."""
    before = state_of(checkout)
    res = run_with_failing(tmp_path, "--show-toplevel", "apply", "--target", "rc25", "--src", str(checkout))
    assert (res.returncode, res.stderr.count("\n")) == (3, 1), res.stderr
    assert "fatal: simulated failure of --show-toplevel" in res.stderr and "not a git checkout" not in res.stderr
    assert state_of(checkout) == before


def test_a_git_that_gitpython_cannot_start_is_a_tool_that_does_not_work_here(tmp_path, checkout):
    """GitPython runs `git version` when it is imported, which the git facade does when a command
    first reads an object; when that fails, the command says so in one line with git's words
    (exit 5, not a traceback or exit 70) and nothing changed. A command that reads no object
    (`check` of a series that applies: #34 item 4, GitPython was a third of its start) or needs
    no git (`targets`) is not troubled by it."""
    before = state_of(checkout)
    res = run_with_failing(tmp_path, "version", "apply", "--target", "rc25", "--src", str(checkout))
    assert (res.returncode, res.stdout, res.stderr.count("\n")) == (5, "", 1), res.stderr
    assert res.stderr.startswith("patchkit: error: the version control tool does not work here (")
    assert "fatal: simulated failure of version" in res.stderr
    assert state_of(checkout) == before
    (tmp_path / "bin").rename(tmp_path / "bin-apply")
    res = run_with_failing(tmp_path, "version", "check", "--src", str(checkout))
    assert (res.returncode, res.stderr.count("applies cleanly")) == (0, 0), res.stderr
    assert res.stdout.splitlines()[1].split()[-2:] == ["applies", "cleanly"], res.stdout
    (tmp_path / "bin").rename(tmp_path / "bin-check")
    res = run_with_failing(tmp_path, "version", "targets")
    assert (res.returncode, res.stderr) == (0, ""), res.stderr
    assert res.stdout.splitlines()[0].split() == ["target", "ref", "patches", "branch"]


def test_a_plain_folder_is_still_not_a_git_checkout(capsys, tmp_path):
    """The other side of #17.10: when git ran cleanly and said so, the folder is no checkout (exit 4)."""
    (tmp_path / "plain").mkdir()
    code, _, err = run(capsys, "check", "--src", str(tmp_path / "plain"))
    assert code == 4 and err == f"patchkit: error: {tmp_path / 'plain'} is not a git checkout\n"


def _allow(monkeypatch, tmp_path: Path, *protocols: str) -> None:
    cfg = tmp_path / "gitconfig"
    cfg.write_text(Path(os.environ["GIT_CONFIG_GLOBAL"]).read_text()
                   + "".join(f'[protocol "{p}"]\n\tallow = always\n' for p in protocols))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_stalled_clone_is_detected_and_names_the_remote(capsys, tmp_path, monkeypatch):
    """#17.15: a clone from a remote that stops sending waited for the whole deadline
    (PATCHKIT_NETWORK_TIMEOUT, 30 minutes by default); now no data for PATCHKIT_STALL_TIMEOUT
    seconds ends it, naming the remote. NEVER_ANSWERS is a URL that never sends a byte."""
    monkeypatch.setenv("PATCHKIT_STALL_TIMEOUT", "1")
    monkeypatch.setenv("PATCHKIT_NETWORK_TIMEOUT", "20")
    _allow(monkeypatch, tmp_path, "ext")
    src = tmp_path / "never"
    code, _, err = run(capsys, "apply", "--target", "rc25", "--src", str(src), "--url", NEVER_ANSWERS)
    assert (code, err.count("\n")) == (4, 1), err
    assert f"{NEVER_ANSWERS} stalled: no data for 1 s" in err and "PATCHKIT_STALL_TIMEOUT" in err, err
    assert not src.exists()


STALLING_UPLOAD_PACK = r'''#!/bin/sh
# Serves the first connection (ls-remote), then stalls: a fetch gets not a byte.
n=$(cat "$0.count" 2>/dev/null || echo 0); echo $((n + 1)) > "$0.count"
[ "$n" -ge 1 ] && exec sleep 60
exec git-upload-pack "$@"
'''


@pytest.mark.slow  # make test keeps the stalled clone
def test_a_stalled_fetch_is_detected_and_names_the_remote(capsys, tmp_path, monkeypatch, upstream):
    """#17.15: a fetch into a partial clone (another target's ref) that stalls midway waited for
    the whole deadline; now it names the remote that stalled."""
    src = tmp_path / "clone"
    code, _, err = run(capsys, "apply", "--target", "rc25", "--src", str(src), "--url", upstream.as_uri())
    assert code == 0, err
    assert run(capsys, "unapply", "--target", "rc25", "--src", str(src))[0] == 0
    script = tmp_path / "stalling-upload-pack"
    script.write_text(STALLING_UPLOAD_PACK)
    script.chmod(0o755)
    sh("git", "-C", src, "config", "remote.origin.uploadpack", script)
    monkeypatch.setenv("PATCHKIT_STALL_TIMEOUT", "1")
    monkeypatch.setenv("PATCHKIT_NETWORK_TIMEOUT", "20")
    before = state_of(src)
    code, _, err = run(capsys, "apply", "--target", "main", "--src", str(src))
    assert (code, err.count("\n")) == (4, 1), err
    assert f"origin ({upstream.as_uri()}) stalled: no data for 1 s" in err, err
    assert state_of(src) == before

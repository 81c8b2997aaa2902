"""The git facade: bytes in and out, the environment policy, errors that carry git's words."""
from __future__ import annotations

from pathlib import Path

import pytest

from patchkit import apply as apply_mod, patchset, series
from patchkit.errors import NotFound, ToolMissing
from patchkit.git import GitError, Identity, Repo
from helpers import NEVER_ANSWERS, ROOT, sh

UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"
LATIN1 = b"# caf\xe9: a Latin-1 byte, not UTF-8\n"


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_non_utf8_file_survives_a_threeway_merge(upstream, tmp_path):
    """Bytes, not text: a drifted file with a Latin-1 line merges 3-way and keeps the byte."""
    util = upstream / UTIL
    util.write_bytes(util.read_bytes() + LATIN1)
    sh("git", "-C", upstream, "commit", "-qam", "A Latin-1 comment")
    text = util.read_bytes()
    old = b"            head_dim = encoder_hidden_size // encoder_num_heads\n"
    assert old in text
    util.write_bytes(text.replace(old, b"            head_dim = encoder_hidden_size // max(encoder_num_heads, 1)\n"))
    sh("git", "-C", upstream, "commit", "-qam", "Guard the head size division")
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    res = apply_mod.apply(patchset.load(ROOT, "main"), src=clone, threeway=True)
    assert [o.status for o in res.outcomes][0] == series.THREEWAY
    merged = (clone / UTIL).read_bytes()
    assert merged.endswith(LATIN1) and b"max(encoder_num_heads, 1)" in merged and b'"max_source_positions"' in merged


@pytest.mark.slow  # make test-slow (.ci/run): the second 3-way case
def test_an_executable_file_stays_executable_through_a_threeway_merge(upstream, tmp_path):
    """A drifted file that upstream made executable merges 3-way and keeps its mode (it was
    written back as 100644)."""
    util = upstream / UTIL
    text = util.read_bytes()
    old = b"            head_dim = encoder_hidden_size // encoder_num_heads\n"
    util.write_bytes(text.replace(old, b"            head_dim = encoder_hidden_size // max(encoder_num_heads, 1)\n"))
    util.chmod(0o755)
    sh("git", "-C", upstream, "commit", "-qam", "Guard the head size division; the module runs as a script")
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    res = apply_mod.apply(patchset.load(ROOT, "main"), src=clone, threeway=True)
    assert [o.status for o in res.outcomes][0] == series.THREEWAY
    assert sh("git", "-C", clone, "ls-tree", "HEAD", "--", UTIL).stdout.split()[0] == "100755"


def test_objects_are_read_as_bytes_through_one_reader(upstream):
    repo = Repo(upstream)
    assert repo.show_file("main", UTIL) == (upstream / UTIL).read_bytes()
    assert repo.show_file("main", "no/such/file") is None
    sha = repo.write_blob(LATIN1)
    assert repo.read_blob(sha) == LATIN1
    with repo.temp_index("main") as index:
        index.add("x.bin", LATIN1)
        assert index.read("x.bin") == LATIN1
        tree = index.write_tree()
    who = Identity("A U Thor", "author@example.com")
    commit = repo.commit_tree(tree, [repo.rev_parse("main")], "Add x\n", author=who, committer=who)
    assert repo.show_file(commit, "x.bin") == LATIN1
    assert repo.changed_paths(commit) == ["x.bin"]
    assert sh("git", "-C", upstream, "status", "--porcelain").stdout == ""  # the user's index untouched


def test_inherited_redirects_are_dropped_and_transport_settings_kept(upstream, tmp_path, monkeypatch):
    """A hook's GIT_DIR must not redirect us; GIT_SSH_COMMAND and GIT_CONFIG_* are the user's (#11.17)."""
    other = tmp_path / "other"
    sh("git", "init", "-q", other)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -i /keys/deploy")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "patchkit.probe")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "kept")
    repo = Repo(upstream)
    assert repo.rev_parse("refs/tags/v1.3.0rc25") is not None  # not in `other`
    assert repo.config_get("patchkit.probe") == "kept"
    env = dict(line.split("=", 1) for line in
               repo._run("-c", "alias.showenv=!env", "showenv").text.splitlines() if "=" in line)
    assert env["GIT_SSH_COMMAND"] == "ssh -i /keys/deploy"
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_EDITOR"] == "false" and env["LC_ALL"] == "C"
    assert "GIT_INDEX_FILE" not in env
    import os
    assert os.environ["GIT_DIR"] == str(other / ".git")  # ours again once the child started


def test_a_failing_command_says_what_git_said(upstream):
    repo = Repo(upstream)
    with pytest.raises(GitError) as exc:
        repo.update_ref("refs/heads/main", repo.rev_parse("main"), repo.rev_parse("v1.3.0rc25"))
    assert exc.value.returncode != 0 and exc.value.cmd[:2] == ["git", "update-ref"]
    assert "refs/heads/main" in exc.value.first_line()


def test_open_refuses_what_is_not_a_checkout(tmp_path):
    with pytest.raises(NotFound, match="is not a git checkout"):
        Repo.open(tmp_path)


def test_git_missing_is_a_missing_tool(upstream, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolMissing, match="git is not installed"):
        Repo(upstream).head()


def test_an_unexpected_git_failure_is_one_line_with_gits_words_not_an_internal_error(checkout, capsys, monkeypatch):
    """Exit 70 is for our bugs; a git that fails where nothing expected it is a tool that does not work here."""
    from patchkit.cli import main

    def refuse(self, ref, new, old, message="patchkit"):
        raise GitError(["git", "update-ref", ref], 128, "", "fatal: cannot lock ref 'x': disk quota exceeded\n")
    monkeypatch.setattr(Repo, "update_ref", refuse)
    code = main(["--root", str(ROOT), "apply", "--target", "main", "--src", str(checkout)])
    err = capsys.readouterr().err
    assert code == 3 and err == ("patchkit: error: git update-ref failed (exit 128): "
                                 "fatal: cannot lock ref 'x': disk quota exceeded\n")


def _running(pid: int, word: bytes) -> bool:
    """Whether a child of pid runs a command with this word in its arguments."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return False
    for child in children:
        try:
            if word in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
                return True
        except OSError:
            continue
    return False


def test_ctrl_c_during_a_clone_exits_at_once(tmp_path):
    """GitPython's kill_after_timeout watchdog is a non-daemon Timer nobody cancels on Ctrl-C:
    patchkit said 'interrupted' and then hung for PATCHKIT_NETWORK_TIMEOUT (30 min) before exiting."""
    import contextlib
    import signal
    import subprocess
    import sys
    import time
    import os
    src = tmp_path / "src"
    cfg = tmp_path / "gitconfig"  # the tests' config, and the ext transport allowed
    cfg.write_text(Path(os.environ["GIT_CONFIG_GLOBAL"]).read_text() + '[protocol "ext"]\n\tallow = always\n')
    # Its own process group, so that whatever it leaves (its git clone) goes with it below.
    proc = subprocess.Popen([sys.executable, "-m", "patchkit", "--root", str(ROOT), "apply", "--target", "main",
                             "--src", str(src), "--url", NEVER_ANSWERS],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "GIT_CONFIG_GLOBAL": str(cfg)}, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 30
        # Until `git clone` runs: not any child (GitPython's `git version` at import is one, and
        # a Ctrl-C then tests the start-up window, which tests/robust/test_interrupt.py covers).
        while time.monotonic() < deadline and proc.poll() is None and not _running(proc.pid, b"clone"):
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert (proc.returncode, out, err) == (130, "", "patchkit: interrupted\n")
    assert not src.exists()

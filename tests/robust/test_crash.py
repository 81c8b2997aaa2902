"""Crash-safe state, locks and refusals (issue #11, reproductions 1-7, 12, 16)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from patchkit import lock, patchset, state
from patchkit.cli import main
from patchkit.errors import Conflict
from patchkit.git import Repo
from helpers import NEVER_ANSWERS, ROOT, sh, state_of, tiered
from robust.faults import Injector

TEST = "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"


def run(capsys, *argv):
    code = main(["--root", str(ROOT), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def head(repo) -> str:
    return sh("git", "-C", repo, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()


def test_an_untracked_file_where_the_series_adds_one_is_a_clear_refusal(capsys, checkout):
    """#11.1: a contributor's draft of the regression test in the checkout gave exit 70."""
    (checkout / TEST).write_text("mine\n")
    before = state_of(checkout)
    code, _, err = run(capsys, "apply", "--target", "rc25", "--src", str(checkout))
    assert (code, err.count("\n")) == (3, 1), err
    assert "test_cross_kv_cache_layout.py is not tracked by git, and the series adds a file there" in err
    assert state_of(checkout) == before and (checkout / TEST).read_text() == "mine\n"


@pytest.mark.slow  # a kill at one git call: make test keeps the sampled fault sweep of apply
def test_a_kill_right_after_the_branch_moved_is_recovered_by_unapply_and_by_apply(checkout, tmp_path):
    """#11.2: the branch was created before the state file; a kill in between left an orphan
    overlay/<t> that apply refused (exit 3) and unapply did not know (exit 4)."""
    inj = Injector(tmp_path)
    argv = ["apply", "--target", "rc25", "--src", str(checkout)]
    before = state_of(checkout)
    calls = _calls_of(inj, argv, checkout, "update-ref")
    for follow_up, want_head in (("unapply", "main"), ("apply", "overlay/rc25")):
        res = inj.run(argv, calls, "kill-after")
        assert res.code == -9
        assert sh("git", "-C", checkout, "rev-parse", "--verify", "-q", "refs/heads/overlay/rc25").returncode == 0
        again = inj.run([follow_up, "--target", "rc25", "--src", str(checkout)])
        assert again.code == 0, again.stderr
        assert head(checkout) == want_head
    assert inj.run(["unapply", "--target", "rc25", "--src", str(checkout)]).code == 0
    assert same(state_of(checkout), before)


def same(a: dict, b: dict) -> bool:
    """Equal as a user sees it: after a checkout rewrote files the index's stat data is new, its entries not."""
    return {k: v for k, v in a.items() if k != "index"} == {k: v for k, v in b.items() if k != "index"}


def _calls_of(inj, argv, checkout, name):
    """The number of the first git call named name in a clean run of argv (then undone)."""
    log = inj.counter.parent / "trace"
    os.environ["GIT_TRACE"] = str(log)
    try:
        assert inj.run(argv).code == 0
    finally:
        del os.environ["GIT_TRACE"]
    starts = [line for line in log.read_text().splitlines() if "trace: built-in: git " in line or "trace: exec:" in line]
    log.unlink()
    assert inj.run(["unapply", "--target", "rc25", "--src", str(checkout)]).code == 0
    cmds = [line.split("trace: built-in: git ", 1)[1] for line in starts if "trace: built-in: git " in line]
    return 1 + next(i for i, c in enumerate(cmds) if c.startswith(name))


def test_apply_after_checking_out_something_else_is_not_already_applied(capsys, checkout):
    """#11.3: a second apply after `git checkout main` said 'already applied' with HEAD on main."""
    assert run(capsys, "apply", "--target", "rc25", "--src", str(checkout))[0] == 0
    sh("git", "-C", checkout, "checkout", "-q", "main")
    code, out, err = run(capsys, "apply", "--target", "rc25", "--src", str(checkout))
    assert code == 0, err
    assert "already applied" not in out and "checked it out again" in out
    assert head(checkout) == "overlay/rc25"
    code, out, err = run(capsys, "unapply", "--target", "rc25", "--src", str(checkout))
    assert code == 0 and head(checkout) == "main", err


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
@pytest.mark.parametrize("damage", [lambda t: t[: len(t) // 2], lambda t: "[]", lambda t: '{"phase": 5}',
                                    lambda t: "\udcff"])
def test_a_damaged_state_file_is_one_line(capsys, checkout, damage):
    """#11.4: a truncated .git/patchkit/<t>.json made apply and unapply exit 70 (JSONDecodeError)."""
    assert run(capsys, "apply", "--target", "rc25", "--src", str(checkout))[0] == 0
    f = state.path(Repo(checkout), "rc25")
    f.write_bytes(damage(f.read_text()).encode("utf-8", "surrogateescape"))
    before = state_of(checkout)
    for cmd in ("apply", "unapply"):
        code, _, err = run(capsys, cmd, "--target", "rc25", "--src", str(checkout))
        assert (code, err.count("\n")) == (3, 1), err
        assert str(f) in err and "rm " in err
        assert state_of(checkout) == before


def test_state_is_written_atomically(checkout, monkeypatch):
    """#11.4: the state was written in place; a kill mid-write left half a file."""
    repo = Repo(checkout)
    state.write(repo, "x", {"a": 1})
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        state.write(repo, "x", {"a": 2})
    assert json.loads(state.path(repo, "x").read_text()) == {"a": 1}
    assert [p.name for p in state.path(repo, "x").parent.iterdir()] == ["x.json"]


def test_restore_goes_on_past_a_failing_step_and_keeps_the_first_error(checkout, monkeypatch):
    """#11.6: restore stopped at its first failing step."""
    from patchkit import transaction as tx
    repo = Repo(checkout)
    before = state_of(checkout)
    monkeypatch.setattr(Repo, "worktree_prune", lambda self: (_ for _ in ()).throw(RuntimeError("prune failed")))
    real_set = Repo.set_symbolic_head
    calls = []
    monkeypatch.setattr(Repo, "set_symbolic_head", lambda self, ref: (calls.append(ref), real_set(self, ref)))
    with pytest.raises(KeyError) as err:
        with tx.transaction(repo):
            sh("git", "-C", checkout, "checkout", "-q", "-b", "elsewhere")
            raise KeyError("the original error")
    assert calls == ["refs/heads/main"]  # steps after a failure still ran (prune is last)
    assert "prune failed" in " ".join(getattr(err.value, "__notes__", []))
    monkeypatch.undo()
    assert state_of(checkout) == before


def test_a_failed_clone_leaves_nothing_and_a_leftover_is_not_refused(capsys, tmp_path, upstream):
    """#11.7: a partial clone killed midway was later refused as 'uncommitted changes'."""
    src = tmp_path / "build" / "trtllm-rc25"
    src.parent.mkdir()
    leftover = src.parent / ".trtllm-rc25.patchkit-partial-dead" / "clone"
    leftover.mkdir(parents=True)
    (leftover / "half").write_text("x")
    code, _, err = run(capsys, "apply", "--target", "rc25", "--src", str(src), "--url", upstream.as_uri())
    assert code == 0, err
    assert not leftover.parent.exists() and head(src) == "overlay/rc25"


def test_a_refused_clone_into_a_folder_that_was_there_leaves_nothing_in_it(capsys, tmp_path):
    """A clone that fails (a URL with no repository) into a build/ that already existed left
    build/.trtllm-rc25.patchkit-clone.lock behind; it goes as after a clone that landed."""
    place = tmp_path / "build"
    place.mkdir()
    code, _, err = run(capsys, "apply", "--target", "rc25", "--src", str(place / "trtllm-rc25"),
                       "--url", (tmp_path / "nowhere").as_uri())
    assert (code, err.count("\n")) == (4, 1), err
    assert list(place.iterdir()) == []


def test_a_run_that_waited_on_a_removed_lock_file_takes_the_lock_at_its_path(tmp_path, monkeypatch):
    """The clone's lock file is removed by its holder before it lets go; a run that waited on
    the removed file must not think it holds the lock: a third run, which opens the file now at
    that path, would hold it too. It takes the lock on the file at the path."""
    monkeypatch.setenv("PATCHKIT_LOCK_WAIT", "10")
    path = tmp_path / ".trtllm-rc25.patchkit-clone.lock"
    entered, release = threading.Event(), threading.Event()

    def holder():
        with lock.hold(path, "apply rc25", "build/trtllm-rc25"):
            entered.set()
            release.wait(10)
            path.unlink()
    t = threading.Thread(target=holder)
    t.start()
    entered.wait(5)
    threading.Timer(0.3, release.set).start()
    with lock.hold(path, "apply main", "build/trtllm-rc25"):
        held = os.stat(path).st_ino  # there is a file at the path, and it is the one locked
        with pytest.raises(Conflict, match=r"is busy: pid \d+ \(apply main\)"):
            monkeypatch.setenv("PATCHKIT_LOCK_WAIT", "0")
            with lock.hold(path, "apply rc25", "build/trtllm-rc25"):
                pass
        assert os.stat(path).st_ino == held
    t.join()


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_clone_killed_midway_leaves_no_checkout(tmp_path, upstream):
    """#11.7 for real: SIGKILL while git clone runs; the next apply clones afresh."""
    src = tmp_path / "trtllm"
    env = dict(os.environ, PATH=f"{_slow_git(tmp_path)}:{os.environ['PATH']}")
    proc = subprocess.Popen([sys.executable, "-m", "patchkit", "--root", str(ROOT), "apply", "--target", "rc25",
                             "--src", str(src), "--url", upstream.as_uri()], env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not (tmp_path / "cloning").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert not src.exists()
    res = subprocess.run([sys.executable, "-m", "patchkit", "--root", str(ROOT), "apply", "--target", "rc25",
                          "--src", str(src), "--url", upstream.as_uri()], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert head(src) == "overlay/rc25"


def _slow_git(tmp_path):
    """A git that, for clone, says so and then sleeps inside the clone."""
    d = tmp_path / "slowbin"
    d.mkdir()
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    (d / "git").write_text(f'#!/bin/sh\nfor a; do [ "$a" = clone ] && {{ touch {tmp_path}/cloning; sleep 30; }}; done\n'
                           f'exec {real} "$@"\n')
    (d / "git").chmod(0o755)
    return d


@pytest.mark.slow  # two pr runs: make test-slow (.ci/run)
def test_pr_rerun_does_not_discard_a_review_commit(capsys, checkout, tmp_path):
    """#11.12: re-running make pr after committing a review fix on pr/<t> discarded it silently."""
    from patchkit.delta import command as delta_cmd
    report = tmp_path / "rc25.json"
    assert delta_cmd.delta(patchset.load(ROOT, "rc25"), repo=Repo(checkout), mode="source", report=report).ok
    argv = ["pr", "--target", "rc25", "--src", str(checkout), "--report", str(report), "--out", str(tmp_path / "out")]
    assert run(capsys, *argv)[0] == 0
    assert run(capsys, *argv)[0] == 0  # our own tip: rebuilt freely
    sh("git", "-C", checkout, "checkout", "-q", "pr/rc25")
    (checkout / "review.txt").write_text("fix\n")
    sh("git", "-C", checkout, "add", "review.txt")
    sh("git", "-C", checkout, "commit", "-q", "-m", "Address review")
    fix = sh("git", "-C", checkout, "rev-parse", "HEAD").stdout.strip()
    code, _, err = run(capsys, *argv)
    assert code == 3 and "is checked out" in err
    sh("git", "-C", checkout, "checkout", "-q", "main")
    before = state_of(checkout)
    code, _, err = run(capsys, *argv)
    assert (code, err.count("\n")) == (3, 1), err
    assert f"{fix[:12]} (Address review), which make pr did not make" in err
    assert state_of(checkout) == before


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_two_concurrent_applies_one_waits_then_refuses_naming_the_holder(capsys, checkout, monkeypatch):
    """#11.16: two concurrent applies on one checkout corrupted each other."""
    monkeypatch.setenv("PATCHKIT_LOCK_WAIT", "0.3")
    repo = Repo(checkout)
    entered, release = threading.Event(), threading.Event()

    def holder():
        with lock.hold(repo.common_path(lock.NAME), "apply rc25", str(checkout)):
            entered.set()
            release.wait(10)
    t = threading.Thread(target=holder)
    t.start()
    entered.wait(5)
    before = state_of(checkout)
    started = time.monotonic()
    for argv in (["apply", "--target", "main"], ["unapply", "--target", "main"], ["dco", "--branch", "main", "--fix"],
                 ["export", "--target", "main"]):
        code, _, err = run(capsys, argv[0], "--src", str(checkout), *argv[1:])
        assert (code, err.count("\n")) == (3, 1), err
        assert f"pid {os.getpid()} (apply rc25) is working on it" in err
    assert time.monotonic() - started >= 4 * 0.3
    release.set()
    t.join()
    assert state_of(checkout) == before
    assert run(capsys, "apply", "--target", "main", "--src", str(checkout))[0] == 0


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_two_real_applies_at_once_end_applied_once(checkout):
    """Two processes, no mocks: one applies, the other waits and finds it applied."""
    cmd = [sys.executable, "-m", "patchkit", "--root", str(ROOT), "apply", "--target", "rc25", "--src", str(checkout)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, PATCHKIT_LOCK_WAIT="60")) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sum("already applied" in o for o, _ in outs) == 1
    assert head(checkout) == "overlay/rc25"


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_clone_that_never_answers_times_out(capsys, tmp_path, monkeypatch):
    """#11.16: --url fd::17 hung, because clone had no timeout (NEVER_ANSWERS is such a URL)."""
    monkeypatch.setenv("PATCHKIT_NETWORK_TIMEOUT", "2")
    # The tests' git config refuses the ext transport, which would fail at once and never reach
    # the timeout: allow it, so that clone really waits on a remote that never answers.
    cfg = tmp_path / "gitconfig"
    cfg.write_text(Path(os.environ["GIT_CONFIG_GLOBAL"]).read_text() + '[protocol "ext"]\n\tallow = always\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    src = tmp_path / "never"
    started = time.monotonic()
    code, _, err = run(capsys, "apply", "--target", "rc25", "--src", str(src), "--url", NEVER_ANSWERS)
    assert 2 <= time.monotonic() - started < 30
    assert code == 4 and err.count("\n") == 1, err
    assert "did not complete in 2 s (PATCHKIT_NETWORK_TIMEOUT)" in err, err
    assert not src.exists()


def test_delta_refuses_an_absolute_symlink_on_a_touched_path(capsys, checkout, tmp_path):
    """#11.11: delta ended in exit 70 when a touched path is an absolute symlink upstream."""
    sh("git", "-C", checkout, "checkout", "-q", "v1.3.0rc25")
    f = checkout / "tensorrt_llm/_torch/pyexecutor/_util.py"
    f.unlink()
    f.symlink_to("/etc/hostname")
    sh("git", "-C", checkout, "add", "-A")
    sh("git", "-C", checkout, "commit", "-q", "-m", "an absolute link")
    sh("git", "-C", checkout, "tag", "-f", "v1.3.0rc25")
    sh("git", "-C", checkout, "checkout", "-q", "main")
    before = state_of(checkout)
    code, _, err = run(capsys, "delta", "--target", "rc25", "--src", str(checkout), "--report", str(tmp_path / "r.json"))
    assert (code, err.count("\n")) == (2, 1), err
    assert "is a symlink" in err and state_of(checkout) == before


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_delta_of_a_set_without_tests_only_keys_measures_the_same(capsys, checkout, tmp_path):
    """#11.11: a test file added by a patch without tests_only ended in exit 70. Since #26 a
    patch's files decide whether it only adds tests (its test part goes into the tree without
    the fix), so a set without the keys measures what the set declares."""
    from helpers import copy_root
    root = copy_root(tmp_path)
    meta = root / "patches" / "rc25" / "patchset.yaml"
    meta.write_text(meta.read_text().replace("    tests_only: true\n", ""))
    assert "tests_only:" not in meta.read_text()
    code = main(["--root", str(root), "delta", "--target", "rc25", "--src", str(checkout),
                 "--report", str(tmp_path / "r.json")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "internal error" not in err and "matches the declared delta" in out


def _trace(inj, argv) -> list[str]:
    """The git commands a run of argv makes, in order (as the fault injector counts them)."""
    log = inj.counter.parent / "trace"
    os.environ["GIT_TRACE"] = str(log)
    try:
        res = inj.run(argv)
    finally:
        del os.environ["GIT_TRACE"]
    assert res.code == 0, res.stderr
    cmds = [line.split("trace: built-in: git ", 1)[1] for line in log.read_text().splitlines()
            if "trace: built-in: git " in line]
    log.unlink()
    return cmds


@pytest.mark.parametrize("command, failing", tiered(("apply", "symbolic-ref"), ("unapply", "update-ref"),
                                                    ("apply", "cat-file"), ("unapply", "symbolic-ref"),
                                                    ("unapply", "rev-parse --verify")))
def test_a_failing_git_call_is_never_ignored(checkout, tmp_path, command, failing):
    """#11.5: git exit codes were ignored: a failed symbolic-ref left HEAD detached after unapply,
    a failed read of waives.txt dropped the waiver commit (apply exit 0), a failed rev-parse in
    unapply printed 'branch removed' and left the branch. Every call of that kind fails in turn:
    the run either ends as a clean run does, or refuses with one line and changes nothing."""
    inj = Injector(tmp_path)
    argv = [command, "--target", "rc25", "--src", str(checkout)]
    template = tmp_path / "template"
    shutil.copytree(checkout, template, symlinks=True)
    if command == "unapply":
        assert inj.run(["apply", "--target", "rc25", "--src", str(template)]).code == 0
    clean = tmp_path / "clean"
    shutil.copytree(template, clean, symlinks=True)
    cmds = _trace(inj, [command, "--target", "rc25", "--src", str(clean)])
    reference = state_of(clean)
    points = [i + 1 for i, c in enumerate(cmds) if c.startswith(failing)]
    assert points, cmds
    for n in points:
        shutil.rmtree(checkout)
        shutil.copytree(template, checkout, symlinks=True)
        before = state_of(checkout)
        res = inj.run(argv, n, "fail")
        after = state_of(checkout)
        after["worktrees"] = after["worktrees"].replace(str(checkout), str(clean))
        if res.code == 0:
            assert same(after, reference), (n, cmds[n - 1])
        else:
            assert res.code not in (70,) and res.stderr.count("\n") == 1, (n, res.stderr)
            assert same(state_of(checkout), before), (n, cmds[n - 1], res.stderr)

"""make apply THREEWAY=keep: a conflict left as a real `git am -3` session (#33 item 3).

THREEWAY=1 was all or nothing ("left 1 conflict(s)"): nothing was left to resolve, and by hand
`git am -3` failed ("could not build fake ancestor": the patches carry no index lines) while a
plain `git am` stripped "[#19514][fix]" from the subjects. Here upstream edits a line our hunk
removes, which no 3-way merge resolves: apply stops in the middle of git's own am session,
markers in the file, the next commands printed; they run as printed, and a refused command
says how to finish or abandon the session.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from patchkit import apply as apply_mod, patchset
from patchkit.cli import main
from patchkit.errors import Conflict
from helpers import REWORD, REWRITE, ROOT, UTIL, copy_root, sh, state_of, upstream_moves

REMOVED, REWRITTEN, _ = REWRITE
MARKERS = re.compile(r"^<<<<<<< [^\n]*\n(.*?)^=======\n(.*?)^>>>>>>> [^\n]*\n", re.M | re.S)


# Upstream's next commit, a few days after the sets were verified (radar's default SINCE is main
# as of that day: the commit is in its range).
LATER = "2026-12-03T12:00:00+00:00"


def conflicting(upstream: Path, tmp_path: Path) -> Path:
    """Upstream rewrites a line the fix removes (neither a plain nor a 3-way apply can work); a user's clone."""
    upstream_moves(upstream, REWRITE, LATER)
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    return clone


def resolve_with_the_patch(checkout: Path) -> None:
    """A person's edit: each conflict resolved to the patch's side."""
    util = checkout / UTIL
    text, n = MARKERS.subn(lambda m: m.group(2), util.read_text())
    assert n >= 1
    util.write_text(text)


def run_line(line: str, env=None) -> subprocess.CompletedProcess:
    """A printed `run:` line, as the user pastes it into a shell."""
    return subprocess.run(["bash", "-c", line], cwd=ROOT, text=True, capture_output=True, env=env)


def hints(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^run: (.+?)(?: \([^()]*\))?$", text, re.M)]


def test_keep_stops_in_a_real_git_am_session_with_markers_and_the_next_steps(upstream, tmp_path, capsys):
    clone = conflicting(upstream, tmp_path)
    code = main(["--root", str(ROOT), "apply", "--target", "main", "--src", str(clone), "--threeway", "keep"])
    out, err = capsys.readouterr()
    assert code == 1 and "exit 1 is apply's verdict" in err and err.count("\n") == 1, err
    assert sh("git", "-C", clone, "symbolic-ref", "--short", "HEAD").stdout.strip() == "overlay/main"
    assert sh("git", "-C", clone, "status", "--porcelain").stdout == f"UU {UTIL}\n"
    ours, theirs = MARKERS.search((clone / UTIL).read_text()).groups()
    assert REWRITTEN in ours and REMOVED not in theirs
    # git's own session: it shows the patch it stopped at, with upstream's subject kept whole
    current = sh("git", "-C", clone, "am", "--show-current-patch=diff").stdout
    assert current.startswith(f"diff --git a/{UTIL}") and re.search(r"^index [0-9a-f]{40}\.\.[0-9a-f]{40}", current, re.M)
    assert f"the git am -3 session stopped at patch 1 of {len(patchset.load(ROOT, 'main').patches)} (0001-" in out
    assert f"\n  {UTIL}\n" in out
    finish, abandon = hints(out)
    assert finish == (f"git -C {clone} add -- {UTIL} && git -C {clone} am --continue && "
                      f"patchkit --root {ROOT} export --target main --src {clone}")
    assert abandon == f"git -C {clone} am --abort && patchkit --root {ROOT} unapply --target main --src {clone}"


@pytest.mark.slow  # make test keeps the session's start, its refusals and its abandon line
def test_a_resolved_session_exported_applies_plainly_check_0_radar_nothing_to_do_0(upstream, tmp_path):
    """The acceptance scenario, through make as a user types it: apply THREEWAY=keep stops with
    markers; an editor resolves them; the printed line (git add, git am --continue, make export)
    runs as printed; then the set applies plainly: make check exits 0, make radar says "nothing
    to do" and exits 0; a second make apply rebuilds the branch from the set, waivers included."""
    clone = conflicting(upstream, tmp_path)
    root = copy_root(tmp_path)
    env = make_env(root, tmp_path)
    res = run_line(f"make -s apply TRTLLM=main TRTLLM_SRC={clone} THREEWAY=keep", env)
    assert res.returncode == 2 and "Error 1" in res.stderr, res.stderr  # make's 2 for the CLI's 1
    finish, _abandon = hints(res.stdout)
    assert finish.endswith(f"&& make export TRTLLM=main TRTLLM_SRC={clone}")
    resolve_with_the_patch(clone)
    done = run_line(finish, {**env, "GIT_EDITOR": "true"})
    assert done.returncode == 0, done.stderr
    assert "changed: 0001-" in done.stdout
    subjects = sh("git", "-C", clone, "log", "--format=%s", "origin/main..overlay/main").stdout
    assert "[#19514][fix] Size the cross KV pool" in subjects  # git am kept upstream's subject whole
    check = run_line(f"make -s check TRTLLM_SRC={clone}", env)
    assert check.returncode == 0 and re.search(r"^main +main +\w+ +applies cleanly$", check.stdout, re.M), check.stdout
    radar = run_line(f"make -s radar TRTLLM=main TRTLLM_SRC={clone}", env)
    assert radar.returncode == 0, radar.stdout + radar.stderr
    # export recorded the commit the resolved branch was built on (upstream's new main) as upstream.base:
    # radar starts there, and nothing is to be done
    base = sh("git", "-C", clone, "rev-parse", "origin/main").stdout.strip()
    assert f"base: {base}" in (root / "patches" / "main" / "patchset.yaml").read_text()
    assert re.search(r"^verdict: nothing to do", radar.stdout, re.M) and "(upstream.base)" in radar.stdout
    again = run_line(f"make -s apply TRTLLM=main TRTLLM_SRC={clone}", env)
    assert again.returncode == 0, again.stderr
    assert "rebuilt: overlay/main was apply's own" in again.stdout and "applied" in again.stdout


def make_env(root: Path, tmp_path: Path) -> dict:
    """A user's shell: patchkit on PATH, make's setup done, the project's sets a copy of the test's own."""
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                PATCHKIT_ROOT=str(root), SETUP="", PATCHKIT=f"{sys.executable} -m patchkit", BUILD=str(tmp_path / "build"))


def test_abandoning_as_printed_leaves_the_checkout_as_it_was(upstream, tmp_path, capsys):
    """While the session is under way, apply, unapply and export refuse with both ways on
    (finish it, or abandon it); the abandon line, run as printed, puts everything back."""
    clone = conflicting(upstream, tmp_path)
    before = state_of(clone)
    assert main(["--root", str(ROOT), "apply", "--target", "main", "--src", str(clone), "--threeway", "keep"]) == 1
    first = capsys.readouterr().out
    _finish, abandon = hints(first)
    # THREEWAY=keep again (a rerun after a kill at its very end): the same session, said again,
    # nothing changed (the exhaustive fault sweep found it refused its own session, exit 3)
    during = state_of(clone)
    assert main(["--root", str(ROOT), "apply", "--target", "main", "--src", str(clone), "--threeway", "keep"]) == 1
    again = capsys.readouterr().out
    assert "under way on overlay/main" in again and "nothing changed" in again and hints(again) == hints(first)
    assert f"stopped at patch 1 of {len(patchset.load(ROOT, 'main').patches)} (0001-" in again and state_of(clone) == during
    for argv in (["apply", "--target", "main", "--src", str(clone)], ["unapply", "--target", "main", "--src", str(clone)],
                 ["export", "--target", "main", "--src", str(clone)]):
        during = state_of(clone)
        assert main(["--root", str(ROOT), *argv]) == 3
        out, err = capsys.readouterr()
        assert "git am -3 session make apply left for main is under way" in err and err.count("\n") == 1
        assert f"git -C {clone} am --continue &&" in err and f"git -C {clone} am --abort &&" in out
        assert state_of(clone) == during
    res = run_line(abandon, make_env(ROOT, tmp_path))
    assert res.returncode == 0, res.stderr
    after = state_of(clone)
    assert {k: v for k, v in after.items() if k != "index"} == {k: v for k, v in before.items() if k != "index"}


@pytest.mark.slow  # make test keeps the session's start, its refusals and its abandon line
def test_a_finished_session_not_yet_exported_is_never_dropped(upstream, tmp_path, capsys):
    """After git am --continue, the branch holds the resolution: unapply and apply refuse to
    drop it until make export has written it into the set (then both may: it is the set)."""
    clone = conflicting(upstream, tmp_path)
    root = copy_root(tmp_path)
    assert main(["--root", str(root), "apply", "--target", "main", "--src", str(clone), "--threeway", "keep"]) == 1
    capsys.readouterr()
    resolve_with_the_patch(clone)
    sh("git", "-C", clone, "add", "-A")
    sh("git", "-C", clone, "-c", "core.editor=true", "am", "--continue")
    before = state_of(clone)
    for command in ("unapply", "apply"):
        assert main(["--root", str(root), command, "--target", "main", "--src", str(clone)]) == 3
        err = capsys.readouterr().err
        assert "holds the series as resolved in the git am session" in err and "branch -m overlay/main" in err
        assert f"run: patchkit --root {root} export --target main --src {clone}" in err
        assert state_of(clone) == before
    assert main(["--root", str(root), "export", "--target", "main", "--src", str(clone)]) == 0
    assert main(["--root", str(root), "unapply", "--target", "main", "--src", str(clone)]) == 0
    assert sh("git", "-C", clone, "symbolic-ref", "--short", "HEAD").stdout.strip() == "main"
    assert sh("git", "-C", clone, "rev-parse", "-q", "--verify", "overlay/main", check=False).returncode == 1


def test_a_failing_git_am_puts_the_checkout_back(upstream, tmp_path, monkeypatch):
    """A failed step inside the transaction (git am itself failing) leaves the checkout as it was:
    no session, no branch, no record."""
    clone = conflicting(upstream, tmp_path)
    before = state_of(clone)
    from patchkit.git import GitError, Repo

    def failing(self, patches):
        raise GitError(["git", "am"], 128, "", "fatal: injected", str(self.path))
    monkeypatch.setattr(Repo, "am_three_way", failing)
    with pytest.raises(GitError):
        apply_mod.apply(patchset.load(ROOT, "main"), src=clone, threeway="keep")
    assert state_of(clone) == before
    assert not (clone / ".git" / "rebase-apply").exists()


def test_the_branch_of_an_earlier_apply_is_rebuilt_and_radars_hint_runs_as_printed(upstream, tmp_path):
    """#33 item 3: radar's printed `make apply ... THREEWAY=1 && make export ...` failed when
    overlay/<set> existed from last week's apply, the normal weekly state ("already exists and
    was built from another version of the patch set or another base"). Apply rebuilds its own
    untouched branch; the line runs as printed, and check is clean afterwards."""
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    root = copy_root(tmp_path)
    env = make_env(root, tmp_path)
    assert run_line(f"make -s apply TRTLLM=main TRTLLM_SRC={clone}", env).returncode == 0
    old = sh("git", "-C", clone, "rev-parse", "overlay/main").stdout.strip()
    upstream_moves(upstream, REWORD, LATER)
    sh("git", "-C", clone, "fetch", "-q")
    radar = run_line(f"make -s radar TRTLLM=main TRTLLM_SRC={clone}", env)
    assert radar.returncode == 2 and "verdict: 0001-" in radar.stdout and "3-way merges it" in radar.stdout
    [line] = hints(radar.stdout)
    assert line == (f"make apply TRTLLM=main TRTLLM_SRC={clone} THREEWAY=1 && "
                    f"make export TRTLLM=main TRTLLM_SRC={clone}")
    ran = run_line(line, env)
    assert ran.returncode == 0, ran.stderr
    assert f"rebuilt: overlay/main was apply's own from an earlier apply ({old[:12]})" in ran.stdout
    assert sh("git", "-C", clone, "symbolic-ref", "--short", "HEAD").stdout.strip() == "overlay/main"
    check = run_line(f"make -s check TRTLLM_SRC={clone}", env)
    assert check.returncode == 0, check.stdout + check.stderr
    # ... and unapply still returns to where the first apply started
    assert run_line(f"make -s unapply TRTLLM=main TRTLLM_SRC={clone}", env).returncode == 0
    assert sh("git", "-C", clone, "symbolic-ref", "--short", "HEAD").stdout.strip() == "main"


def test_a_branch_with_the_users_commits_is_never_rebuilt(checkout, tmp_path, capsys):
    """The other half: a commit of the user's on overlay/<set> stops apply THREEWAY=1, naming it
    and the command that keeps it, and nothing changes."""
    root = copy_root(tmp_path)
    assert main(["--root", str(root), "apply", "--target", "main", "--src", str(checkout)]) == 0
    (checkout / "mine.txt").write_text("my work\n")
    sh("git", "-C", checkout, "add", "mine.txt")
    sh("git", "-C", checkout, "commit", "-qm", "My own work")
    meta = root / "patches" / "main" / "patchset.yaml"
    meta.write_text(meta.read_text() + "# another version of the set\n")
    capsys.readouterr()
    before = state_of(checkout)
    assert main(["--root", str(root), "apply", "--target", "main", "--src", str(checkout), "--threeway"]) == 3
    err = capsys.readouterr().err
    assert "My own work" in err and "branch -m overlay/main overlay/main-mine" in err
    keep = re.search(r"\((git -C .+ branch -m overlay/main overlay/main-mine)\)", err).group(1)
    assert state_of(checkout) == before
    assert sh(*shlex.split(keep)).returncode == 0


@pytest.mark.slow  # make test keeps the rebuild under THREEWAY=1 (radar's refresh line) above
def test_radars_rework_line_runs_as_printed_over_last_weeks_branch(upstream, tmp_path):
    """radar's way on for a conflict, `make apply ... THREEWAY=keep`, run as printed where last
    week's apply left overlay/main: the branch is rebuilt into the session; abandoning it as
    printed goes back past both, to where the first apply started."""
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    root = copy_root(tmp_path)
    env = make_env(root, tmp_path)
    start = sh("git", "-C", clone, "rev-parse", "HEAD").stdout.strip()
    assert run_line(f"make -s apply TRTLLM=main TRTLLM_SRC={clone}", env).returncode == 0
    upstream_moves(upstream, REWRITE, LATER)
    sh("git", "-C", clone, "fetch", "-q")
    radar = run_line(f"make -s radar TRTLLM=main TRTLLM_SRC={clone}", env)
    assert radar.returncode == 2 and "3-way does not merge it either" in radar.stdout, radar.stdout
    [line] = hints(radar.stdout)
    assert line == f"make apply TRTLLM=main TRTLLM_SRC={clone} THREEWAY=keep"
    kept = run_line(line, env)
    assert kept.returncode == 2 and "rebuilt: overlay/main was apply's own" in kept.stdout, kept.stdout + kept.stderr
    assert sh("git", "-C", clone, "status", "--porcelain").stdout == f"UU {UTIL}\n"
    _finish, abandon = hints(kept.stdout)
    assert run_line(abandon, env).returncode == 0
    assert sh("git", "-C", clone, "symbolic-ref", "--short", "HEAD").stdout.strip() == "main"
    assert sh("git", "-C", clone, "rev-parse", "HEAD").stdout.strip() == start
    assert sh("git", "-C", clone, "status", "--porcelain").stdout == ""
    assert sh("git", "-C", clone, "rev-parse", "-q", "--verify", "overlay/main", check=False).returncode == 1

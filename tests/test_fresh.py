"""Always against fresh upstream (#33 item 4): check, radar, apply, delta and backport fetch the
set's ref first and say which commit they judged and when it was fetched; FETCH=0 uses what is
there; an origin that cannot be reached is one line, and the command carries on.

The bug: after upstream moved, make check said "applies cleanly" and make radar "nothing to
do", both against an old origin/main; only a hand-typed git fetch made them see the change.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from patchkit import check as check_mod, patchset
from patchkit.cli import main
from patchkit.git import Repo, partial_clone
from helpers import NEVER_ANSWERS, ROOT, needs_hook_tools, sh, state_of

UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"
# A line main's first patch removes: upstream editing it breaks that hunk.
REMOVED = "        max_seq_len = fallback_max_seq_len or self._max_seq_len\n"


def git(repo: Path, *args: str) -> str:
    return sh("git", "-C", repo, *args).stdout.strip()


def upstream_commit(upstream: Path, path: str, old: str, new: str, message: str) -> str:
    """A new commit on upstream's main that replaces old by new in path; its id."""
    f = upstream / path
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new, 1))
    sh("git", "-C", upstream, "commit", "-q", "-am", message)
    return git(upstream, "rev-parse", "main")


def breaking_commit(upstream: Path) -> str:
    return upstream_commit(upstream, UTIL, REMOVED, REMOVED.replace("self._max_seq_len", "self._max_seq_len or 0"),
                           "Guard a missing max_seq_len")


def harmless_commit(upstream: Path) -> str:
    return upstream_commit(upstream, "README.md", "\n", "\n\n", "Space out the README")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["--root", str(ROOT), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_check_sees_a_new_upstream_commit_without_a_manual_fetch(upstream, checkout, capsys):
    """The acceptance of #33 item 4: after an upstream commit that breaks a hunk, make check with
    no fetch by hand reports the conflict and names the commit it judged; the user's branches,
    HEAD, index and files stay as they were (only origin/main, a remote-tracking ref, moves)."""
    before = state_of(checkout)
    new = breaking_commit(upstream)
    code, out, err = run(capsys, "check", "--src", str(checkout))
    assert code != 0, out  # a conflict: never "applies cleanly" against an old origin/main
    assert re.search(rf"^main +main +{new[:12]} +conflicts", out, re.M), out
    assert f"main: upstream origin/main {new[:12]}, fetched now, moved from " in out
    assert "rc25: upstream v1.3.0rc25 " in out and "a tag already here: not fetched (tags do not move)" in out
    after = state_of(checkout)
    assert git(checkout, "rev-parse", "refs/remotes/origin/main") == new
    assert {k: v for k, v in after.items() if k != "refs"} == {k: v for k, v in before.items() if k != "refs"}
    moved = set(after["refs"].splitlines()) ^ set(before["refs"].splitlines())
    # origin/HEAD is the symbolic ref to origin/main: it follows
    assert {line.split()[0] for line in moved} <= {"refs/remotes/origin/main", "refs/remotes/origin/HEAD"}, moved


def test_offline_check_says_the_view_is_from_the_last_fetch_and_carries_on(upstream, checkout, tmp_path, capsys):
    """An origin that cannot be reached (here: its file:// path renamed between runs) is one line
    saying the view is from the last fetch, and check judges what is there (exit 0, not an
    error); FETCH=0 (--no-fetch) fetches nothing and says as of when its view is."""
    code, out, _ = run(capsys, "check", "--src", str(checkout))
    assert code == 0 and "main: upstream origin/main " in out and ", fetched now" in out
    [record] = (checkout / ".git" / "patchkit" / "fetched").rglob("main.json")
    at = json.loads(record.read_text())["at"]
    stamp = f"{at[:10]} {at[11:16]} UTC"
    upstream.rename(tmp_path / "gone")
    code, out, err = run(capsys, "check", "--src", str(checkout))
    old = git(checkout, "rev-parse", "refs/remotes/origin/main")
    assert code == 0 and err == "", err
    [line] = [ln for ln in out.splitlines() if ln.startswith("main: upstream")]
    assert line == (f"main: upstream origin/main {old[:12]}: origin could not be reached ('{upstream}' does not "
                    f"appear to be a git repository), so the view is from {stamp}, the last fetch"), line
    assert re.search(r"^main +main +\w{12} +applies cleanly", out, re.M)
    code, out, _ = run(capsys, "check", "--src", str(checkout), "--no-fetch")
    assert code == 0 and f"main: upstream origin/main {old[:12]}, not fetched (as asked); last fetched {stamp}" in out


def test_a_ref_that_is_not_there_and_cannot_be_fetched_is_an_error(upstream, tmp_path, capsys):
    """Offline carries on only with what is there: a ref the checkout lacks is exit 4, naming the
    command that fetches it once origin answers."""
    src = tmp_path / "clone"
    sh("git", "clone", "-q", "--no-tags", "--single-branch", "--branch", "main", upstream.as_uri(), src)
    upstream.rename(tmp_path / "gone")
    code, out, err = run(capsys, "apply", "--target", "rc25", "--src", str(src))
    assert code == 4 and err.count("\n") == 1, err
    assert "v1.3.0rc25 is not in" in err and "origin could not be reached" in err
    assert f"git -C {src} fetch origin tag v1.3.0rc25" in err


@pytest.mark.slow  # make test keeps the offline check above; this is the deadline's case
def test_an_origin_that_never_answers_is_offline_after_the_stall_deadline(checkout, tmp_path, monkeypatch, capsys):
    """A fetch that receives nothing ends at PATCHKIT_STALL_TIMEOUT and counts as offline: the
    command carries on with what is there, and says so."""
    monkeypatch.setenv("PATCHKIT_STALL_TIMEOUT", "1")
    cfg = tmp_path / "gitconfig"
    cfg.write_text(Path(os.environ["GIT_CONFIG_GLOBAL"]).read_text() + '[protocol "ext"]\n\tallow = always\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    sh("git", "-C", checkout, "remote", "set-url", "origin", NEVER_ANSWERS)
    code, out, err = run(capsys, "check", "--src", str(checkout), "--target", "main")
    assert code == 0, err
    assert "origin could not be reached (origin (ext::sleep 60) stalled: no data for 1 s" in out, out


def test_a_partial_clone_fetches_one_commit_and_its_trees_and_keeps_its_history(upstream, tmp_path, capsys):
    """apply's partial clone stays as shallow and blob-less as it was made: a moved ref brings
    one commit and its trees (blobs on demand), and a ref that did not move brings nothing and
    cuts no history (a `fetch --depth 1` would undo what radar deepened)."""
    ps = patchset.load(ROOT, "main")
    src = tmp_path / "partial"
    partial_clone(upstream.as_uri(), src, "main", ps.sparse_paths, depth=3)
    repo = Repo(src)
    repo.config_set("remote.origin.uploadpack", "git -c uploadpack.allowFilter=true -c "
                    "uploadpack.allowAnySHA1InWant=true upload-pack")
    deep = git(src, "rev-list", "--count", "origin/main")
    assert int(deep) == 3
    code, out, _ = run(capsys, "check", "--src", str(src), "--target", "main")
    assert code == 0 and ", fetched now" in out and "moved from" not in out
    assert git(src, "rev-list", "--count", "origin/main") == deep  # history kept
    packs = set((src / ".git" / "objects" / "pack").glob("*.pack"))
    new = harmless_commit(upstream)
    code, out, _ = run(capsys, "check", "--src", str(src), "--target", "main")
    assert code == 0 and f"main: upstream origin/main {new[:12]}, fetched now, moved from " in out
    [pack] = set((src / ".git" / "objects" / "pack").glob("*.pack")) - packs
    got = sh("git", "-C", src, "verify-pack", "-v", pack.with_suffix(".idx")).stdout
    kinds = [line.split()[1] for line in got.splitlines() if re.match(r"^[0-9a-f]{40} ", line)]
    assert kinds.count("commit") == 1 and "blob" not in kinds and "tree" in kinds
    assert git(src, "rev-parse", "--is-shallow-repository") == "true"


def test_no_fetch_is_said_as_fetch_0_through_make():
    """FETCH=0 is --no-fetch: a hint of a run with FETCH=0 says FETCH=0 again, never FETCH=1."""
    from patchkit.cli.table import REGISTRY
    from patchkit.errors import Hint
    from patchkit.text.voice import Voice
    options = {c.name: {a.dest: (a.flag, a.make) for a in c.args} for c in REGISTRY.values()}
    said = Voice(True, "check", {"src": "build/x", "no_fetch": True}, options)
    assert said.hint(Hint.radar("main")) == "run: make radar TRTLLM=main TRTLLM_SRC=build/x FETCH=0 " \
                                            "(since which upstream commit the set changed)"
    flags = Voice(False, "check", {"src": "build/x", "no_fetch": True}, options)
    assert flags.hint(Hint.radar("main")).startswith("run: patchkit radar --target main --src build/x --no-fetch")


@pytest.mark.slow  # through make: make test keeps the CLI's acceptance case above
def test_make_check_and_radar_judge_fresh_upstream(upstream, checkout, tmp_path):
    """make check and make radar, as a user runs them, after an upstream commit that breaks a hunk."""
    new = breaking_commit(upstream)
    env = {"SETUP": "", "PATCHKIT": f"{sys.executable} -m patchkit"}
    res = subprocess.run(["make", "-s", "-C", str(ROOT), "check", f"TRTLLM_SRC={checkout}",
                          *[f"{k}={v}" for k, v in env.items()]], capture_output=True, text=True)
    assert res.returncode != 0 and f"main: upstream origin/main {new[:12]}, fetched now" in res.stdout, res.stdout
    res = subprocess.run(["make", "-s", "-C", str(ROOT), "radar", "TRTLLM=main", f"TRTLLM_SRC={checkout}",
                          f"BUILD={tmp_path / 'build'}", "FETCH=0", *[f"{k}={v}" for k, v in env.items()]],
                         capture_output=True, text=True)
    assert f"upstream: origin/main {new[:12]}, not fetched (as asked)" in res.stdout, res.stdout + res.stderr


@pytest.fixture
def transfers(monkeypatch) -> list[list[str]]:
    """Every clone, fetch and ls-remote the git facade runs, as its arguments."""
    import patchkit.git.transfer as transfer
    calls: list[list[str]] = []
    real = transfer._transfer

    def counting(runner, args, what, **kw):
        calls.append([str(a) for a in args])
        return real(runner, args, what, **kw)
    monkeypatch.setattr(transfer, "_transfer", counting)
    return calls


def test_one_fetch_per_ref_and_none_for_a_tag_that_is_here(upstream, checkout, transfers):
    """One fetch per ref per command, however many sets share it; a tag already here is not
    fetched (tags do not move)."""
    new = harmless_commit(upstream)
    res = check_mod.check([patchset.load(ROOT, "rc25")], src=checkout)
    assert res[0].view.how == "tag" and transfers == []
    twice = check_mod.check([patchset.load(ROOT, "main")] * 2, src=checkout)
    assert [(r.view.how, r.base) for r in twice] == [("fetched", new)] * 2
    assert transfers == [["fetch", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no", "origin",
                          "+refs/heads/main:refs/remotes/origin/main"]]


@pytest.mark.slow  # make test keeps check's single fetch above
def test_apply_delta_and_radar_fetch_the_ref_once_and_name_the_commit(upstream, checkout, tmp_path, capsys,
                                                                      transfers):
    new = harmless_commit(upstream)
    for argv in (["apply", "--target", "main", "--src", str(checkout)],
                 ["delta", "--target", "rc25", "--src", str(checkout), "--report", str(tmp_path / "d.json")],
                 ["radar", "--target", "main", "--src", str(checkout), "--out", str(tmp_path / "radar")]):
        transfers.clear()
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        if argv[0] == "delta":  # a tag
            tag = git(checkout, "rev-parse", "v1.3.0rc25^{commit}")[:12]
            assert f"upstream: v1.3.0rc25 {tag}, a tag already here: not fetched" in out and transfers == []
            continue
        assert f"origin/main {new[:12]}, fetched now" in out, out
        # radar fetches history of its own (SINCE's commit); of the set's ref, one fetch
        assert [c for c in transfers if any("refs/heads/main" in a for a in c)] == [
            ["fetch", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no", "origin",
             "+refs/heads/main:refs/remotes/origin/main"]], transfers
    assert f"Upstream: origin/main {new[:12]}, fetched now." in (tmp_path / "radar" / "main.md").read_text()


WAIVES = "tests/integration/test_lists/waives.txt"
WAIVED = "unittest/_torch/executor/test_cross_kv_cache_layout.py SKIP (https://nvbugs/6900001)\n"


def test_waivers_sees_an_upstream_waiver_without_a_manual_fetch(upstream, checkout, capsys):
    """An attack of #33 item 4: upstream waived the set's test on main; make waivers judged the
    checkout's old origin/main and said "runs (no line waives it)", exit 0, not saying how old
    its view was. It fetches the set's ref first, as check does, and says which commit it judged;
    FETCH=0 judges what is there and says so."""
    (upstream / WAIVES).write_text((upstream / WAIVES).read_text() + WAIVED)
    sh("git", "-C", upstream, "commit", "-q", "-am", "Waive the cross KV test")
    new = git(upstream, "rev-parse", "main")
    old = git(checkout, "rev-parse", "origin/main")
    code, out, err = run(capsys, "waivers", "--target", "main", "--src", str(checkout), "--no-fetch")
    assert code == 0 and f"upstream: origin/main {old[:12]}, not fetched (as asked)" in out, out + err
    code, out, err = run(capsys, "waivers", "--target", "main", "--src", str(checkout))
    assert code == 0, err
    assert f"upstream: origin/main {new[:12]}, fetched now, moved from {old[:12]}" in out, out
    assert f"test_cross_kv_cache_layout.py: waived by line" in out and WAIVED.strip() in out


@needs_hook_tools
def test_lint_judges_upstreams_hooks_as_they_are_now(upstream, checkout, tmp_path, capsys):
    """An attack of #33 item 4: upstream changed its hooks on main (a rev bumped, a hook's
    files); make lint judged the checkout's old origin/main, its old hooks, and said nothing of
    how old its view was. It fetches first and names the commit it judged."""
    config = upstream / ".pre-commit-config.yaml"
    hook = "    -   id: codespell\n"
    assert hook in config.read_text()
    config.write_text(config.read_text().replace(hook, hook + "        files: ^nothing-upstream-checks$\n", 1))
    sh("git", "-C", upstream, "commit", "-q", "-am", "Codespell checks nothing")
    new = git(upstream, "rev-parse", "main")
    code, out, err = run(capsys, "lint", "--target", "main", "--src", str(checkout), "--report",
                         str(tmp_path / "lint.json"))
    assert f"upstream: origin/main {new[:12]}, fetched now" in out, out + err
    [ran] = [line for line in out.splitlines() if line.startswith("ran: ")]
    assert "codespell" not in ran and "ruff" in ran, out

"""make backport's refusals say what is wrong in the user's terms (#31 items 4, 6, 7, 8), each
reproduced on a copy of the miniature with a pull request pushed as refs/pull/<n>/head:
one line on stderr, the documented exit code, patches/ and the checkout unchanged."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import copy_root, push_pr, sh, state_of, tiered
from patchkit import cli, patchset

SCHEDULER = "tensorrt_llm/_torch/pyexecutor/scheduler.py"


def run(capsys, root: Path, checkout: Path, *argv: str) -> tuple[int, str, str]:
    before = {p.name: p.read_bytes() for p in (root / "patches" / "rc25").iterdir()}, state_of(checkout)
    code = cli.main(["--root", str(root), "backport", "--target", "rc25", "--src", str(checkout), *argv])
    out, err = capsys.readouterr()
    if code:
        assert err.count("\n") == 1, err
        assert ({p.name: p.read_bytes() for p in (root / "patches" / "rc25").iterdir()}, state_of(checkout)) == before
    return code, out, err


def test_a_commit_origin_lacks_is_not_found(capsys, tmp_path, upstream, checkout):
    """#31 item 4: COMMIT=<40 hex> that origin lacks exited 3 ("would not apply") with git's raw
    "not our ref"; the docs promise exit 4, not found."""
    missing = "0123456789abcdef0123456789abcdef01234567"
    code, _out, err = run(capsys, copy_root(tmp_path), checkout, "--commit", missing)
    assert (code, err) == (4, f"patchkit: error: --commit: origin ({upstream.as_uri()}) has no commit {missing}\n")


def test_an_empty_pr_commit_is_said_to_change_nothing(capsys, tmp_path, upstream, checkout):
    """#31 item 6: an empty PR commit was "not a git format-patch file (no blank line after the headers)"."""
    sha = push_pr(upstream, "4243", lambda work: "[None][fix] Nothing at all")
    code, _out, err = run(capsys, copy_root(tmp_path), checkout, "--pr", "4243")
    assert code == 2, err
    assert f"pull request 4243's commit {sha[:12]} changes nothing" in err and "format-patch" not in err


def test_a_pr_whose_first_commit_the_ref_has_is_carried_by_its_other_commits(capsys, tmp_path, upstream, checkout):
    """#31 item 7: a PR whose first commit is already in the ref got "retire it from the stack
    first", about a fix that is not in the stack; what helps is COMMIT= for the rest."""
    root = copy_root(tmp_path)
    ours = set(patchset.load(root, "rc25").touched_paths)
    differs = [p for p in sh("git", "-C", upstream, "diff", "--name-only", "v1.3.0rc25", "main", "--",
                             "tensorrt_llm", "tests/unittest").stdout.split() if p not in ours]

    def make(work: Path) -> str:
        # its first commit puts a file back as the release has it: the ref already has that change
        sh("git", "-C", work, "checkout", "v1.3.0rc25", "--", differs[0]) if sh(
            "git", "-C", upstream, "cat-file", "-e", f"v1.3.0rc25:{differs[0]}", check=False).returncode == 0 \
            else sh("git", "-C", work, "rm", "-q", differs[0])
        sh("git", "-C", work, "commit", "-qam", "[None][chore] As the release has it")
        with open(work / SCHEDULER, "a") as fh:
            fh.write("\n\ndef tripled(x):\n    return 3 * x\n")
        return "[None][fix] Tripled"
    second = push_pr(upstream, "4244", make)
    first = sh("git", "-C", upstream, "rev-parse", f"{second}~1").stdout.strip()
    code, _out, err = run(capsys, root, checkout, "--pr", "4244")
    assert code == 3, err
    assert f"pull request 4244's commit {first[:12]}" in err and "is already in v1.3.0rc25" in err
    assert "retire" not in err
    assert err.endswith(f"run: patchkit --root {root} backport --target rc25 --src {checkout} --commit {second}\n")


@pytest.mark.parametrize("where", tiered("--before", "--after"))
def test_placing_a_backport_beside_itself_says_so(capsys, tmp_path, upstream, checkout, where):
    """#31 item 8: BEFORE=<the backport's own id>, re-running backport of a fix already in the
    stack, said "rc25 carries no fix '4245'" while it does."""
    push_pr(upstream, "4245", lambda work: (work / SCHEDULER).write_text(
        (work / SCHEDULER).read_text() + "\n\ndef quadrupled(x):\n    return 4 * x\n") and "[None][fix] Quadrupled")
    root = copy_root(tmp_path)
    assert run(capsys, root, checkout, "--pr", "4245")[0] == 0
    code, _out, err = run(capsys, root, checkout, "--pr", "4245", where, "4245")
    assert code == 2, err
    assert f"{where}: fix 4245 is the one being placed: it cannot go {where[2:]} itself" in err
    assert "carries no fix" not in err

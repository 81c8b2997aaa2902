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

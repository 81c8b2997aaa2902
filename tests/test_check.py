"""make check: what it says about each patch and target, and the exit code CI gates on (#9 items 3-5)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from patchkit import check as check_mod, patchset, series as series_mod
from patchkit.cli import main
from helpers import REWORD, REWRITE, ROOT, sh, state_of, upstream_moves

UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"


def commit_all(repo: Path, message: str) -> None:
    sh("git", "-C", repo, "add", "-A")
    sh("git", "-C", repo, "commit", "-q", "-m", message)


def clone_of(upstream: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), dest)
    sh("git", "-C", dest, "fetch", "-q", "origin", "--tags")
    return dest


def run_check(src: Path, capsys) -> tuple[int, str, str]:
    code = main(["--root", str(ROOT), "check", "--src", str(src)])
    out, err = capsys.readouterr()
    return code, out, err


def rows_of(out: str) -> dict[str, tuple[str, list[str]]]:
    """target -> (verdict, [status of each patch row])."""
    lines = out.splitlines()
    verdicts = {ln.split()[0]: ln.split(None, 3)[3] for ln in lines[1:] if ln and not ln.startswith(" ")
                and ln.split()[0] in ("rc25", "main")}
    statuses = {t: [] for t in verdicts}
    for ln in lines:
        m = re.match(r"^  (\S+)  (\S+\.patch)\s+(applies cleanly|already upstream|needs 3-way|conflicts)", ln)
        if m:
            statuses[m.group(1)].append(m.group(3))
    return {t: (verdicts[t], statuses[t]) for t in verdicts}


@pytest.mark.slow  # make test keeps check's conflict case
def test_hunk_at_an_offset_is_reported_with_line_and_distance(upstream, tmp_path, capsys):
    """Upstream removed 1,200 lines above the method: the hunk still applies, and check says where."""
    util = upstream / UTIL
    lines = util.read_text().splitlines(keepends=True)
    util.write_text("".join(lines[:30] + lines[1230:]))
    commit_all(upstream, "Move helpers out of _util.py")
    src = clone_of(upstream, tmp_path)
    code, out, _err = run_check(src, capsys)
    assert code == 0
    hunk = patchset.load(ROOT, "main").patches[0].files[0].hunks[0]
    now = sh("git", "-C", src, "show", f"origin/main:{UTIL}").stdout.splitlines(keepends=True)
    at = next(i + 1 for i in range(len(now)) if tuple(now[i:i + hunk.old_len]) == hunk.preimage)
    by = hunk.old_start - at
    assert by > 999  # so the thousands separator shows
    assert f"{UTIL} hunk #1 applies at line {at}, {by:,} lines from its header" in out
    assert rows_of(out)["main"] == ("applies cleanly", ["applies cleanly"] * _count("main"))
    from patchkit import apply as apply_mod, apply_text
    res = apply_mod.apply(patchset.load(ROOT, "main"), src=src)
    assert f"at an offset: {res.outcomes[0].patch.name}: {UTIL} hunk #1 applies at line {at}" in apply_text.apply_result(res)


def test_no_offset_is_reported_on_the_faithful_miniature(checkout, capsys):
    code, out, _err = run_check(checkout, capsys)
    assert code == 0 and "from its header" not in out
    for target, (verdict, statuses) in rows_of(out).items():
        assert verdict == "applies cleanly" and statuses == ["applies cleanly"] * _count(target), target


def test_summary_agrees_with_a_patch_already_upstream(upstream, tmp_path, capsys):
    """A target used to read 'applies cleanly' over a patch that reads 'already upstream'; and
    it exited 0 (#33 item 5: only a plain apply of every patch is 0; a patch upstream has is to
    be retired: exit 1, the verdict said on stderr)."""
    ps = patchset.load(ROOT, "main")
    sh("git", "-C", upstream, "am", "-q", ps.patches[0].file)
    src = clone_of(upstream, tmp_path)
    code, out, err = run_check(src, capsys)
    assert code == 1 and "exit 1 is check's verdict" in err and "already upstream" in err
    verdict, statuses = rows_of(out)["main"]
    assert statuses == ["already upstream"] + ["applies cleanly"] * (_count("main") - 1)
    assert verdict != "applies cleanly"
    for status in set(statuses):
        assert f"{status} ({statuses.count(status)} of {len(statuses)})" in verdict
    [res] = check_mod.check([ps], src=src)
    assert not res.conflicts and res.stale
    assert main(["--root", str(ROOT), "--json", "check", "--src", str(src), "--target", "main"]) == 1
    [data] = json.loads(capsys.readouterr().out)
    assert data["verdict"] == verdict and data["conflicts"] is False and data["stale"] is True


def _rewrite_a_removed_line(upstream: Path) -> None:
    """Upstream rewrote a line the fix removes: neither a plain nor a 3-way apply can work."""
    upstream_moves(upstream, REWRITE)


def test_a_conflict_exits_3_shows_the_differing_lines_and_changes_nothing(upstream, tmp_path, capsys):
    _rewrite_a_removed_line(upstream)
    src = clone_of(upstream, tmp_path)
    before = state_of(src)
    code, out, _err = run_check(src, capsys)
    assert code == 3
    verdict, statuses = rows_of(out)["main"]
    assert statuses == ["conflicts"] + ["applies cleanly"] * (_count("main") - 1)
    assert verdict.startswith(f"conflicts (1 of {_count('main')})")
    assert rows_of(out)["rc25"] == ("applies cleanly", ["applies cleanly"] * _count("rc25"))
    marked = [ln for ln in out.splitlines() if re.match(r"^  [-+] ", ln)]
    assert len(marked) == 2
    assert marked[0].endswith("|         max_seq_len = fallback_max_seq_len or self._max_seq_len")
    assert "if fallback_max_seq_len is None else fallback_max_seq_len" in marked[1]
    assert state_of(src) == before


def test_check_of_one_clean_target_exits_0(upstream, tmp_path, capsys):
    _rewrite_a_removed_line(upstream)
    src = clone_of(upstream, tmp_path)
    code = main(["--root", str(ROOT), "check", "--src", str(src), "--target", "rc25"])
    assert code == 0 and "applies cleanly" in capsys.readouterr().out


def _count(target: str) -> int:
    """How many patches the set has, read from the set (the sets grow: main gained its docs patch)."""
    from patchkit import patchset
    return len(patchset.load(ROOT, target).patches)


def test_a_patch_that_needs_3way_exits_1_not_0(upstream, tmp_path, capsys):
    """#33 item 5: make check exited 0 when a patch applied only with a 3-way merge, so CI stayed
    green on a set that must be refreshed. Only a plain apply of every patch is exit 0; 3-way is
    exit 1, said on stderr as check's verdict, with make radar as the way on."""
    upstream_moves(upstream, REWORD)  # a context line of the hunk: 3-way merges it
    src = clone_of(upstream, tmp_path)
    before = state_of(src)
    code, out, err = run_check(src, capsys)
    assert code == 1 and err.count("\n") == 1 and "exit 1 is check's verdict" in err and "3-way" in err
    verdict, statuses = rows_of(out)["main"]
    assert statuses[0] == "needs 3-way" and verdict.startswith("needs 3-way (1 of")
    assert f"run: patchkit --root {ROOT} radar --target main --src {src}" in out
    assert state_of(src) == before


@pytest.mark.parametrize("statuses", [("applied",), ("applied", "3-way"), ("already upstream", "applied"),
                                      ("conflict", "applied"), ("conflict", "3-way")])
def test_every_verdict_of_check_agrees_with_its_exit_code(statuses):
    """#33 item 5, each path: exit 0 exactly when the verdict is "applies cleanly"; 1 when the
    worst is a 3-way merge or a patch already upstream; 3 when a patch conflicts."""
    from patchkit.cli import COMMANDS
    ps = patchset.load(ROOT, "main")
    outcomes = [series_mod.Outcome(p, s) for p, s in zip(ps.patches, statuses)]
    res = check_mod.TargetCheck("main", "main", "0" * 40, outcomes)
    code = COMMANDS["check"].verdict([res])
    assert (code == 0) == (res.verdict == "applies cleanly")
    assert code == (3 if "conflict" in statuses else 1 if {"3-way", "already upstream"} & set(statuses) else 0)
    assert res.verdict.startswith(check_mod.WORDS[min(statuses, key=check_mod.ORDER.index)])


def test_a_git_that_fails_while_checking_is_no_verdict_on_the_patch(checkout, tmp_path):
    """git apply --cached exits 128 both for a patch it cannot read (the patch's answer) and when
    git itself fails (fatal:): the second was taken as "does not apply", a verdict about the set
    from a git that never looked at it. Now: exit 3, git's words."""
    from robust.faults import Injector
    inj, log = Injector(tmp_path), tmp_path / "git-calls"
    argv = ["check", "--target", "rc25", "--src", str(checkout), "--no-fetch"]
    assert inj.run(argv, log=log).code == 0
    n = next(int(ln.split()[0]) for ln in log.read_text().splitlines() if " apply --cached " in ln)
    res = inj.run(argv, n, "fail")
    assert res.code == 3 and "injected failure" in res.stderr and res.stderr.count("\n") == 1, res.stderr

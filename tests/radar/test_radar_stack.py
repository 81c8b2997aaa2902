"""make radar per fix (#26 item 4): a target's stack is watched fix by fix. On the miniature,
whose main has upstream's squash of PR #19302, a copy of the project whose rc25 set carries
that PR as a backport (made by make backport's API) before our #19514 fix: the backport is
already upstream at the squash commit (retire it: drop it from the stack), our fix is still
needed; over upstream's own form of our fix (refs/pull/20918/head, and the history variant's
`(#20918)`) our fix is fixed upstream, per fix, and its docs change is still wanted while
upstream's docs still say its pr.docs phrases. FIXID limits radar to one fix."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from patchkit import patchset
from patchkit.backport import command as backport_cmd
from patchkit.ci import summary
from patchkit.cli import main
from helpers import ROOT, build_once, copy_root, sh
from stacks import PY_PULL as OPEN_PR, python_pull

DAY = "2026-12-02"


@contextlib.contextmanager
def _own_tmp(folder: Path):
    """A module fixture runs before the test's own hermetic TMPDIR: give it one of its own."""
    folder.mkdir(parents=True, exist_ok=True)
    old_env, old_dir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = str(folder), str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = old_dir
        if old_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = old_env


def _stacked(tmp_path_factory, name: str, upstream: Path, target: str, pr: str) -> Path:
    """A copy of the project whose target's set carries upstream's pull request pr as a
    backport, made as make backport makes it (in a clone of its own, then thrown away)."""
    def build(dest: Path) -> None:
        root = copy_root(dest)
        with _own_tmp(dest / "tmp"):
            res = backport_cmd.backport(patchset.load(root, target), root=root, src=dest / "clone",
                                        url=upstream.as_uri(), pr=pr, today=DAY)
        assert res.changed and not res.already, res
    return build_once(tmp_path_factory, name, build, leaf="project") / "root"


@pytest.fixture(scope="module")
def rc25_stack(stack_template) -> Path:
    """The project with rc25 = backport of #19302 (upstream's squash commit), then our #19514
    fix: conftest's stacked copy, written by make backport's own code."""
    return stack_template


def _radar(capsys, root: Path, target: str, *args) -> tuple[int, dict | None, str]:
    code = main(["--root", str(root), "--json", "radar", "--target", target, *map(str, args)])
    out = capsys.readouterr()
    return code, json.loads(out.out) if out.out.strip() else None, out.err


def _clone(template: Path, dest: Path) -> Path:
    sh("git", "clone", "-q", template.as_uri(), dest)
    return dest


def _sha(repo: Path, grep: str, rev: str = "main") -> str:
    return sh("git", "-C", repo, "log", "--format=%H", f"--grep={grep}", "-F", rev).stdout.split()[0]


def _counts(ps, fix_id: str, tree: str) -> str:
    """What the fix declares for its regression tests in one tree (source mode), as radar says
    it: 'passed/total' for each that runs here (a C++ test is declared not run)."""
    fix = ps.fix(fix_id)
    declared = [fix.expected["source"][t] for t in fix.tests.regression]
    return ", ".join(f"{d[tree].get('passed', 0)}/{sum(d[tree].values())}" for d in declared if not d.get("not_run"))


@pytest.fixture(scope="module")
def rc25_radar(rc25_stack, miniature_template, tmp_path_factory):
    """make radar of the stacked rc25 over v1.3.0rc25..main, once for this module: (its exit
    code, its JSON on stdout, its folder of reports, the clone it ran in)."""
    found = {}

    def run(work: Path) -> None:
        clone = _clone(miniature_template, work / "trtllm")
        argv = ["--root", str(rc25_stack), "--json", "radar", "--target", "rc25", "--src", str(clone),
                "--since", "v1.3.0rc25", "--until", "main", "--out", str(work / "out")]
        with _own_tmp(work / "tmp"), contextlib.redirect_stdout(io.StringIO()) as said:
            found["run"] = main(argv), json.loads(said.getvalue()), work / "out", clone
    build_once(tmp_path_factory, "rc25radar", run, leaf="work")
    return found["run"]


def test_the_backport_is_already_upstream_at_the_squash_and_our_fix_is_still_needed(rc25_stack, rc25_radar):
    """rc25 over v1.3.0rc25..main: the backport's patch applies in reverse from upstream's squash
    of #19302 on (retire it: drop it from the stack; its tests need no probe); our fix's own
    tests, on main with the backport, still fail without it: still needed. Was: one verdict
    for the whole set, 'nothing to do', the backport's retirement unsaid."""
    code, res, out, clone = rc25_radar
    assert code == 1
    ps = patchset.load(rc25_stack, "rc25")
    squash = _sha(clone, "(#19302)")
    assert res["schema"] == 2 and res["stack"] == [f.id for f in ps.fixes] == ["19302", "19514"]
    back, ours = res["fixes"]
    assert (back["id"], back["kind"], ours["id"], ours["kind"]) == ("19302", "backport", "19514", "ours")
    # the backport: already upstream at the squash commit, retired from the stack, no test probe
    assert back["action"] == "retire" and back["upstream_at"] == squash and back["changed"]
    assert back["verdict"].startswith(f"already upstream at {squash[:12]} (")
    [patch] = ps.fix("19302").patches
    assert back["todo"].startswith(f"retire fix 19302: drop it from the stack ({patch.name}")
    assert back["tests"]["skipped"] and back["tests"]["probes"] == 0
    assert [p["first_upstream"] for p in back["patches"]] == [squash]
    # our fix: its own tests (not the backport's) still fail without it at main: still needed
    assert ours["action"] != "retire" and ours["upstream_at"] == "" and ours["tests"]["until"]["fixed"] is False
    assert ours["tests"]["until"]["counts"] == _counts(ps, "19514", "unpatched")
    assert "still needed: fix 19514's tests still fail without it at main" in ours["verdict"]
    # the timeline, grouped by fix: the squash row retires the backport, our patches still apply
    [row] = [r for r in res["timeline"] if r["commit"] == squash]
    assert row["fixes"]["19302"]["patches"] == {patch.name: "already upstream"}
    assert set(row["fixes"]["19514"]["patches"]) == {p.name for p in ps.fix("19514").patches}
    assert res["action"] == "retire" and res["verdict"].startswith("fix 19302: already upstream at ")
    assert json.loads((out / "rc25.json").read_text()) == res
    md = (out / "rc25.md").read_text()
    assert "| 19302: 0001 | 19514: 0002 | 19514: 0003 | 19514: tests |" in md and "**fix 19302 (a backport of" in md


def test_summary_has_a_radar_row_per_fix_and_flags_a_fix_the_set_no_longer_carries(rc25_stack, rc25_radar):
    """make summary over that radar report: a row per fix, the retired backport's verdict bold;
    read against a set that no longer carries the backport (the project's own rc25: retired as
    radar said), its row is flagged stale."""
    _code, res, out, _clone = rc25_radar
    rows = summary.summarize(rc25_stack, out).rows
    until = res["until"]["commit"]
    assert [(r.fix, r.check, r.upstream_commit, r.verdict, r.ok, r.flags) for r in rows] == [
        ("19302", "radar", until, "changed: retire", False, ()),
        ("19514", "radar", until, "unchanged", True, ())]
    retired = {r.fix: r.flags for r in summary.summarize(ROOT, out).rows}
    assert retired == {"19302": ("stale: rc25 carries no fix 19302 now",), "19514": ()}


def test_fixid_limits_radar_to_one_fix_and_an_unknown_one_lists_the_stack(rc25_stack, miniature_template, tmp_path,
                                                                          capsys, monkeypatch):
    """FIXID=19302: the backport's section alone, its columns alone, and no probe of our fix's
    tests; FIXID of no fix: exit 4 naming the fixes the stack carries, in make's words, and no
    report written."""
    clone = _clone(miniature_template, tmp_path / "trtllm")
    args = ["--src", clone, "--since", "v1.3.0rc25", "--until", "main"]
    code, res, err = _radar(capsys, rc25_stack, "rc25", *args, "--fix-id", "19302", "--out", tmp_path / "one")
    assert code == 1, err
    assert res["stack"] == ["19302", "19514"] and [f["id"] for f in res["fixes"]] == ["19302"]
    assert res["fixes"][0]["action"] == "retire" and res["fixes"][0]["tests"]["probes"] == 0
    assert res["timeline"] and all(set(r["fixes"]) == {"19302"} for r in res["timeline"])
    monkeypatch.setenv("PATCHKIT_VIA_MAKE", "1")
    code, res, err = _radar(capsys, rc25_stack, "rc25", *args, "--fix-id", "4242", "--out", tmp_path / "none")
    assert code == 4 and res is None
    assert "rc25 carries no fix '4242' (it carries: 19302 (backport), 19514 (ours))" in err and "FIXID" in err
    assert not (tmp_path / "none").exists()


def test_a_backport_upstream_already_had_at_since_is_said_so_not_pinned_on_a_later_commit(
        rc25_stack, miniature_template, tmp_path, capsys):
    """SINCE=main (which has the squash) .. upstream's own fix of our bug, one commit later: the
    backport applies in reverse all along, so main had it at SINCE or before. Was: 'already
    upstream at' the range's first commit that touches the stack's paths, which only came later."""
    clone = _clone(miniature_template, tmp_path / "trtllm")
    main_sha = sh("git", "-C", clone, "rev-parse", "main").stdout.strip()
    code, res, err = _radar(capsys, rc25_stack, "rc25", "--src", clone, "--since", "main", "--until",
                            "refs/pull/20918/head", "--fix-id", "19302", "--out", tmp_path / "out")
    assert code == 1, err
    [back] = res["fixes"]
    assert res["candidates"] >= 1 and back["action"] == "retire" and not back["changed"]
    assert back["verdict"].startswith(f"already upstream at SINCE {main_sha[:12]} or before: ")
    assert back["upstream_at"] == main_sha and back["patches"][0]["first_upstream"] is None


@pytest.mark.slow  # four test probes over upstream's own fix: make test-slow (.ci/run)
def test_over_upstreams_own_fix_our_fix_is_fixed_upstream_and_its_docs_change_still_wanted(
        rc25_stack, miniature_template, tmp_path, capsys):
    """rc25 over v1.3.0rc25..refs/pull/20918/head (upstream's own form of our fix, on main): the
    backport is retired at the squash; our fix's tests, on that commit with the backport, pass
    without it: fixed upstream there. rc25 carries no docs patch, and upstream's docs there
    still say its pr.docs phrases: its docs change is still wanted, page by page."""
    clone = _clone(miniature_template, tmp_path / "trtllm")
    code, res, err = _radar(capsys, rc25_stack, "rc25", "--src", clone, "--since", "v1.3.0rc25",
                            "--until", "refs/pull/20918/head", "--out", tmp_path / "out")
    assert code == 1, err
    ps = patchset.load(rc25_stack, "rc25")
    upstreams = sh("git", "-C", miniature_template, "rev-parse", "refs/pull/20918/head").stdout.strip()
    back, ours = res["fixes"]
    assert back["upstream_at"] == _sha(clone, "(#19302)") and back["action"] == "retire"
    assert ours["action"] == "retire" and ours["upstream_at"] == upstreams
    assert ours["verdict"].startswith(f"fixed upstream at {upstreams[:12]} (")
    assert ours["tests"]["until"] == {"fixed": True, "counts": _counts(ps, "19514", "patched")}
    code_patch, test_patch = (p.name for p in ps.fix("19514").patches)
    assert f"retire {code_patch}: drop it from the series and record {upstreams[:12]}" in ours["todo"]
    assert f"keep {test_patch} as a PR" in ours["todo"]
    said = {phrase: sh("git", "-C", miniature_template, "grep", "-l", "-F", "-i", phrase, upstreams, "--", "docs",
                       check=False).stdout.split() for phrase in ps.fix("19514").pr.docs}
    pages: dict[str, list[str]] = {}
    for phrase, hits in said.items():
        for hit in hits:
            pages.setdefault(hit.split(":", 1)[1], []).append(phrase)
    assert pages and ours["docs"] == {"phrases": list(ps.fix("19514").pr.docs), "pages": pages, "wanted": True}
    for page in pages:
        assert f"its docs change is still wanted: {page} still says" in ours["todo"]


@pytest.fixture(scope="module")
def history_stack(history_template, tmp_path_factory) -> Path:
    """The project with rc25 = backports of #19302 (squash-merged on main before the history)
    and of an open pull request of the test's own (a Python change and its test, pushed to a
    copy of the history miniature), then our #19514 fix."""
    upstream = tmp_path_factory.mktemp("historypull") / "upstream"
    shutil.copytree(history_template, upstream, symlinks=True)
    python_pull(upstream)
    root = _stacked(tmp_path_factory, "historystack", upstream, "rc25", "19302")
    with _own_tmp(root.parent / "tmp2"):
        res = backport_cmd.backport(patchset.load(root, "rc25"), root=root, src=root.parent / "clone2",
                                    url=upstream.as_uri(), pr=OPEN_PR, today=DAY)
    assert res.changed and not res.already, res
    return root


@pytest.mark.slow  # three fixes over a grown history, two of them bisected: make test-slow (.ci/run)
def test_on_the_history_variant_each_fix_is_judged_on_its_own(history_stack, history_template, tmp_path, capsys):
    """rc25 over v1.3.0rc25..main on the history variant, a stack of three fixes: #19302 is
    already upstream at its squash; upstream's `(#20918)` fixes our bug (our fix's tests, on
    upstream with both backports, bisect to it); the open pull request's own tests still fail
    without it, whatever happened to our fix: still needed."""
    clone = _clone(history_template, tmp_path / "trtllm")
    code, res, err = _radar(capsys, history_stack, "rc25", "--src", clone, "--since", "v1.3.0rc25", "--until", "main",
                            "--out", tmp_path / "out")
    assert code == 1, err
    ps = patchset.load(history_stack, "rc25")
    fix, squash = _sha(clone, "(#20918)"), _sha(clone, "(#19302)")
    assert [f["id"] for f in res["fixes"]] == [f.id for f in ps.fixes] == ["19302", OPEN_PR, "19514"]
    merged, guard, ours = res["fixes"]
    assert merged["action"] == "retire" and merged["upstream_at"] == squash and merged["tests"]["probes"] == 0
    assert ours["action"] == "retire" and ours["upstream_at"] == fix and ours["tests"]["until"]["fixed"]
    assert [c["commit"] for c in ours["tests"]["changes"]] == [fix]
    assert ours["verdict"].startswith(f"fixed upstream at {fix[:12]} (")
    assert guard["action"] != "retire" and guard["tests"]["until"]["fixed"] is False and not guard["tests"]["changes"]
    assert f"still needed: fix {OPEN_PR}'s tests still fail without it at main" in guard["verdict"]
    assert guard["tests"]["until"]["counts"] == _counts(ps, OPEN_PR, "unpatched")
    [row] = [r for r in res["timeline"] if r["commit"] == fix]
    assert row["fixes"]["19514"]["tests"].startswith("fixed") and row["fixes"][OPEN_PR]["tests"] == ""
    assert res["verdict"].startswith("fix 19302: already upstream at ") and "; fix 19514: fixed upstream at " in res["verdict"]

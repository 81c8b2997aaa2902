"""Knowing that upstream fixed the bug another way (#9 item 6): detected from the set's tests
on the unpatched ref, never from text. On the miniature's fixed-upstream variant (upstream
landed the PR's form of the fix: every name in the lookup authoritative) our 0001 conflicts,
yet the bug is gone; check, apply and delta say so, with the measured counts."""
from __future__ import annotations

import json
import shutil
from pathlib import Path, PurePosixPath

import pytest

from patchkit import miniature, patchset, series
from patchkit.cli import main
from patchkit.delta import upstreamfix
from patchkit.git import Repo
from helpers import REWORD, ROOT, build_once, copy_root, sh, state_of, upstream_moves
from stacks import PY_PULL, python_pull

UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"


@pytest.fixture(scope="session")
def fixed_template(tmp_path_factory):
    return build_once(tmp_path_factory, "fixed", lambda dest: miniature.build(ROOT, dest, variant="fixed-upstream"))


@pytest.fixture
def fixed_clone(fixed_template, tmp_path):
    dest = tmp_path / "clone"
    sh("git", "clone", "-q", fixed_template.as_uri(), dest)
    return dest


def declared(target: str = "main") -> tuple[str, dict, dict]:
    """The regression file and what the set declares for it, unpatched and patched (source mode)."""
    ps = patchset.load(ROOT, target)
    [regression] = ps.tests.regression
    exp = ps.expected["source"][regression]
    return regression, exp["unpatched"], exp["patched"]


def fixed_line() -> str:
    regression, _unpatched, patched = declared()
    return (f"fixed upstream: {PurePosixPath(regression).name} passes without the set "
            f"({patched['passed']}/{sum(patched.values())})")


def last_change(repo: Path) -> str:
    return sh("git", "-C", repo, "log", "-1", "--format=%H", "origin/main", "--", UTIL).stdout.strip()


def test_the_variant_is_upstreams_own_fix_and_our_patch_conflicts(fixed_template):
    ps = patchset.load(ROOT, "main")
    text = sh("git", "-C", fixed_template, "show", f"main:{UTIL}").stdout
    assert '"max_source_positions"' in text and '"n_positions"' in text
    repo = Repo(fixed_template)
    res = series.apply_series(repo, repo.rev_parse("main"), ps.patches, stop_on_conflict=False)
    assert [o.status for o in res.outcomes] == [series.CONFLICT] + [series.APPLIED] * (len(ps.patches) - 1)


def test_check_reports_fixed_upstream_with_counts_and_what_to_do(fixed_clone, capsys):
    before = state_of(fixed_clone)
    code = main(["--root", str(ROOT), "check", "--src", str(fixed_clone)])
    out = capsys.readouterr().out
    assert code == 3
    ps = patchset.load(ROOT, "main")
    verdict = next(ln for ln in out.splitlines() if ln.startswith("main "))
    n = len(ps.patches)
    assert verdict.split(None, 3)[3].startswith(f"fixed upstream: conflicts (1 of {n}), applies cleanly ({n - 1} of {n})")
    assert f"main: {fixed_line()}" in out
    todo = next(ln for ln in out.splitlines() if ln.startswith("main: to do: "))
    assert f"retire {ps.patches[0].name}" in todo
    # The commit that fixed it is the one the tests bisect to (make radar, named on the hint
    # line), never a guess from the files' history (#24 item 3).
    assert "last to change" not in out and last_change(fixed_clone)[:12] not in todo
    assert ("record the upstream commit that fixed it in status.applied_upstream of patches/main/patchset.yaml "
            "(radar bisects the set's tests to it)") in todo
    assert f"retire {ps.patches[0].name}: drop it from the series" in todo
    assert f"keep {ps.patches[1].name} as a PR if upstream has no test of its own" in todo
    # The docs patch still applies and upstream's page still says the old behaviour: kept.
    assert f"keep {ps.patches[2].name} as a PR: docs/source/models/encoder-decoder.md still says" in todo
    assert f"run: patchkit --root {ROOT} radar --target main --src {fixed_clone}" in out
    rc25 = next(ln for ln in out.splitlines() if ln.startswith("rc25 "))
    assert rc25.endswith("applies cleanly")
    assert state_of(fixed_clone) == before


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
@pytest.mark.parametrize("threeway", [False, True])
def test_apply_refuses_to_stack_our_fix_on_upstreams(fixed_clone, capsys, threeway):
    before = state_of(fixed_clone)
    code = main(["--root", str(ROOT), "apply", "--target", "main", "--src", str(fixed_clone)]
                + (["--threeway"] if threeway else []))
    _out, err = capsys.readouterr()
    assert code == 3
    [line] = err.strip().splitlines()
    assert f"main: {fixed_line()}; nothing applied; retire 0001-" in line
    assert state_of(fixed_clone) == before
    assert "overlay/main" not in sh("git", "-C", fixed_clone, "branch", "--list").stdout


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_delta_gives_its_own_verdict_and_exits_0(fixed_clone, tmp_path, capsys):
    report = tmp_path / "delta.json"
    code = main(["--root", str(ROOT), "delta", "--target", "main", "--src", str(fixed_clone),
                 "--mode", "source", "--report", str(report)])
    out = capsys.readouterr().out
    assert code == 0
    assert f"verdict: {fixed_line()}" in out and "to do: retire 0001-" in out
    data = json.loads(report.read_text())
    regression, _unpatched, patched = declared()
    [fix] = data["fixes"]
    assert fix["fixed_upstream"]["summary"] == fixed_line()
    assert not data["matches_expected"] and not fix["matches_expected"]  # so make pr refuses it: no fix of ours to send
    counted = [t for t, o in fix["unpatched"]["tests"].items() if t.startswith(regression + "::") and o == "passed"]
    assert len(counted) == patched["passed"]
    assert data["upstream_commit"] == sh("git", "-C", fixed_clone, "rev-parse", "origin/main").stdout.strip()


def _reword_context(upstream: Path) -> None:
    upstream_moves(upstream, REWORD)


@pytest.mark.slow  # a second variant built for this test: make test-slow (.ci/run)
def test_drift_without_a_fix_is_not_called_fixed_and_says_what_was_measured(upstream, tmp_path, capsys):
    _reword_context(upstream)
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    code = main(["--root", str(ROOT), "apply", "--target", "main", "--src", str(clone)])
    err = capsys.readouterr().err
    regression, unpatched, patched = declared()
    assert code == 3 and "fixed upstream:" not in err.replace("not fixed upstream:", "")
    assert (f"not fixed upstream: {PurePosixPath(regression).name} {unpatched['passed']}/"
            f"{sum(unpatched.values())} passed without the set") in err
    code = main(["--root", str(ROOT), "apply", "--target", "main", "--src", str(clone), "--threeway"])
    assert code == 0, capsys.readouterr().err


def test_no_probe_when_every_fix_patch_applies_cleanly(miniature_template):
    ps = patchset.load(ROOT, "main")
    repo = Repo(miniature_template)
    res = series.apply_series(repo, repo.rev_parse("main"), ps.patches, stop_on_conflict=False)
    assert not upstreamfix.needs_probe(res.outcomes)


@pytest.mark.slow  # make test-slow (.ci/run): a backport and a delta on the variant
def test_in_a_stack_the_probe_is_per_fix_and_the_other_fix_is_still_graded(fixed_template, miniature_template,
                                                                             tmp_path, capsys):
    """#26 item 4: main carries an upstream PR (a Python change of the test's own) under our fix.
    On the variant our fix's patch conflicts: its own regression tests, run on upstream with the
    rest of the stack (the backport) and its test files, pass as it declares: fixed upstream,
    and only its patches are to retire. The backport is still graded, on the stack as it stands
    (our fix's test files)."""
    from patchkit.backport import command as backport
    root = copy_root(tmp_path)
    upstream = tmp_path / "upstream"
    shutil.copytree(miniature_template, upstream, symlinks=True)
    python_pull(upstream)
    clone = tmp_path / "plain"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    backport.backport(patchset.load(root, "main"), root=root, src=clone, pr=PY_PULL, today="2026-12-02")
    ps = patchset.load(root, "main")
    assert [f.id for f in ps.fixes] == [PY_PULL, "19514"]
    report = tmp_path / "delta.json"
    code = main(["--root", str(root), "delta", "--target", "main", "--src", str(fixed_template),
                 "--mode", "source", "--report", str(report)])
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads(report.read_text())
    theirs, ours = data["fixes"]
    assert (theirs["id"], theirs["matches_expected"], theirs["fixed_upstream"]) == (PY_PULL, True, None)
    regression, _unpatched, patched = declared()
    assert ours["fixed_upstream"]["summary"] == (f"fix 19514 fixed upstream: {PurePosixPath(regression).name} "
                                                 f"passes without it ({patched['passed']}/{sum(patched.values())})")
    retire = [p.name for p in ps.fix("19514").patches if not p.tests_only and not p.name.count("-doc-")]
    assert ours["fixed_upstream"]["retire"][:len(retire)] == retire
    assert not set(ours["fixed_upstream"]["retire"]) & {p.name for p in ps.fix(PY_PULL).patches}
    assert "fix 19514 (ours): its patches do not apply" in out and f"fix {PY_PULL} (backport): its tests without it" in out
    assert out.rstrip().splitlines()[-2].startswith(f"verdict: fix {PY_PULL} matches the declared delta; fix 19514 fixed upstream")

"""make delta on a stack (#26 item 4): each fix graded on its own tests, without it (the rest of
the stack and its own test files) and with the whole stack; one report (schema 2) with a
section per fix, which make pr, make summary and make waivers read per fix. The stacked copy
(conftest.stack_template) carries the miniature's PR 19302 as a backport under our fix on rc25,
written and measured by make backport's own code."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path, PurePosixPath

import pytest

from helpers import ROOT, sh
from patchkit import patchset
from patchkit.ci import workflow
from patchkit.cli import main
from patchkit.delta.compare import CATEGORIES
from patchkit.errors import Conflict
from patchkit.pr import body

GOLDEN = ROOT / "tests" / "golden"


def make(root: Path, *args):
    return sh("make", "-s", "--no-print-directory", "-C", ROOT, "SETUP=",
              f"PATCHKIT={sys.executable} -m patchkit --root {root}", *args, check=False)


@pytest.fixture(scope="module")
def graded(stack_template, miniature_template, tmp_path_factory):
    """`make delta TRTLLM=rc25` on the stacked copy: (what make said, the report's path)."""
    out = tmp_path_factory.mktemp("stackdelta")
    with pytest.MonkeyPatch.context() as mp:  # as the tests' own hermetic seal: nothing of the run outside out
        mp.setenv("HOME", str(out))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        mp.setenv("TMPDIR", str(out))
        res = make(stack_template, "delta", "TRTLLM=rc25", f"TRTLLM_SRC={miniature_template}",
                   f"REPORT={out / 'delta' / 'rc25.json'}")
    return res, out / "delta" / "rc25.json"


def test_make_delta_grades_each_fix_of_the_stack_on_its_own_tests(graded, stack_template, miniature_template):
    """The acceptance of #26: `make delta TRTLLM=rc25` with the backport grades both fixes and
    exits 0. The backport's squash commit mixes code and test: the tree without it has its test
    part alone (split by path), so its test runs there and fails where the guard is missing."""
    res, report = graded
    assert res.returncode == 0, res.stdout + res.stderr
    ps = patchset.load(stack_template, "rc25")
    data = json.loads(report.read_text())
    assert (data["schema"], data["target"], data["ok"], data["valid"], data["matches_expected"]) == (2, "rc25", True, True, True)
    assert data["upstream_commit"] == sh("git", "-C", miniature_template, "rev-parse", "v1.3.0rc25^{commit}").stdout.strip()
    assert [(f["id"], f["kind"]) for f in data["fixes"]] == [(f.id, f.kind) for f in ps.fixes] == [
        ("19302", "backport"), ("19514", "ours")]
    for section, fix in zip(data["fixes"], ps.fixes):
        assert section["tests"] == list(fix.tests.all) and section["matches_expected"] and not section["mismatches"]
        # what make backport measured (19302) and the set declares (19514); a C++ test is not
        # run in source mode (19302's), its Python test is
        [test] = [t for t in fix.tests.all if not fix.expected["source"][t].get("not_run")]
        want = fix.expected["source"][test]
        for tree in ("unpatched", "patched"):
            got = {k: section[tree][k] for k in CATEGORIES if section[tree][k]}
            assert got == {k: v for k, v in want[tree].items() if v}, (fix.id, tree)
        # each fix's own tests only; without it, some fail; with the whole stack, all pass
        assert {t.split("::")[0] for t in section["unpatched"]["tests"]} == {test}
        assert section["unpatched"]["failed"] == len(section["fail_to_pass"]) > 0
        assert section["patched"]["passed"] == sum(section["patched"][k] for k in ("passed", "failed", "error"))
        # JUnit: each fix's tree without it; the stack's tree ran every fix's tests once
        assert {k: Path(v).name for k, v in section["junit"].items()} == {
            "unpatched": f"rc25.{fix.id}.unpatched.xml", "patched": "rc25.patched.xml"}
    stack_run = (report.parent / "rc25.patched.xml").read_text()
    assert all(f"{PurePosixPath(t).stem}" in stack_run for f in ps.fixes for t in f.tests.all if t.endswith(".py"))
    lines = res.stdout.splitlines()
    assert "fix 19302 (backport): its tests without it (unpatched) and with the whole stack (patched)" in lines
    assert "fix 19514 (ours): its tests without it (unpatched) and with the whole stack (patched)" in lines
    assert lines[-1] == f"verdict: every fix matches the declared delta; report: {report}"


def test_make_pr_reads_the_section_of_its_fix(graded, stack_template, miniature_template):
    """pr/body.load_report, the one reader: the section of the named fix (default: the only own
    one) with the target's fields; a backport has no PR; a fix the report does not grade is refused."""
    _res, report = graded
    ps = patchset.load(stack_template, "rc25")
    commit = json.loads(report.read_text())["upstream_commit"]
    mine = body.load_report(report, ps, commit)
    assert (mine["id"], mine["kind"], mine["target"], mine["mode"]) == ("19514", "ours", "rc25", "source")
    assert body.load_report(report, ps, commit, "19514") == mine
    data = json.loads(report.read_text())
    data["fixes"] = data["fixes"][:1]  # as FIXID=19302 writes it
    only = report.with_name("only-19302.json")
    only.write_text(json.dumps(data))
    with pytest.raises(Conflict, match=r"grades no fix 19514 \(it grades: 19302\)"):
        body.load_report(only, ps, commit)


def test_an_unknown_fixid_lists_the_stack(stack_template, miniature_template, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATCHKIT_VIA_MAKE", "1")  # said as make delta FIXID=20000 says it
    code = main(["--root", str(stack_template), "delta", "--target", "rc25", "--src", str(miniature_template),
                 "--fix-id", "20000", "--report", str(tmp_path / "r.json")])
    assert (code, capsys.readouterr().err) == (4, "patchkit: error: FIXID: rc25 carries no fix '20000' "
                                                  "(it carries: 19302 (backport), 19514 (ours))\n")
    assert not (tmp_path / "r.json").exists()


@pytest.mark.slow  # make test-slow (.ci/run): make test grades the whole stack
def test_fixid_grades_that_fix_alone(stack_template, miniature_template, tmp_path):
    report = tmp_path / "r.json"
    res = make(stack_template, "delta", "TRTLLM=rc25", f"TRTLLM_SRC={miniature_template}", "FIXID=19302",
               f"REPORT={report}")
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(report.read_text())
    assert [f["id"] for f in data["fixes"]] == ["19302"] and data["ok"]
    assert "fix 19514" not in res.stdout and "fix 19302 (backport)" in res.stdout
    assert sorted(p.name for p in tmp_path.glob("*.xml")) == ["r.19302.unpatched.xml", "r.patched.xml"]
    res = make(stack_template, "delta", "TRTLLM=rc25", f"TRTLLM_SRC={miniature_template}", "FIXID=20000",
               f"REPORT={tmp_path / 'none.json'}")
    said, made = res.stderr.splitlines()  # NotFound (exit 4), in make's words
    assert said == "patchkit: error: FIXID: rc25 carries no fix '20000' (it carries: 19302 (backport), 19514 (ours))"
    assert re.fullmatch(r"make(\[\d+\])?: \*\*\* \[Makefile:\d+: delta\] Error 4", made), made


def test_summary_gives_each_fix_its_row(graded, stack_template, tmp_path):
    """make summary: the fix is a column; a schema 1 report (before stacks) still reads, as the
    report of the set's own fix, and is flagged once the set is a stack."""
    _res, report = graded
    reports = tmp_path / "reports"
    (reports / "reports-verify-rc25").mkdir(parents=True)
    (reports / "reports-verify-rc25" / "rc25.json").write_bytes(report.read_bytes())
    assert main(["--root", str(stack_template), "summary", "--reports", str(reports), "--out", str(tmp_path / "summary")]) == 0
    md = (tmp_path / "summary" / "summary.md").read_text()
    golden = GOLDEN / "summary_stack.md"
    if os.environ.get("PATCHKIT_UPDATE_GOLDEN"):
        golden.write_text(md)
    assert md == golden.read_text(), "summary_stack.md differs from tests/golden (PATCHKIT_UPDATE_GOLDEN=1 to accept)"
    rows = json.loads((tmp_path / "summary" / "summary.json").read_text())["rows"]
    assert [(r["target"], r["fix"], r["check"]) for r in rows] == [("rc25", "19302", "delta source"),
                                                                   ("rc25", "19514", "delta source")]
    # the same report in schema 1 (the one fix's fields at the top), read against the stack
    data = json.loads(report.read_text())
    [section] = [f for f in data.pop("fixes") if f["id"] == "19514"]
    old = {**{k: v for k, v in data.items() if k not in ("schema", "ok", "not_graded")},
           **{k: v for k, v in section.items() if k not in ("id", "kind")}}
    (reports / "reports-verify-rc25" / "rc25.json").write_text(json.dumps(old))
    assert main(["--root", str(stack_template), "summary", "--reports", str(reports), "--out", str(tmp_path / "summary")]) == 1
    rows = json.loads((tmp_path / "summary" / "summary.json").read_text())["rows"]
    assert [(r["fix"], r["verdict"]) for r in rows] == [("19514", "matches")]
    assert rows[0]["counts"] == next(line for line in md.splitlines() if "| 19514 |" in line).split(" | ")[4]
    assert rows[0]["flags"] == ["stale: measured before the stack (2 fixes now), as a set of one fix"]


def test_summary_gives_the_lint_of_one_fixs_series_that_fixs_row(stack_template, tmp_path, capsys):
    """make pr lints the PR's series, one own fix's alone, and writes it beside the body
    (<out>/lint.json): on a stack that is the fix's row, not a report of another version of the
    set (make demo's next line, make summary over its folder, flagged every stacked set)."""
    ps = patchset.load(stack_template, "rc25")
    lint = {"target": "rc25", "upstream_commit": "0" * 40, "ran": ["end-of-file-fixer"], "failures": []}
    (tmp_path / "pr" / "rc25").mkdir(parents=True)
    (tmp_path / "pr" / "rc25" / "lint.json").write_text(json.dumps({**lint, "patch_set": ps.only(ps.fix("19514")).content_hash}))
    (tmp_path / "lint").mkdir()
    (tmp_path / "lint" / "rc25.json").write_text(json.dumps({**lint, "patch_set": ps.content_hash}))
    assert main(["--root", str(stack_template), "summary", "--reports", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())["rows"]
    assert sorted((r["fix"], r["verdict"], r["flags"]) for r in rows) == [("", "clean", []), ("19514", "clean", [])]
    (tmp_path / "lint" / "rc25.json").write_text(json.dumps({**lint, "patch_set": ps.only(ps.fix("19302")).content_hash}))
    assert main(["--root", str(stack_template), "summary", "--reports", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())["rows"]
    assert sorted(r["fix"] for r in rows) == ["19302", "19514"]
    capsys.readouterr()


def test_waivers_say_which_fix_each_test_belongs_to(stack_template, miniature_template, capsys):
    assert main(["--root", str(stack_template), "waivers", "--target", "rc25", "--src", str(miniature_template)]) == 0
    out = capsys.readouterr().out
    ps = patchset.load(stack_template, "rc25")
    for fix in ps.fixes:
        for test in fix.tests.all:
            said = [line for line in out.splitlines() if line.startswith(f"  {test} ")]
            assert len(said) == 2 and all(line.startswith(f"  {test} (fix {fix.id}): ") for line in said), said


def test_the_workflow_keeps_a_job_per_target_for_a_stack(stack_template):
    """One branch and one image carry a target's stack: the matrix stays `make targets`."""
    _text, res = workflow.render(stack_template)
    assert res.targets == patchset.targets(stack_template) == ["main", "rc25"]
    assert len(patchset.load(stack_template, "rc25").fixes) == 2

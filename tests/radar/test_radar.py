"""make radar (#18): since which upstream commit a set breaks, and since which it is no longer
needed. On the miniature's history variant (about sixty commits after the tag, three of
which change the main set's status), radar must name exactly those three, in order, with
the right statuses, within its probe budget, without touching the checkout."""
from __future__ import annotations

import json
import math
import re

import pytest

from patchkit import minihistory
from patchkit.cli import main
from patchkit.radar import bisect
from helpers import ROOT, sh, state_of


def _radar(capsys, *args):
    code = main(["--json", "radar", "--target", "main", *map(str, args)])
    out = capsys.readouterr()
    return code, json.loads(out.out) if out.out.strip() else None, out.err


def _sha(repo, subject):
    return sh("git", "-C", repo, "log", "--format=%H", f"--grep={subject}", "-F", "main").stdout.split()[0]


@pytest.mark.slow  # three radar runs over a grown history: make test-slow (.ci/run)
def test_check_points_at_radar_which_names_the_three_commits_in_order(history_template, tmp_path, capsys,
                                                                      monkeypatch):
    """A user's full clone: make check finds the conflict and prints make radar with the
    user's values; that line, run as printed, names the offset, the reworded context (3-way)
    and upstream's #20918 fix, within the probe budget, and leaves the checkout as it was."""
    clone = tmp_path / "trtllm"
    sh("git", "clone", "-q", history_template.as_uri(), clone)
    before = state_of(clone)
    monkeypatch.setenv("PATCHKIT_VIA_MAKE", "1")
    assert main(["check", "--src", str(clone)]) == 3
    hint = re.search(r"^run: (make radar .+?) \(since which", capsys.readouterr().out, re.M).group(1)
    assert hint == f"make radar TRTLLM=main TRTLLM_SRC={clone}"
    build = tmp_path / "build"
    ran = sh("make", "--no-print-directory", "-C", ROOT, *hint.split()[1:], f"BUILD={build}", check=False)
    assert ran.returncode == 2 and "verdict: fixed upstream at" in ran.stdout, ran.stderr  # make says 2 for exit 1
    assert state_of(clone) == before
    res = json.loads((build / "radar" / "main.json").read_text())
    [own] = res["fixes"]  # the main set: a stack of one own fix, its section in the report
    assert res["changed"] is True and res["schema"] == 2 and own["changed"] and own["kind"] == "ours"
    assert [r["subject"] for r in res["timeline"]] == [minihistory.OFFSET_SUBJECT, minihistory.REWORD_SUBJECT,
                                                       minihistory.FIX_SUBJECT]
    fix, *others = [p["name"] for p in own["patches"]]
    cells = [r["fixes"][own["id"]] for r in res["timeline"]]
    assert [c["patches"][fix].split(" ")[0] for c in cells] == ["offset", "3-way", "conflict"]
    assert others and {c["patches"][name] for c in cells for name in others} == {"applies"}
    assert [c["tests"].split(" (")[0] for c in cells] == ["", "", "fixed"]
    assert res["timeline"][2]["commit"] == _sha(clone, "(#20918)")
    assert res["commits_in_range"] == len(sh("git", "-C", clone, "rev-list", "--first-parent",
                                             f"{res['since']['commit']}..main").stdout.split())
    assert own["tests"]["probes"] <= math.ceil(math.log2(res["candidates"])) + 2
    assert res["action"] == "retire" and _sha(clone, "(#20918)")[:12] in res["todo"]
    assert own["upstream_at"] == _sha(clone, "(#20918)")
    summary = {p["name"]: p for p in own["patches"]}[fix]
    assert summary["first_offset"] == _sha(clone, "(#20511)")
    assert summary["first_break"] == _sha(clone, "(#20650)") and summary["threeway_at_break"] is True
    md = (build / "radar" / "main.md").read_text()
    assert "(#20918)" in md and md.count("\n|") == 2 + 3  # header, rule, three rows


@pytest.mark.slow  # radar in a cold one-commit clone, its fetches counted: make test-slow (.ci/run)
def test_radar_in_the_one_commit_clone_fetches_no_blob_of_history(history_template, tmp_path, capsys):
    """TRTLLM_SRC missing: the one-commit clone, then only commits and trees of the range and
    the blobs of the set's files; an unrelated file's blobs never arrive."""
    src = tmp_path / "trtllm-main"
    code, res, _err = _radar(capsys, "--src", src, "--url", history_template, "--out", tmp_path / "out")
    assert code == 1 and len(res["timeline"]) == 3
    present = set(sh("git", "-C", src, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").stdout.split())
    unrelated = sh("git", "-C", history_template, "rev-list", "--objects", "main", "--",
                   "tensorrt_llm/_torch/speculative").stdout.split("\n")
    blobs = {line.split(" ")[0] for line in unrelated if line.endswith(".py") and "/speculative/" in line}
    assert blobs and not blobs & present
    assert sh("git", "-C", src, "status", "--porcelain").stdout == ""


@pytest.mark.slow  # a grown history, radar run cold: make test-slow (.ci/run); make test runs radar in the summary's golden table
@pytest.mark.parametrize("since, until, where", [
    ("(#20918)^", "(#20918)", "the only candidate"),
    ("(#20918)^", "main", "the first of several"),
    ("(#20511)", "(#20918)", "the last of several"),
])
def test_the_fix_at_the_edges_of_the_range(history_template, tmp_path, capsys, since, until, where):
    """Upstream's fix as the first candidate, the last, the only one: radar names it, within
    ceil(log2(candidates)) + 2 test probes (the ends of the range and the bisection)."""
    clone = tmp_path / "trtllm"
    sh("git", "clone", "-q", history_template.as_uri(), clone)
    fix = _sha(clone, "(#20918)")

    def rev(r: str) -> str:
        return r if r == "main" else _sha(clone, r.rstrip("^")) + ("^" if r.endswith("^") else "")
    code, res, _err = _radar(capsys, "--src", clone, "--since", rev(since), "--until", rev(until), "--out", tmp_path / "o")
    cands = sh("git", "-C", clone, "log", "--first-parent", "--format=%H", f"{rev(since)}..{rev(until)}", "--",
               *res["paths"]).stdout.split()[::-1]
    assert code == 1 and res["candidates"] == len(cands)
    assert {"the only candidate": [fix], "the first of several": cands[:1], "the last of several": cands[-1:]}[where] == [fix]
    assert (len(cands) == 1) if where == "the only candidate" else (len(cands) >= 2)
    [own] = res["fixes"]
    assert [c["commit"] for c in own["tests"]["changes"]] == [fix] and own["tests"]["changes"][0]["exact"]
    assert [c["tests"].split(" (")[0] for r in res["timeline"] if (c := r["fixes"][own["id"]])["tests"]] == ["fixed"]
    assert own["tests"]["probes"] <= (math.ceil(math.log2(len(cands))) + 2 if len(cands) > 1 else 2)


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_no_fix_in_range_means_refresh_with_threeway(history_template, tmp_path, capsys, monkeypatch):
    """UNTIL before the fix: the patch needs 3-way; the hint runs make apply with THREEWAY=1."""
    clone = tmp_path / "trtllm"
    sh("git", "clone", "-q", history_template.as_uri(), clone)
    fix, offset = _sha(clone, "(#20918)"), _sha(clone, "(#20511)")
    monkeypatch.setenv("PATCHKIT_VIA_MAKE", "1")
    code = main(["radar", "--target", "main", "--src", str(clone), "--since", offset, "--until", f"{fix}^",
                 "--out", str(tmp_path / "o")])
    text = capsys.readouterr().out
    assert code == 1
    report = json.loads((tmp_path / "o" / "main.json").read_text())
    assert "fixed" not in report["timeline"][-1]["fixes"][report["fixes"][0]["id"]]["tests"]
    assert f"run: make apply TRTLLM=main TRTLLM_SRC={clone} THREEWAY=1" in text
    assert "(#20918)" not in text and "(#20650)" in text


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 33])
def test_bisection_finds_the_fix_at_every_position_and_none(n):
    """The edges: the fix in the first candidate, in the last, anywhere between, and in none."""
    assert bisect.budget(n) == (math.ceil(math.log2(n)) + 2 if n > 1 else 2)  # SINCE and the one candidate
    for fix_at in [*range(n), None, -1]:  # -1: fixed already at SINCE
        calls = []

        def measure(i):
            calls.append(i)
            return bisect.Probe(i, fix_at is not None and i >= fix_at, "")
        found = bisect.bisect(n, measure)
        assert len(calls) == len(set(calls)) <= bisect.budget(n)
        assert {-1, n - 1} <= set(calls)  # both ends measured
        if fix_at in (None, -1):
            assert found.changes == () and found.monotone
        else:
            assert [(c.at, c.exact, c.fixed) for c in found.changes] == [(fix_at, True, True)]


def test_bisection_reports_a_fix_that_upstream_undid():
    """Fixed at 4, broken again at 9 of 12: the ends agree; the suspect (where the fix patch
    stopped applying) shows the fix, and each change is reported."""
    def measure(i):
        return bisect.Probe(i, 4 <= i < 9, "")
    found = bisect.bisect(12, measure, suspects=[5])
    assert not found.monotone and len(found.probes) <= bisect.budget(12)
    assert [(c.fixed, c.after < c.at) for c in found.changes] == [(True, True), (False, True)]
    assert found.changes[0].after < 4 <= found.changes[0].at and found.changes[1].after < 9 <= found.changes[1].at


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_apply_on_a_conflict_points_at_radar_with_the_users_values(history_template, tmp_path, capsys):
    """make apply stops at the fixed-upstream conflict; the way on is make radar, with the same checkout."""
    clone = tmp_path / "trtllm"
    sh("git", "clone", "-q", history_template.as_uri(), clone)
    assert main(["apply", "--target", "main", "--src", str(clone)]) == 3
    err = capsys.readouterr().err
    assert f"run: patchkit radar --target main --src {clone} (since which upstream commit" in err

"""Every verdict path of make radar: its words and its exit code agree (#33 item 5).

After the documented refresh radar printed "nothing to do" and exited 1 ("the set's status
changed": a patch conflicted at SINCE, the recorded base, and applied at UNTIL), and a fix
whose test patch upstream already had read "nothing to do" with exit 1 too. Now exit 0 is
"nothing to do" and nothing else, for each fix and for the stack: each path of
verdict.conclude is driven here with the statuses radar's scan would find, on a real clone
(the docs and fixed-upstream paths read upstream's files at UNTIL), and judged by the
command table's own verdict.
"""
from __future__ import annotations

import pytest

from patchkit import patchset
from patchkit.cli import COMMANDS
from patchkit.git import Repo
from patchkit.radar import command as radar_cmd, history, scan, verdict
from helpers import ROOT, sh

A, OFF, W3, UP, CON = scan.APPLIES, scan.OFFSET, scan.series.THREEWAY, scan.series.UPSTREAM, scan.series.CONFLICT


def _tests(since: bool | None, until: bool | None, change: str | None = None, at: str = "") -> dict:
    changes = [{"commit": at, "after": "", "fixed": change == "fixed", "exact": True}] if change else []
    return {"probes": 2, "budget": 2, "monotone": True, "changes": changes, "probed": [],
            "since": {"fixed": since, "counts": "30/30" if since else "7/30"},
            "until": {"fixed": until, "counts": "30/30" if until else "7/30"}}


def judge(checkout, root, target: str, statuses: dict[str, tuple[tuple[str, str], ...]],
          tests: dict[str, dict] | None = None):
    """Radar's result for a set whose fixes' patches have these (SINCE, UNTIL) statuses, in
    stack order ({fix id: ((since, until) per patch)}), over one candidate commit (UNTIL)."""
    ps = patchset.load(root, target)
    repo = Repo(checkout)
    since, until = sh("git", "-C", checkout, "rev-parse", "HEAD~1", "HEAD").stdout.split()
    cand = history.Commit(until, "2026-12-03T00:00:00+00:00", "Upstream moves", ())
    fixes, pairs = [], []
    for fix in ps.fixes:
        pair = statuses[fix.id]
        summaries = [radar_cmd.PatchSummary(p.name, s, u, until if s != u and u.startswith(OFF) else None,
                                            until if s in (A, OFF) and u in (W3, CON, UP) else None,
                                            (u == W3) if s in (A, OFF) and u in (W3, CON, UP) else None,
                                            until if u == UP and s != UP else None)
                     for p, (s, u) in zip(fix.patches, pair)]
        t = (tests or {}).get(fix.id) or _tests(False, False)
        for c in t["changes"]:
            c["commit"], c["after"] = until, since
        fixes.append(radar_cmd.FixRadar(fix.id, fix.kind, fix.origin, summaries, t))
        pairs.append(([scan.Status(s.split()[0], " ".join(s.split()[1:])) for s, _u in pair],
                      [scan.Status(u.split()[0], " ".join(u.split()[1:])) for _s, u in pair]))
    res = radar_cmd.RadarResult(radar_cmd.SCHEMA, target, "", {"commit": since, "rev": "HEAD~1", "how": "given"},
                                {"commit": until, "rev": "main"}, [], 1, 1, [f.id for f in ps.fixes], fixes, [],
                                False, "nothing", "", "")
    for fx, fix, (at_since, at_until) in zip(fixes, ps.fixes, pairs):
        verdict.conclude(fx, res, ps, fix, repo, [cand], at_since, at_until, several=ps.stacked)
    verdict.combine(res)
    return res, COMMANDS["radar"].verdict(res)


def agrees(res, code) -> bool:
    """The words and the exit: every fix says "nothing to do" exactly when radar exits 0."""
    return (code == 0) == all(f.verdict.startswith("nothing to do") for f in res.fixes) and \
        all(f.verdict.startswith("nothing to do") == (f.action == "nothing") for f in res.fixes)


OWN = "19514"
CASES = {
    # name: (statuses of rc25's own fix, its tests, the action, a phrase of its verdict)
    "unchanged": (((A, A), (A, A)), None, "nothing", "no commit of"),
    "an offset": (((A, "offset +3"), (A, A)), None, "nothing", "applies at an offset"),
    "refreshed after SINCE": (((CON, A), (A, A)), None, "nothing", "made anew after SINCE"),
    "upstream took its fix back": (((A, A), (A, A)), _tests(True, False), "nothing", "took its own fix back"),
    "3-way": (((A, W3), (A, A)), None, "refresh", "3-way merges it"),
    "a conflict": (((A, CON), (A, A)), None, "rework", "3-way does not merge it either"),
    "a conflict at SINCE already": (((CON, CON), (A, A)), None, "rework", "already does not apply cleanly"),
    "its code upstream": (((A, UP), (A, A)), None, "retire", "already upstream"),
    "its test patch upstream": (((A, A), (A, UP)), None, "retire", "the rest still applies"),
    "fixed upstream": (((A, CON), (A, A)), _tests(False, True, "fixed"), "retire", "fixed upstream at"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_verdict_path_says_what_its_exit_code_says(name, checkout):
    statuses, tests, action, phrase = CASES[name]
    res, code = judge(checkout, ROOT, "rc25", {OWN: statuses}, {OWN: tests} if tests else None)
    [fx] = res.fixes
    assert fx.action == action and phrase in fx.verdict, fx.verdict
    assert code == (0 if action == "nothing" else 1)
    assert agrees(res, code), (code, fx.verdict)


def test_a_refreshed_set_is_nothing_to_do_and_exits_0(checkout):
    """The issue's own case: the patch was refreshed on a later commit than upstream.base, so it
    conflicts at SINCE and applies at UNTIL; radar said "nothing to do: no commit ... changes the
    set's status" and exited 1. The words now say what changed, and the exit is 0."""
    res, code = judge(checkout, ROOT, "rc25", {OWN: ((CON, A), (A, A))})
    assert code == 0 and res.changed and res.action == "nothing"
    assert "no commit of" not in res.verdict and "upstream.base" in res.todo


def test_a_stack_exits_0_only_when_every_fix_has_nothing_to_do(checkout, stack_template):
    """A stack: the backport already upstream (retire it) beside our fix with nothing to do is
    exit 1, each fix's words saying its own; both with nothing to do is exit 0."""
    ps = patchset.load(stack_template, "rc25")
    backport, own = ps.fixes
    res, code = judge(checkout, stack_template, "rc25", {backport.id: tuple((A, UP) for _ in backport.patches),
                                                        own.id: ((A, A), (A, A))})
    assert code == 1 and res.action == "retire" and agrees(res, code)
    assert [f.action for f in res.fixes] == ["retire", "nothing"] and f"fix {backport.id}: already upstream" in res.verdict
    res, code = judge(checkout, stack_template, "rc25", {backport.id: tuple((A, A) for _ in backport.patches),
                                                        own.id: ((A, A), (A, A))})
    assert code == 0 and agrees(res, code)


def test_the_summary_says_nothing_to_do_where_radar_exits_0(checkout):
    """make summary read a report with changed=true and action=nothing as "changed: nothing",
    a row not as declared, for a radar that now exits 0: its row says "nothing to do", a good one."""
    import json
    from patchkit.ci import summary
    from patchkit.text.table import as_json
    res, code = judge(checkout, ROOT, "rc25", {OWN: ((CON, A), (A, A))})
    [row] = summary._radar_row(json.loads(as_json(res)), None)
    assert code == 0 and row.verdict == "nothing to do" and row.verdict in summary.GOOD
    res, code = judge(checkout, ROOT, "rc25", {OWN: ((A, W3), (A, A))})
    [row] = summary._radar_row(json.loads(as_json(res)), None)
    assert code == 1 and row.verdict == "changed: refresh" and row.verdict not in summary.GOOD

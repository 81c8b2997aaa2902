"""make radar: since which upstream commit does the set break, and since which is it no longer needed.

Exit codes (cli/commands.py): 0 when the set's status at UNTIL is what it was at SINCE and there is
nothing to do (every patch applies, perhaps at an offset; the tests' verdict unchanged); 1
when it changed (a patch needs 3-way, conflicts or is already upstream; upstream fixed the
bug), or when the set already needed work at SINCE and still does (a patch that conflicted
there, a bug already fixed there): the nightly job fails on 1. The usual codes otherwise:
2 bad input, 3 git failure, 4 SINCE/UNTIL not found.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import progress
from ..delta import upstreamfix
from ..errors import Hint, NotFound
from ..git import Repo, resolve_target_ref, short_ref
from ..model import PatchSet
from ..upstream import base_of
from . import bisect as bisection, history, scan

SCHEMA = 1  # the JSON's shape; bumped on any incompatible change (the nightly workflow reads it)


@dataclass(frozen=True)
class Row:
    """One commit where something changed: a patch's status or the tests' verdict."""

    commit: str
    short: str
    date: str
    subject: str
    patches: dict[str, str]  # patch name -> status
    tests: str  # 'fixed (30/30)', 'not fixed', '' when not pinned here


@dataclass(frozen=True)
class PatchSummary:
    name: str
    since: str  # status at SINCE
    until: str  # status at UNTIL
    first_offset: str | None  # commit ids
    first_break: str | None  # the first commit where it stops applying cleanly
    threeway_at_break: bool | None  # whether 3-way merges it there
    first_upstream: str | None  # the first commit where it reverse-applies


@dataclass
class RadarResult:
    schema: int
    target: str
    url: str
    since: dict[str, str]  # {commit, rev, how}
    until: dict[str, str]  # {commit, rev}
    paths: list[str]
    commits_in_range: int
    candidates: int
    patches: list[PatchSummary]
    tests: dict  # {probes, budget, monotone, since, until, changes: [...], probed: [...]}
    timeline: list[Row]
    changed: bool  # the status at UNTIL differs from SINCE's: exit 1
    action: str  # 'retire', 'refresh', 'rework', 'nothing'
    verdict: str
    todo: str
    hints: list[Hint] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # build/radar/<target>.{json,md}, once written


def radar(ps: PatchSet, repo: Repo, *, since: str | None = None, until: str | None = None,
          runner=None) -> RadarResult:
    """The set's status over SINCE..UNTIL (defaults: its recorded base .. its ref)."""
    if until:
        try:
            until_ref, until_sha = resolve_target_ref(repo, until)
        except NotFound:
            sha = repo.fetch_commit(until, trees=False)
            if sha is None:
                raise NotFound(f"{until} is not in {repo.path} nor on its origin", setting="until",
                               hint=Hint.choose("until")) from None
            until_ref, until_sha = until, sha
    else:
        until_ref, until_sha = base_of(repo, ps)
    until_ref = short_ref(until_ref)
    rng = history.resolve(ps, repo, until_ref, until_sha, since)
    cands = rng.candidates
    at_since, rows, outcomes = scan.scan(ps, repo, rng)
    names = [p.name for p in ps.patches]
    summaries = [_summary(i, name, at_since, rows, cands) for i, name in enumerate(names)]

    # The tests: bisected over the candidates that change what the probe reads.
    relevant = [i for i, c in enumerate(cands) if c.touches(history.verdict_paths(ps))]

    files = [rng.at_since, *history.states(rng, rng.paths)]

    def measure(k: int) -> bisection.Probe:
        # On a slim commit of the set's files there (the probe reads nothing else): no tree of
        # history is read or fetched.
        at = scan.slim_commit(repo, files[0 if k < 0 else relevant[k] + 1])
        outs = [] if k < 0 else outcomes[relevant[k]]
        found = upstreamfix.probe(ps, repo, at, outs, runner)
        if found is None:
            return bisection.Probe(k, False, "", "the set declares no regression test")
        counts = ", ".join(f"{c.passed}/{c.total}" for c in found.counts) or "-"
        return bisection.Probe(k, found.fixed, counts, found.why_not)

    fix_rows = [i for i, p in enumerate(ps.patches) if not p.tests_only]
    suspects = [k for k, i in enumerate(relevant)
                if any(rows[i][j].kind in (scan.series.CONFLICT, scan.series.UPSTREAM) for j in fix_rows)
                and (i == 0 or not any(rows[i - 1][j].kind in (scan.series.CONFLICT, scan.series.UPSTREAM)
                                       for j in fix_rows))]
    with progress.step("bisecting the tests' verdict"):
        bis = bisection.bisect(len(relevant), measure, suspects, limit=bisection.budget(len(cands)))
    by_probe = {p.at: p for p in bis.probes}
    to_cand = {k: i for k, i in enumerate(relevant)}
    changes = [{"commit": cands[to_cand[c.at]].sha, "after": rng.since if c.after < 0 else cands[to_cand[c.after]].sha,
                "fixed": c.fixed, "exact": c.exact} for c in bis.changes]
    test_at = {to_cand[c.at]: c for c in bis.changes if c.exact}

    timeline: list[Row] = []
    prev = at_since
    for i, c in enumerate(cands):
        change = test_at.get(i)
        if [str(s) for s in rows[i]] != [str(s) for s in prev] or change is not None:
            probe = by_probe.get(relevant.index(i)) if i in relevant else None
            tests = ""
            if change is not None:
                tests = ("fixed" if change.fixed else "not fixed") + (f" ({probe.counts})" if probe else "")
            timeline.append(Row(c.sha, c.short, c.date[:10], c.subject,
                                {n: str(s) for n, s in zip(names, rows[i])}, tests))
        prev = rows[i]
    start, end = by_probe[-1], by_probe[len(relevant) - 1] if relevant else by_probe[-1]
    tests = {"probes": len(bis.probes), "budget": bis.budget, "monotone": bis.monotone,
             "since": {"fixed": start.fixed, "counts": start.counts},
             "until": {"fixed": end.fixed, "counts": end.counts}, "changes": changes,
             "probed": [{"commit": rng.since if p.at < 0 else cands[to_cand[p.at]].sha, "fixed": p.fixed,
                         "counts": p.counts} for p in bis.probes]}
    res = RadarResult(SCHEMA, ps.target, repo.config_get("remote.origin.url") or str(repo.path),
                      {"commit": rng.since, "rev": rng.since_rev, "how": rng.since_how},
                      {"commit": rng.until, "rev": rng.until_rev}, list(rng.paths), rng.commits_in_range,
                      len(cands), summaries, tests, timeline, False, "nothing", "", "")
    _conclude(res, ps, repo, cands, at_since, rows[-1] if rows else at_since)
    return res


def _summary(i: int, name: str, at_since, rows, cands) -> PatchSummary:
    def sha(n):
        return None if n is None else cands[n].sha
    brk = scan.first(rows, i, (scan.series.CONFLICT, scan.series.THREEWAY, scan.series.UPSTREAM))
    return PatchSummary(name, str(at_since[i]), str(rows[-1][i]) if rows else str(at_since[i]),
                        sha(scan.first(rows, i, (scan.OFFSET,))), sha(brk),
                        None if brk is None else rows[brk][i].kind == scan.series.THREEWAY,
                        sha(scan.first(rows, i, (scan.series.UPSTREAM,))))


def _conclude(res: RadarResult, ps: PatchSet, repo: Repo, cands, at_since, at_until) -> None:
    """The one-line verdict, what to do, the exit's meaning and the hints. A status the set
    already had at SINCE (no first commit in the range) is said as "at SINCE or before"."""
    where = f"patches/{ps.root.name}/patchset.yaml"
    by_sha = {c.sha: c for c in cands}
    since = res.since["commit"]

    def said(sha: str | None) -> str:
        if sha is None:
            return f"SINCE {since[:12]} or before"
        c = by_sha[sha]
        return f"{c.short} ({c.date[:10]}, {c.subject})"

    def first_of(shas) -> str | None:  # the earliest of these commits of the range (None: SINCE)
        order = [c.sha for c in cands]
        return min(shas, key=lambda s: -1 if s is None else order.index(s))

    fixed_at = next((c for c in res.tests["changes"] if c["fixed"]), None)
    kinds_since = [s.kind for s in at_since]
    kinds_until = [s.kind for s in at_until]
    res.changed = (res.tests["since"]["fixed"] != res.tests["until"]["fixed"]
                   or [k if k != scan.OFFSET else scan.APPLIES for k in kinds_since]
                   != [k if k != scan.OFFSET else scan.APPLIES for k in kinds_until])
    if res.tests["until"]["fixed"]:
        statuses = {p.name: scan.series.APPLIED if s.kind in (scan.APPLIES, scan.OFFSET) else s.kind
                    for p, s in zip(ps.patches, at_until)}
        retire, keep, docs = upstreamfix.disposition(ps, repo, res.until["commit"], statuses)
        res.action = "retire"
        if not res.tests["since"]["fixed"] and fixed_at:
            at = said(fixed_at["commit"]) if fixed_at["exact"] else \
                f"one of the commits after {fixed_at['after'][:12]} up to {said(fixed_at['commit'])}"
            res.verdict = f"fixed upstream at {at}: the set's tests give without the fix what the set declares with it"
            res.todo = upstreamfix.advice(where, retire, keep, docs, fixed_at["commit"] if fixed_at["exact"] else "",
                                          unknown=f"one of the commits after {fixed_at['after'][:12]} up to "
                                                  f"{fixed_at['commit'][:12]}")
            return
        # Already at SINCE: the commit that fixed it is older than the range.
        res.verdict = (f"fixed upstream at {said(None)}: the set's tests give there without the fix what the set "
                       f"declares with it")
        res.todo = upstreamfix.advice(where, retire, keep, docs, unknown=f"it is {since[:12]} or older: radar "
                                      f"from an earlier SINCE, where the tests still fail without the set, names it")
        res.hints = [Hint.choose("since", also="(an earlier commit of the ref, where the set's tests still fail "
                                 "without it: radar then names the commit that fixed the bug)")]
        return
    fix_names = {p.name for p in ps.patches if not p.tests_only}
    ups = [s for s in res.patches if s.until == scan.series.UPSTREAM]
    if ups and all(s.until == scan.series.UPSTREAM for s in res.patches if s.name in fix_names):
        first = first_of([s.first_upstream for s in ups])
        res.action = "retire"
        res.verdict = "already upstream: " + "; ".join(f"{s.name} since {said(s.first_upstream)}" for s in ups)
        res.todo = (f"retire {', '.join(s.name for s in ups)}: drop {'them' if len(ups) > 1 else 'it'} from the "
                    f"series and record {first[:12] if first else f'the commit that landed it ({since[:12]} or older)'} in "
                    f"status.applied_upstream of {where}")
        return
    broken = [s for s in res.patches if s.until in (scan.series.CONFLICT, scan.series.THREEWAY)]
    # Conflicting already at SINCE: radar's 3-way merges from SINCE, so where it stopped and
    # whether 3-way merges it lie before the range.
    before = [s for s in broken if s.first_break is None and s.until == scan.series.CONFLICT]
    if before:
        res.action = "rework"
        res.verdict = "; ".join(
            f"{s.name} already does not apply cleanly at {said(None)} (where it stopped, and whether 3-way "
            f"merges it, is older than the range)" if s in before else
            f"{s.name} stops applying cleanly at {said(s.first_break)}" for s in broken)
        res.todo = ("find where it stopped applying: radar from an earlier SINCE, where the set still applied, "
                    "names the commit and whether 3-way merges it; then refresh the patch with a 3-way merge "
                    "or rework it by hand")
        res.hints = [Hint.choose("since", also="(an earlier commit of the ref, where the set still applied)")]
        return
    if broken:
        first = first_of([s.first_break for s in broken])
        against = first[:12] if first else f"{res.until['commit'][:12]} ({res.until['rev']})"
        if all(s.until == scan.series.THREEWAY for s in broken):
            res.action = "refresh"
            res.verdict = "; ".join(f"{s.name} stops applying cleanly at {said(s.first_break)}; 3-way merges it"
                                    for s in broken)
            res.todo = (f"refresh the patch at {against} with THREEWAY=1: apply with a 3-way merge, "
                        f"then export the branch back into patches/{ps.root.name}")
            res.hints = [Hint.run("apply", target=ps.target, threeway=True), Hint.run("export", target=ps.target)]
        else:
            res.action = "rework"
            res.verdict = "; ".join(f"{s.name} stops applying cleanly at {said(s.first_break)}"
                                    + ("; 3-way merges it" if s.until == scan.series.THREEWAY else
                                       "; 3-way merged it there but no longer does" if s.threeway_at_break else
                                       "; 3-way does not merge it either")
                                    for s in broken)
            res.todo = (f"rework the patch by hand against {against}, where it first stopped applying; upstream "
                        f"has not fixed the bug (its tests still fail without the set)")
        return
    offsets = [s for s in res.patches if s.until.startswith(scan.OFFSET)]
    res.action = "nothing"
    if offsets:
        res.verdict = "nothing to do: " + "; ".join(f"{s.name} applies at an offset ({s.until.split(' ', 1)[1]}) "
                                                    f"since {said(s.first_offset)}" for s in offsets)
        res.todo = "nothing; the next make apply and make export record the new line numbers"
    else:
        res.verdict = (f"nothing to do: no commit of {res.since['commit'][:12]}..{res.until['commit'][:12]} changes "
                       f"the set's status ({res.candidates} of {res.commits_in_range} commits touch its paths)")
        res.todo = "nothing"


def report_paths(target: str, out_dir: Path) -> list[str]:
    """Where the report goes: build/radar/<target>.json and .md."""
    return [str(out_dir / f"{target}.json"), str(out_dir / f"{target}.md")]


def write(res: RadarResult, out_dir: Path, json_text: str, markdown: str) -> None:
    """build/radar/<target>.{json,md}, each written beside and renamed into place (a kill
    leaves the old report or the new one, and at most a hidden temporary file)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for path, text in zip(report_paths(res.target, out_dir), (json_text, markdown)):
        tmp = Path(f"{path}.{os.getpid()}.tmp")
        tmp = tmp.with_name("." + tmp.name)
        tmp.write_text(text + "\n")
        tmp.replace(path)

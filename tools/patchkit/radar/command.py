"""make radar: since which upstream commit does each fix of the stack break, and since which is
it no longer needed.

The patches' statuses are scanned once for the whole stack (each patch applies on the ones
before it); each fix then gets its own verdict: a backport is already upstream where its
patches apply in reverse; our fix is fixed upstream where its own tests, on upstream with the
rest of the stack (delta/upstreamfix.py, stack.without), give what it declares with it.
FIXID limits the report, and the test probes, to one fix.

Exit codes (cli/commands.py): 0 when every fix's status at UNTIL is what it was at SINCE and
there is nothing to do (every patch applies, perhaps at an offset; the tests' verdict
unchanged); 1 when one changed (a patch needs 3-way, conflicts or is already upstream;
upstream fixed the bug), or when a fix already needed work at SINCE and still does (a patch
that conflicted there, a bug already fixed there): the nightly job fails on 1. The usual codes
otherwise: 2 bad input, 3 git failure, 4 SINCE/UNTIL or FIXID not found.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import fresh, progress, stack
from ..delta import upstreamfix
from ..errors import Hint, NotFound
from ..git import Repo, resolve_target_ref, short_ref
from ..model import BACKPORT, Fix, PatchSet
from . import bisect as bisection, history, scan, verdict as verdicts

# The JSON's shape; bumped on any incompatible change (the nightly workflow and make summary
# read it). 2: a section per fix (`fixes`), the timeline's statuses and test verdicts per fix.
SCHEMA = 2


@dataclass(frozen=True)
class Row:
    """One commit where something changed: a patch's status or a fix's tests' verdict."""

    commit: str
    short: str
    date: str
    subject: str
    fixes: dict[str, dict]  # fix id -> {"patches": {patch name: status}, "tests": 'fixed (30/30)', 'not fixed' or ''}


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
class FixRadar:
    """One fix of the stack over the range: its patches, its own tests' verdict, what to do."""

    id: str
    kind: str  # ours or backport
    origin: str
    patches: list[PatchSummary]
    # Its own tests, bisected: {probes, budget, monotone, since, until, changes, probed}, and
    # `skipped` (why they were not run) where they were not.
    tests: dict
    changed: bool = False  # its status at UNTIL differs from SINCE's
    action: str = "nothing"  # 'retire', 'refresh', 'rework', 'nothing'
    verdict: str = ""
    todo: str = ""
    # Where upstream has it: the commit since which UNTIL carries the backport (its patches
    # apply in reverse) or the fix (its tests pass without it); SINCE's own id when it was so
    # there already; "" when not (or not pinned to one commit: the verdict says the span).
    upstream_at: str = ""
    # Our fix whose code is retired: its pr.docs phrases still in upstream's docs at UNTIL
    # ({"phrases": [...], "pages": {page: [phrase, ...]}, "wanted": bool}); None otherwise.
    docs: dict | None = None
    hints: list[Hint] = field(default_factory=list)


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
    stack: list[str]  # the ids of the stack's fixes, in order
    fixes: list[FixRadar]  # the fixes reported (every fix of the stack, or FIXID's), in stack order
    timeline: list[Row]
    changed: bool  # some fix's status at UNTIL differs from SINCE's: exit 1
    action: str  # the most pressing of the fixes' actions: 'rework', 'refresh', 'retire', 'nothing'
    verdict: str  # the fixes' verdicts, one line ("fix <id>: ..." each where there are several)
    todo: str
    hints: list[Hint] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # build/radar/<target>.{json,md}, once written
    view: fresh.View | None = None  # UNTIL by default, the set's ref: how fresh that view of upstream is


def radar(ps: PatchSet, repo: Repo, *, since: str | None = None, until: str | None = None,
          runner=None, fix_id: str | None = None, fetch: bool = True) -> RadarResult:
    """The stack's status over SINCE..UNTIL (defaults: its recorded base .. its ref), per fix
    (fix_id: that fix only). Without UNTIL, the set's ref is fetched first (fresh.view), unless
    fetch is False."""
    chosen = [stack.find(ps, fix_id)] if fix_id is not None else list(ps.fixes)
    seen = None
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
        seen = fresh.view(repo, ps, fetch=fetch)
        until_ref, until_sha = seen.ref, seen.commit
    until_ref = short_ref(until_ref)
    rng = history.resolve(ps, repo, until_ref, until_sha, since)
    cands = rng.candidates
    at_since, rows, outcomes = scan.scan(ps, repo, rng)
    at_until = rows[-1] if rows else at_since
    where = {p.name: i for i, p in enumerate(ps.patches)}
    probe_reads = history.verdict_paths(ps)
    relevant = [i for i, c in enumerate(cands) if c.touches(probe_reads)]
    files = [rng.at_since, *history.states(rng, rng.paths)]
    reports: list[FixRadar] = []
    pinned: dict[str, dict[int, bisection.Change]] = {}
    counted: dict[str, dict[int, bisection.Probe]] = {}
    several = ps.stacked
    idx_of = {f.id: [where[p.name] for p in f.patches] for f in chosen}  # each fix's patches, by their place in the stack
    for fix in chosen:
        idx = idx_of[fix.id]
        summaries = [_summary(i, ps.patches[i].name, at_since, rows, cands) for i in idx]
        skipped = _not_probed(fix, [at_until[i] for i in idx])
        if skipped:
            tests = {"skipped": skipped, "probes": 0, "budget": 0, "monotone": True, "since": {"fixed": None, "counts": ""},
                     "until": {"fixed": None, "counts": ""}, "changes": [], "probed": []}
        else:
            tests, pinned[fix.id], counted[fix.id] = _tests(ps, repo, fix, idx, rng, files, relevant, rows, outcomes,
                                                            runner, several=several)
        reports.append(FixRadar(fix.id, fix.kind, fix.origin, summaries, tests))

    timeline: list[Row] = []
    prev = at_since
    for i, c in enumerate(cands):
        moved = any(str(rows[i][where[p.name]]) != str(prev[where[p.name]]) for f in chosen for p in f.patches)
        if moved or any(i in pinned.get(f.id, {}) for f in chosen):
            cells = {}
            for f in chosen:
                change = pinned.get(f.id, {}).get(i)
                probe = counted.get(f.id, {}).get(i)
                said = ("fixed" if change.fixed else "not fixed") + (f" ({probe.counts})" if probe else "") \
                    if change is not None else ""
                cells[f.id] = {"patches": {p.name: str(rows[i][where[p.name]]) for p in f.patches}, "tests": said}
            timeline.append(Row(c.sha, c.short, c.date[:10], c.subject, cells))
        prev = rows[i]
    res = RadarResult(SCHEMA, ps.target, repo.config_get("remote.origin.url") or str(repo.path),
                      {"commit": rng.since, "rev": rng.since_rev, "how": rng.since_how},
                      {"commit": rng.until, "rev": rng.until_rev}, list(rng.paths), rng.commits_in_range,
                      len(cands), [f.id for f in ps.fixes], reports, timeline, False, "nothing", "", "", view=seen)
    for fx, fix in zip(reports, chosen):
        idx = idx_of[fix.id]
        verdicts.conclude(fx, res, ps, fix, repo, cands, [at_since[i] for i in idx], [at_until[i] for i in idx],
                          several=several)
    verdicts.combine(res)
    return res


def _not_probed(fix: Fix, at_until) -> str:
    """Why a fix's tests need no probe: a backport whose changes UNTIL already has (each of
    its code patches applies in reverse there) is retired on that alone."""
    code = [s for s, p in zip(at_until, fix.patches) if not p.tests_only] or list(at_until)
    if fix.kind == BACKPORT and code and all(s.kind == scan.series.UPSTREAM for s in code):
        return "already upstream at UNTIL: its patches apply there in reverse"
    return ""


def _tests(ps: PatchSet, repo: Repo, fix: Fix, idx: list[int], rng, files, relevant, rows, outcomes, runner,
           several: bool) -> tuple[dict, dict[int, bisection.Change], dict[int, bisection.Probe]]:
    """The fix's own tests bisected over the candidates that change what the probe reads, on
    upstream with the rest of the stack and the fix's own test files: (the report's tests
    section, the exact changes by candidate, the probes by candidate)."""
    cands = rng.candidates

    def measure(k: int) -> bisection.Probe:
        # On a slim commit of the set's files there (the probe reads nothing else): no tree of
        # history is read or fetched.
        at = scan.slim_commit(repo, files[0 if k < 0 else relevant[k] + 1])
        outs = [] if k < 0 else outcomes[relevant[k]]
        found = upstreamfix.probe(ps, repo, at, outs, runner, fix=fix)
        if found is None:
            return bisection.Probe(k, False, "", "the fix declares no regression test" if several else
                                   "the set declares no regression test")
        counts = ", ".join(f"{c.passed}/{c.total}" for c in found.counts) or "-"
        return bisection.Probe(k, found.fixed, counts, found.why_not)

    code = [i for i, p in zip(idx, fix.patches) if not p.tests_only]
    gone = (scan.series.CONFLICT, scan.series.UPSTREAM)
    suspects = [k for k, i in enumerate(relevant)
                if any(rows[i][j].kind in gone for j in code)
                and (i == 0 or not any(rows[i - 1][j].kind in gone for j in code))]
    with progress.step(f"bisecting the tests' verdict of fix {fix.id}" if several else "bisecting the tests' verdict"):
        bis = bisection.bisect(len(relevant), measure, suspects, limit=bisection.budget(len(cands)))
    by_probe = {p.at: p for p in bis.probes}
    to_cand = dict(enumerate(relevant))
    changes = [{"commit": cands[to_cand[c.at]].sha, "after": rng.since if c.after < 0 else cands[to_cand[c.after]].sha,
                "fixed": c.fixed, "exact": c.exact} for c in bis.changes]
    start, end = by_probe[-1], by_probe[len(relevant) - 1] if relevant else by_probe[-1]
    tests = {"probes": len(bis.probes), "budget": bis.budget, "monotone": bis.monotone,
             "since": {"fixed": start.fixed, "counts": start.counts},
             "until": {"fixed": end.fixed, "counts": end.counts}, "changes": changes,
             "probed": [{"commit": rng.since if p.at < 0 else cands[to_cand[p.at]].sha, "fixed": p.fixed,
                         "counts": p.counts} for p in bis.probes]}
    exact = {to_cand[c.at]: c for c in bis.changes if c.exact}
    return tests, exact, {to_cand[k]: p for k, p in by_probe.items() if k >= 0}


def _summary(i: int, name: str, at_since, rows, cands) -> PatchSummary:
    def sha(n):
        return None if n is None else cands[n].sha

    def since_when(kinds) -> int | None:
        """Where patch i took the status it has at UNTIL, if of kinds: the first candidate of its
        last stretch of them (None: it had it at SINCE already); else the first candidate with one."""
        if not rows or rows[-1][i].kind not in kinds:
            return scan.first(rows, i, kinds)
        n = len(rows) - 1
        while n > 0 and rows[n - 1][i].kind in kinds:
            n -= 1
        return None if n == 0 and at_since[i].kind in kinds else n
    brk = since_when((scan.series.CONFLICT, scan.series.THREEWAY, scan.series.UPSTREAM))
    return PatchSummary(name, str(at_since[i]), str(rows[-1][i]) if rows else str(at_since[i]),
                        sha(since_when((scan.OFFSET,))), sha(brk),
                        None if brk is None else rows[brk][i].kind == scan.series.THREEWAY,
                        sha(since_when((scan.series.UPSTREAM,))))


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

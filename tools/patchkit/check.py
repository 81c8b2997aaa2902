"""make check: how every target's series would apply to a checkout, changing nothing."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import fresh, provenance, series, stack
from .errors import BadInput, Hint, NotFound
from .git import Repo, fetch_command
from .model import PatchSet

if TYPE_CHECKING:
    from .delta import upstreamfix


@dataclass
class FixCheck:
    """One fix of a target's stack as check reports it: which patches are its, and which of its
    files an image cannot carry by laying them over the installed package (a wheel build)."""

    id: str
    kind: str
    origin: str
    patches: list[str]
    wheel: dict[str, list[str]] = field(default_factory=dict)  # patch -> the files a wheel is built from

    @property
    def needs_wheel_build(self) -> bool:
        return bool(self.wheel)


def fix_checks(ps: PatchSet) -> list[FixCheck]:
    return [FixCheck(f.id, f.kind, f.origin, [p.name for p in f.patches],
                     {p.name: files for p, files in stack.wheel_files(ps, f)}) for f in ps.fixes]


@dataclass
class TargetCheck:
    target: str
    ref: str
    base: str | None
    outcomes: list[series.Outcome] = field(default_factory=list)
    note: str = ""
    upstream_fix: upstreamfix.UpstreamFix | None = None  # measured when a fix patch does not apply cleanly
    fixes: list[FixCheck] = field(default_factory=list)  # the stack, in order
    view: fresh.View | None = None  # the commit judged, and how fresh that view of upstream is
    verdict: str = field(init=False)  # fields, not properties, so that --json carries them too
    conflicts: bool = field(init=False)
    stale: bool = field(init=False)

    def __post_init__(self) -> None:
        self.verdict = self._verdict()
        # A patch conflicts, or upstream fixed the bug so that the set must be retired: exit 3.
        self.conflicts = (any(o.status == series.CONFLICT for o in self.outcomes)
                          or bool(self.upstream_fix and self.upstream_fix.fixed))
        # The series applies, but not as written: a patch needs 3-way (refresh the set) or is
        # already upstream (retire it): exit 1. Only a plain apply of every patch is exit 0.
        self.stale = any(o.status in (series.THREEWAY, series.UPSTREAM) for o in self.outcomes)

    def _verdict(self) -> str:
        """One phrase that agrees with every patch's row: the common status, or each status
        with how many of the series have it (never 'applies cleanly' over a patch that is
        already upstream)."""
        if self.base is None:
            return "ref not in checkout"
        statuses = [o.status for o in self.outcomes]
        if not statuses:
            return "empty series"
        words = [WORDS[s] for s in ORDER if s in statuses]
        fixed = "fixed upstream: " if self.upstream_fix and self.upstream_fix.fixed else ""
        if len(words) == 1:
            return fixed + words[0]
        return fixed + ", ".join(f"{WORDS[s]} ({statuses.count(s)} of {len(statuses)})" for s in ORDER if s in statuses)


# Worst first, so that a mixed verdict leads with what needs doing.
ORDER = (series.CONFLICT, series.THREEWAY, series.UPSTREAM, series.APPLIED)
WORDS = {series.CONFLICT: "conflicts", series.THREEWAY: "needs 3-way", series.UPSTREAM: "already upstream",
         series.APPLIED: "applies cleanly"}  # a probe: nothing was applied


class Checks(list):
    """The targets' checks, and what to run next: make radar for each target that conflicts,
    needs 3-way, has a patch already upstream or is fixed upstream (since which upstream commit?)."""

    hints: list[Hint]


def check(sets: list[PatchSet], *, src: Path, fetch: bool = True) -> Checks:
    """Probe each set against its ref in the checkout at src: clean / 3-way / conflict / upstream.
    A patch without its provenance (an Origin and a status trailer), or with a DEP-3 field twice,
    is refused before any probe (a patch filed under another fix than its Origin names is
    refused when the set loads). Each set's ref is fetched first (fresh.view), unless fetch is False."""
    lacking = [m for ps in sets for m in provenance.missing(ps)]
    if lacking:
        more = f" (and {len(lacking) - 1} more: {', '.join(m.patch.name for m in lacking[1:])})" if lacking[1:] else ""
        raise BadInput(lacking[0].one_line() + more)
    twice = [line for ps in sets for line in provenance.twice(ps)]
    if twice:
        raise BadInput(twice[0] + (f" (and {len(twice) - 1} more)" if twice[1:] else ""))
    repo = Repo.open(src)
    results: list[TargetCheck] = []
    for ps in sets:
        try:
            seen = fresh.view(repo, ps, fetch=fetch)
        except NotFound as exc:
            results.append(TargetCheck(ps.target, ps.upstream.ref, None, note=exc.message, fixes=fix_checks(ps)))
            continue
        base = seen.commit
        # Probe plainly first, so each conflict is named; then see whether 3-way rescues it. Nothing
        # is kept, so no commit is made (record=False): one git apply per clean patch, not three
        # git processes (a 10-fix stack's check took 10x the one-fix set's, #26's bench).
        plain = series.apply_series(repo, base, ps.patches, stop_on_conflict=False, announce=f"{ps.target}: checking",
                                    record=False)
        outcomes = plain.outcomes
        if not plain.ok:
            merged = series.apply_series(repo, base, ps.patches, threeway=True, stop_on_conflict=False,
                                         merge_bases=[ps.upstream.recorded_base], record=False)
            # A merged patch keeps the drift its plain probe found: it says what 3-way got past.
            outcomes = [series.Outcome(m.patch, m.status, m.commit, p.drift)
                        if p.status == series.CONFLICT and m.status == series.THREEWAY else p
                        for p, m in zip(plain.outcomes, merged.outcomes)]
        fix = None
        if any(o.status != series.APPLIED for o in outcomes):  # a clean series needs no probe, nor its modules
            from .delta import upstreamfix
            fix = upstreamfix.probe(ps, repo, base, outcomes) if upstreamfix.needs_probe(outcomes) else None
        results.append(TargetCheck(ps.target, ps.upstream.ref, base, outcomes, upstream_fix=fix, fixes=fix_checks(ps),
                                   view=seen))
    if results and all(r.base is None for r in results):
        # A CI gate must not pass on an empty or wrong repository (#24 item 7).
        fetch = " && ".join(dict.fromkeys(fetch_command(repo, ps.upstream.ref, ps.upstream.url) for ps in sets))
        raise NotFound(f"no target's ref is in {src} ({', '.join(f'{r.target}: {r.ref}' for r in results)}); "
                       f"nothing was checked; run: {fetch}")
    out = Checks(results)
    out.hints = [Hint.radar(r.target) for r in results if r.conflicts or r.stale]
    return out

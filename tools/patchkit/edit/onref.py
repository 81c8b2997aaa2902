"""A verb's new stack on the set's ref: applied as make apply applies a series (the one series
path: 3-way from the recorded base and each change's own base where a patch drifted), and
refused, naming the fix, the patch, the file and the hunk, where it does not apply.
"""
from __future__ import annotations

from collections.abc import Iterable

from .. import series, stack
from ..errors import Conflict, Hint
from ..git import Repo, Sha, short_ref
from ..model import PatchSet


def bases(ps: PatchSet, *more: str) -> list[str]:
    """The merge bases a drifted patch is tried from: the set's recorded base, each backport's
    upstream base, then more (the commits a new fix was made on)."""
    return list(dict.fromkeys([ps.upstream.recorded_base, *(f.upstream_base for f in ps.fixes if f.upstream_base),
                               *more]))


def apply(repo: Repo, target: Sha, ps: PatchSet, merge_bases: Iterable[str], *, threeway: bool = True,
          stop_on_conflict: bool = True) -> series.SeriesResult:
    """The stack as commits on target (nobody keeps them: throwaway dates)."""
    return series.apply_series(repo, target, ps.patches, threeway=threeway, merge_bases=list(merge_bases),
                               committer_date=series.THROWAWAY_DATE, announce="applying the new stack:",
                               stop_on_conflict=stop_on_conflict)


def refuse(repo: Repo, ps: PatchSet, applied: series.SeriesResult, ref: str, target: Sha, what: str) -> None:
    """Conflict unless every patch of the new stack applied (cleanly or 3-way): the error
    names the fix, the patch, the file and the hunk, as apply does; nothing is written.
    what: the stack as said ('the stack with this backport')."""
    for o in applied.outcomes:
        owner = stack.owner(ps, o.patch)
        if o.status == series.CONFLICT:
            # As make check does: the plain probe names the hunk; the 3-way merge says why it did not help.
            plain = series.apply_series(repo, target, ps.patches, committer_date=series.THROWAWAY_DATE)
            drift = next((p.drift for p in plain.outcomes if p.patch is o.patch and p.drift), None)
            said = f"{drift.one_line()}; {o.drift.reason}" if drift else o.drift.one_line()
            raise Conflict(f"{what} does not apply on {short_ref(ref)} ({target[:12]}): fix {owner.id}: "
                           f"{o.patch.name}: {said}; nothing written",
                           details=series.drift_report(plain.outcomes), hint=Hint.radar(ps.target))
        if o.status == series.UPSTREAM:
            raise Conflict(f"fix {owner.id}: {o.patch.name} is already in {short_ref(ref)} ({target[:12]}); retire it "
                           f"from the stack first; nothing written", hint=Hint.radar(ps.target))

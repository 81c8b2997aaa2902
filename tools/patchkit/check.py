"""make check: how every target's series would apply to a checkout, changing nothing."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import series
from .errors import NotFound
from .git import Repo
from .model import PatchSet
from .upstream import base_of


@dataclass
class TargetCheck:
    target: str
    ref: str
    base: str | None
    outcomes: list[series.Outcome] = field(default_factory=list)
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.base is None:
            return "ref not in checkout"
        statuses = [o.status for o in self.outcomes]
        if series.CONFLICT in statuses:
            return "conflicts"
        if series.THREEWAY in statuses:
            return "needs 3-way"
        if statuses and all(s == series.UPSTREAM for s in statuses):
            return "already upstream"
        return "applies cleanly"


def check(sets: list[PatchSet], *, src: Path) -> list[TargetCheck]:
    """Probe each set against its ref in the checkout at src: clean / 3-way / conflict / upstream."""
    repo = Repo.open(src)
    results = []
    for ps in sets:
        try:
            _ref, base = base_of(repo, ps)
        except NotFound as exc:
            results.append(TargetCheck(ps.target, ps.upstream.ref, None, note=exc.message))
            continue
        # Probe plainly first, so each conflict is named; then see whether 3-way rescues it.
        plain = series.apply_series(repo, base, ps.patches, stop_on_conflict=False)
        outcomes = plain.outcomes
        if not plain.ok:
            merged = series.apply_series(repo, base, ps.patches, threeway=True, stop_on_conflict=False)
            outcomes = [m if p.status == series.CONFLICT and m.status == series.THREEWAY else p
                        for p, m in zip(plain.outcomes, merged.outcomes)]
        results.append(TargetCheck(ps.target, ps.upstream.ref, base, outcomes))
    return results

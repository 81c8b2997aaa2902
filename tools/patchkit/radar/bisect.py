"""Since which commit do the set's regression tests give, without the fix, what the set
declares for its patched tree? Bisected over the candidates, measured as the fixed-upstream
probe measures (delta/upstreamfix.py, source mode), at most ceil(log2(candidates)) + 2 probes.

The verdict is assumed to change once (unfixed, then fixed); the two ends are measured, so a
range whose ends agree reports no change. Where a probe contradicts that (fixed, then broken
again), each change found is reported, exactly where the probes pinned it to one commit, and
as a span of commits where the budget ran out first.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import progress


@dataclass(frozen=True)
class Probe:
    """One measurement: where (-1: SINCE), fixed or not, and the counts, e.g. '30/30'."""

    at: int
    fixed: bool
    counts: str
    why: str = ""


@dataclass(frozen=True)
class Change:
    """The verdict changed at candidate `at` (exact), or somewhere in (after, at] (not exact)."""

    after: int
    at: int
    fixed: bool  # the verdict from here on
    exact: bool


@dataclass(frozen=True)
class Bisection:
    probes: tuple[Probe, ...]
    budget: int
    changes: tuple[Change, ...]
    monotone: bool

    def verdict_at(self, i: int) -> bool | None:
        """The verdict at candidate i as the probes tell it (None where a change is not pinned)."""
        known = sorted(self.probes, key=lambda p: p.at)
        before = [p for p in known if p.at <= i]
        after = [p for p in known if p.at >= i]
        if before and after and before[-1].fixed == after[0].fixed:
            return before[-1].fixed
        return before[-1].fixed if before and not after else None


def budget(candidates: int) -> int:
    return math.ceil(math.log2(candidates)) + 2 if candidates > 1 else candidates + 1


def bisect(n: int, measure: Callable[[int], Probe], suspects: Sequence[int] = (), limit: int | None = None) -> Bisection:
    """Bisect over candidates 0..n-1 (-1 is SINCE). suspects: candidates where a fix patch stopped
    applying, probed first when the ends agree (a fix that upstream later undid)."""
    cap = budget(n) if limit is None else limit
    probes: dict[int, Probe] = {}

    def probe(i: int) -> Probe:
        if i not in probes:
            with progress.step(f"test probe {len(probes) + 1} (at most {cap})"):
                probes[i] = measure(i)
        return probes[i]

    if n == 0:
        probe(-1)
        return Bisection(tuple(probes.values()), cap, (), True)
    start, end = probe(-1), probe(n - 1)
    changes: list[Change] = []
    if start.fixed != end.fixed:
        changes.append(_pin(-1, n - 1, probe, probes, cap))
    else:
        for s in suspects:
            if len(probes) >= cap or s in probes:
                continue
            if probe(s).fixed != start.fixed:
                changes.append(_pin(-1, s, probe, probes, cap))
                changes.append(_pin(s, n - 1, probe, probes, cap))
                break
    return Bisection(tuple(sorted(probes.values(), key=lambda p: p.at)), cap, tuple(changes), len(changes) <= 1)


def _pin(lo: int, hi: int, probe: Callable[[int], Probe], probes: dict, cap: int) -> Change:
    """Narrow a change between lo and hi (their verdicts differ) while the budget lasts."""
    want = probes[hi].fixed
    while hi - lo > 1 and len(probes) < cap:
        mid = (lo + hi) // 2
        if probe(mid).fixed == want:
            hi = mid
        else:
            lo = mid
    return Change(lo, hi, want, hi - lo == 1)

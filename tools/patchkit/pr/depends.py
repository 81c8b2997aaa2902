"""make pr: does our fix stand on the target's ref alone, or on a backport beneath it in the stack?

Measured, never guessed. The PR carries only the fix's own patches, so: do they apply on the
ref without the rest of the stack, and do the fix's regression tests, run on that tree the way
the delta's upstream probe runs them (source mode, delta/upstreamfix.py), give what the fix
declares? When either falls short, the backports beneath it that make the difference are
named, and the PR body says "Depends on #<number>". A patch that needs the stack beneath it
to apply goes onto the ref 3-way, with the stack beneath as its merge base.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from .. import series
from ..delta import compare, upstreamfix
from ..delta.run import Runner
from ..git import Repo, Sha
from ..model import Fix, Patch, PatchSet


@dataclass(frozen=True)
class Depends:
    """What the fix's PR depends on, and why; empty when it stands on the ref alone."""

    on: tuple[str, ...] = ()  # '#19450' (a PR), or the origin URL of a backported commit
    why: str = ""  # "this change does not apply on main without it", or what the tests gave alone
    merge_bases: tuple[Sha, ...] = ()  # 3-way: the tree before each of the fix's patches, on the stack beneath
    note: str = ""  # when it could not be measured, why

    def line(self) -> str:
        return f"Depends on {', '.join(self.on)}: {self.why}." if self.on else ""


def reference(fix: Fix) -> str:
    """How a PR body names a backport: its upstream PR's number, else its origin."""
    return f"#{fix.id}" if fix.id.isdigit() else fix.origin


def measure(ps: PatchSet, fix: Fix, repo: Repo, base: Sha, runner: Runner | None = None) -> Depends:
    """Whether the fix's PR needs a backport beneath it: by applying, then by its tests."""
    beneath = list(ps.fixes[:ps.fixes.index(fix)])
    backports = [f for f in beneath if not f.ours]
    if not backports:
        return Depends()
    ref = ps.upstream.ref
    if not _applies(repo, base, fix.patches):
        on = [b for b in backports if _applies(repo, base, (*b.patches, *fix.patches))] or backports
        below = [p for f in beneath for p in f.patches]
        stacked = series.apply_series(repo, base, [*below, *fix.patches], committer_date=series.THROWAWAY_DATE)
        stacked.raise_on_conflict(f" to {ref} on the stack beneath fix {fix.id}")
        tip, trees = base, []  # the tree each of the fix's patches was made on
        for i, o in enumerate(stacked.outcomes):
            if i >= len(below):
                trees.append(tip)
            tip = o.commit or tip  # a patch already upstream adds no commit
        bases = tuple(dict.fromkeys(trees))
        return Depends(tuple(reference(b) for b in on), f"this change does not apply on {ref} without it", bases)
    alone = _reach(ps, fix, (), repo, base, runner)
    if alone is None or isinstance(alone, str):
        return Depends(note=f"whether fix {fix.id} needs {', '.join(map(reference, backports))} beneath it was "
                            f"not measured: {alone or 'it declares no regression test'}")
    ok, said = alone
    if ok:
        return Depends()
    on = [b for b in backports if (r := _reach(ps, fix, b.patches, repo, base, runner)) and not isinstance(r, str)
          and r[0]] or backports
    return Depends(tuple(reference(b) for b in on), f"its tests give what it declares only with it ({said} "
                                                    f"with this change alone, {upstreamfix.MODE} mode)")


def _applies(repo: Repo, base: Sha, patches) -> bool:
    return series.apply_series(repo, base, list(patches), committer_date=series.THROWAWAY_DATE, record=False).ok


def _reach(ps: PatchSet, fix: Fix, beneath: tuple[Patch, ...], repo: Repo, base: Sha,
           runner: Runner | None) -> tuple[bool, str] | str | None:
    """The fix's regression tests on the ref with beneath and the fix's patches: (whether they
    give what the fix declares, what they gave); a str when they could not run; None when the
    fix declares none."""
    view = replace(ps, fixes=(replace(fix, patches=(*beneath, *fix.patches)),))
    measured = upstreamfix.measure(view, repo, base, [], runner, patches=view.patches)
    if measured is None:
        return None
    verdict, run = measured
    invalid = compare.validity(run)
    if invalid or not verdict.counts:
        return "; ".join(invalid) or verdict.why_not
    said = ", ".join(f"{PurePosixPath(c.file).name} {c.passed} of {c.total} passed" for c in verdict.counts)
    return verdict.fixed, said

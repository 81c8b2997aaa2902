"""Has upstream fixed the bug its own way? Measured from the set's tests, never guessed from text.

When a patch of the set does not apply (or only with a 3-way merge), upstream may have
landed a fix of its own in another form (#19514: the upstream PR made every name in the
length lookup authoritative, ours does not). The text then says 'conflict', but the bug is
gone. So: build the delta's unpatched tree (upstream plus the test-only patches), run the
set's regression tests in it the way source mode does, and compare with what the set
declares for its patched tree. If upstream alone already gives that, upstream fixed it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from .. import scratch, series
from ..git import Repo, Sha
from ..model import PatchSet
from . import compare, trees
from .run import Job, Runner, SourceRunner, TreeRun

MODE = "source"  # the probe runs where check and apply run: on any CPU machine


@dataclass(frozen=True)
class FileCount:
    """One regression test file in the unpatched tree: passed of collected."""

    file: str
    passed: int
    total: int
    expected: dict[str, int]  # what the set declares for its patched tree (empty: all must pass)


@dataclass(frozen=True)
class UpstreamFix:
    """The verdict of the probe for one target at one upstream commit."""

    target: str
    commit: Sha
    fixed: bool
    counts: tuple[FileCount, ...]
    retire: tuple[str, ...]  # the set's fix patches that upstream's own fix replaces
    keep: tuple[str, ...]  # the set's test-only patches upstream does not have
    last_change: str  # the newest upstream commit that touched the retired patches' files
    why_not: str = ""  # when not fixed: what the measurement said
    patchset_file: str = ""

    def summary(self) -> str:
        """'fixed upstream: test_x.py passes without the set (30/30)', or why it is not."""
        if self.fixed:
            return "fixed upstream: " + "; ".join(
                f"{PurePosixPath(c.file).name} passes without the set ({c.passed}/{c.total})" for c in self.counts)
        return f"not fixed upstream: {self.why_not}"

    def advice(self) -> str:
        """What to do, in the set's own terms."""
        where = self.patchset_file or f"patches/{self.target}/patchset.yaml"
        said = (f"retire {', '.join(self.retire)}: drop it from the series and record the upstream commit that "
                f"fixed it (the last to change its files is {self.last_change[:12]}) in status.applied_upstream of {where}")
        if self.keep:
            said += f"; keep {', '.join(self.keep)} as a PR if upstream has no test of its own"
        return said


def needs_probe(outcomes: Sequence[series.Outcome]) -> bool:
    """A fix patch that conflicts or needs a 3-way merge: upstream may have fixed it another way."""
    return any(o.status in (series.CONFLICT, series.THREEWAY) and not o.patch.tests_only for o in outcomes)


def probe(ps: PatchSet, repo: Repo, base: Sha, outcomes: Sequence[series.Outcome],
          runner: Runner | None = None) -> UpstreamFix | None:
    """Run the set's regression tests on upstream plus the test-only patches; None when the
    set declares no regression test."""
    measured = measure(ps, repo, base, outcomes, runner)
    return measured[0] if measured else None


def measure(ps: PatchSet, repo: Repo, base: Sha, outcomes: Sequence[series.Outcome],
            runner: Runner | None = None) -> tuple[UpstreamFix, TreeRun] | None:
    """probe(), also returning the unpatched tree's run (for the delta report)."""
    tests = list(ps.tests.regression)
    if not tests:
        return None
    test_patches = [p for p in ps.patches if p.tests_only]
    res = series.apply_series(repo, base, test_patches, committer_date=series.THROWAWAY_DATE, stop_on_conflict=False)
    kept = tuple(o.patch.name for o in res.outcomes if o.status in (series.APPLIED, series.THREEWAY))
    retire = tuple(o.patch.name for o in outcomes if not o.patch.tests_only and o.status != series.APPLIED)
    touched = sorted({p for o in outcomes if o.patch.name in retire for p in o.patch.paths})
    last = repo.log_paths(base, touched, 1) if touched else []
    present = {name for _m, _t, name in repo.ls_tree(res.tip, "", recursive=True)}
    paths = [p for p in trees.existing_paths(repo, base, ps, sorted(set(ps.touched_paths) | set(tests)))
             if p in present]
    runnable = [t for t in tests if t in present]

    def verdict(fixed: bool, counts: tuple[FileCount, ...], why: str = "") -> UpstreamFix:
        return UpstreamFix(ps.target, base, fixed, counts, retire, kept, last[0] if last else base, why,
                           f"patches/{ps.root.name}/patchset.yaml")

    if not runnable:
        return verdict(False, (), f"no regression test of the set exists at {base[:12]}"), TreeRun("unpatched", 0, 0)
    with scratch.folder("upstreamfix") as work:
        tree, out = work / "unpatched", work / "out"
        tree.mkdir()
        out.mkdir()
        trees.archive(repo, res.tip, tree, paths)
        [run] = (runner or SourceRunner()).run([Job("unpatched", tree, out)], runnable, trees.source_modules(ps))
    invalid = compare.validity(run)
    declared = (ps.expected or {}).get(MODE, {})
    counts, failing = [], []
    for t in runnable:
        c = compare.counts(run, t)
        want = {k: int(v) for k, v in ((declared.get(t) or {}).get("patched") or {}).items()}
        counts.append(FileCount(t, c["passed"], sum(c.values()), want))
        # Upstream alone must give what the set declares for its patched tree: exactly
        # those counts when declared, else every collected test passing.
        ok = (c == {k: want.get(k, 0) for k in compare.CATEGORIES}) if want else (c["passed"] == sum(c.values()) > 0)
        if not ok:
            failing.append(f"{PurePosixPath(t).name} {c['passed']}/{sum(c.values())} passed without the set"
                           + (f" (the set declares {_said(want)} with it)" if want else ""))
    if invalid:
        return verdict(False, tuple(counts), "; ".join(invalid)), run
    missing = [t for t in tests if t not in present]
    if missing:
        failing.append(f"{', '.join(missing)} does not exist at {base[:12]}")
    return verdict(not failing, tuple(counts), "; ".join(failing)), run


def _said(counts: dict[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in counts.items())

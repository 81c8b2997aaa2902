"""Each fix's tests run without it and with the whole stack: the runs make delta grades, and the
expectations make backport records for a new fix (the one way to measure a fix, #26).

The trees come from trees.build (the one series path, into throwaway commits); each fix's tests
run in the tree without it, and every fix's tests at once in the stack's tree, cut per fix by
test file afterwards: a stack of n fixes is n + 1 pytest runs, not 2n. A test file pytest does
not collect (a C++ test) is never handed to it: the fix lists it as not collected.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import progress, scratch
from ..errors import BadInput, Conflict
from ..git import Repo, Sha
from ..model import Fix, PatchSet
from . import compare, trees
from .run import Job, Runner, SourceRunner, TreeRun, collects, only

NOT_RUN = {"not_run": True}  # a test file's expectation when none of its tests can run here
# A test file's expectation when make backport would not run the pull request's code: no fence here.
NOT_MEASURED = {"not_measured": "no sandbox here; make delta measures it"}


@dataclass
class FixRuns:
    """One fix's two runs: its tests without it (unpatched) and with the stack (patched, cut to them)."""

    fix: Fix
    unpatched: TreeRun
    patched: TreeRun
    tests: list[str]  # its test files pytest ran
    missing: list[str]  # declared, not in the trees
    not_collected: list[str]  # its test files pytest does not collect
    left_out: list[str]  # the fixes above it that do not apply without it
    junit: dict[str, str] = field(default_factory=dict)  # tree name -> JUnit XML under the work folder


def run_fixes(ps: PatchSet, repo: Repo, base: Sha, ref: str, mode: str, fixes: list[Fix], runner: Runner,
              work: Path, images: tuple[str, str] | None = None) -> tuple[list[FixRuns], dict[str, str]]:
    """Each fix's runs, its trees and outputs under work; and {fix id: why it was not run} for a
    fix none of whose tests pytest collects. BadInput when none of a fix's tests exists at ref."""
    stacked = ps.stacked
    fixes = list(fixes)
    not_run: dict[str, str] = {}
    wanted = sorted({t for f in fixes for t in f.tests.all})
    paths = trees.existing_paths(repo, base, ps, sorted(set(ps.touched_paths) | set(wanted)),
                                 conftests=mode == "container")
    if mode == "container":  # the image's installed package is under test, not a copy in the tree
        paths = [p for p in paths if PurePosixPath(p).parts[0] != ps.container.package]
    tests = {f.id: [t for t in f.tests.all if t in paths and collects(t)] for f in fixes}
    other = {f.id: [t for t in f.tests.all if t in paths and not collects(t)] for f in fixes}
    for f in list(fixes):
        if tests[f.id]:
            continue
        if not f.tests.all:  # a change with no test of its own (an upstream C++ guard, say)
            not_run[f.id] = "it carries no test of its own"
            fixes.remove(f)
            continue
        if other[f.id]:  # a C++ test, say: pytest runs none of them
            not_run[f.id] = f"pytest collects none of its tests ({', '.join(other[f.id])})"
            fixes.remove(f)
            continue
        whose = f"fix {f.id}'s tests" if stacked else f"the {ps.target} set's tests"
        missing = [t for t in f.tests.all if t not in paths]
        raise BadInput(f"none of {whose} exists at {ref}: {', '.join(missing)}")
    if not fixes:
        return [], not_run
    with progress.step("writing the unpatched and the patched tree" if not stacked else
                       f"writing the stack's tree and the tree without each of {len(fixes)} fix(es)"):
        tr = trees.build(repo, base, ps, fixes, work / "trees", paths=paths)
    union = sorted({t for f in fixes for t in tests[f.id]})
    jobs = [Job("unpatched", tr.without[f.id], work / "out" / str(i), images[0] if images else None, tuple(tests[f.id]))
            for i, f in enumerate(fixes)]
    jobs.append(Job("patched", tr.patched, work / "out" / "stack", images[1] if images else None, tuple(union)))
    for j in jobs:
        j.out.mkdir(parents=True)
    said = (f"running {len(union)} test file(s) in both trees" if not stacked else
            f"running each fix's tests without it, and all {len(union)} test file(s) with the stack")
    with progress.step(f"{said} ({mode} mode, {getattr(runner, 'said', 'here')})"):
        *without, patched = runner.run(jobs, union, trees.source_modules(ps))
    out = []
    for f, unpatched in zip(fixes, without):
        mine = patched if set(tests[f.id]) == set(union) else only(patched, tests[f.id])
        junit = {k: r.junit for k, r in (("unpatched", unpatched), ("patched", patched)) if r.junit}
        out.append(FixRuns(f, unpatched, mine, tests[f.id], [t for t in f.tests.all if t not in paths],
                           other[f.id], tr.left_out[f.id], junit))
    return out, not_run


def expectations(ps: PatchSet, fix: Fix, *, repo: Repo, base: Sha, ref: str,
                 runner: Runner | None = None) -> dict[str, dict]:
    """{test file: expectation} of the fix's tests in source mode, as make delta grades them:
    {'unpatched': counts, 'patched': counts} (without the fix, with the stack; outcomes that
    no test had left out), or not_run where pytest collects none of a file's tests or none can
    run here (it imports what this machine lacks). Conflict when the runs cannot be graded.

    The tests are a pull request's code: they run fenced (SourceRunner) or not at all. Where no
    fence works here, each test file pytest collects is NOT_MEASURED (make delta, which the user
    asks for, measures it)."""
    if not fix.tests.all:  # a change that touches no test file: nothing to measure
        return {}
    runner = runner or SourceRunner()
    if getattr(runner, "unfenced", ""):
        return {t: dict(NOT_MEASURED if collects(t) else NOT_RUN) for t in fix.tests.all}
    with scratch.folder("delta") as work:
        runs, _why = run_fixes(ps, repo, base, ref, "source", [fix], runner, work)
    out = {t: dict(NOT_RUN) for t in fix.tests.all}
    for r in runs:
        invalid = compare.validity(r.unpatched) + compare.validity(r.patched)
        if invalid:
            raise Conflict(f"fix {fix.id}: its tests cannot be measured in source mode: {'; '.join(invalid)}")
        if r.missing:
            raise Conflict(f"fix {fix.id}: its test file(s) {', '.join(r.missing)} are in neither tree")
        for t in r.tests:
            counts = {name: {k: v for k, v in compare.counts(run, t).items() if v}
                      for name, run in (("unpatched", r.unpatched), ("patched", r.patched))}
            if any(set(c) - {"not_run"} for c in counts.values()):
                out[t] = counts
    return out

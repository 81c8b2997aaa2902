"""A backport's expectations, measured on the target in source mode, never typed.

The delta's machinery, as make delta grades a fix of a stack: the tree without the fix
(stack.without: the rest of the stack and the fix's own test files) and the tree with the
whole stack, both from the one series path, archived, and the fix's tests run in both by the
source-mode runner. A test file pytest does not collect (a C++ test) and one that cannot run
here (it imports torch, say) is recorded as 'not run' in source mode, never guessed.
"""
from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import PurePosixPath

from .. import progress, scratch, series, stack
from ..delta import compare, trees
from ..delta.run import Job, Runner, SourceRunner
from ..errors import Conflict
from ..git import Repo, Sha
from ..model import Fix, PatchSet

# pytest's default python_files: the test files it collects (upstream keeps the default).
PYTEST_FILES = ("test_*.py", "*_test.py")
NOT_RUN = {"not_run": True}


def runnable(path: str) -> bool:
    return any(fnmatch.fnmatchcase(PurePosixPath(path).name, p) for p in PYTEST_FILES)


def expectations(repo: Repo, base: Sha, ps: PatchSet, fix: Fix, *, merge_bases: Sequence[str] = (),
                 runner: Runner | None = None) -> dict[str, dict]:
    """{test file: expectation} of the fix's tests in source mode, as make delta records them:
    {'unpatched': counts, 'patched': counts} (without the fix, with the stack), or not_run."""
    tests = list(fix.tests.all)
    out = {t: dict(NOT_RUN) for t in tests if not runnable(t)}
    run = [t for t in tests if runnable(t)]
    if not run:
        return out
    with scratch.folder("delta") as work:
        paths = trees.existing_paths(repo, base, ps, sorted(set(ps.touched_paths) | set(run)))
        jobs = []
        for name, patches in (("unpatched", stack.without(ps, fix)), ("patched", list(ps.patches))):
            with progress.step(f"writing the tree {'without' if name == 'unpatched' else 'with'} fix {fix.id}"):
                res = series.apply_series(repo, base, patches, threeway=True, merge_bases=merge_bases,
                                          committer_date=series.THROWAWAY_DATE)
                res.raise_on_conflict(f" to {base[:12]} for the tree {name}")
                (work / name).mkdir()
                trees.archive(repo, res.tip, work / name, paths)
            jobs.append(Job(name, work / name, work))
        with progress.step(f"running fix {fix.id}'s {len(run)} test file(s) without it and with it (source mode)"):
            unpatched, patched = (runner or SourceRunner()).run(jobs, run, trees.source_modules(ps))
    invalid = compare.validity(unpatched) + compare.validity(patched)
    if invalid:
        raise Conflict(f"fix {fix.id}: its tests cannot be measured in source mode: {'; '.join(invalid)}")
    for t in run:
        counts = {name: {k: v for k, v in compare.counts(r, t).items() if v} for name, r in
                  (("unpatched", unpatched), ("patched", patched))}
        ran = [c for c in counts.values() if set(c) - {"not_run"}]
        out[t] = counts if ran else dict(NOT_RUN)
    return {t: out[t] for t in tests}

"""Has upstream fixed the bug its own way? Measured from the set's tests, never guessed from text.

When a patch of the set does not apply (or only with a 3-way merge), upstream may have
landed a fix of its own in another form (#19514: the upstream PR made every name in the
length lookup authoritative, ours does not). The text then says 'conflict', but the bug is
gone. So: build the delta's unpatched tree (upstream plus the test-only patches), run the
set's regression tests in it the way source mode does, and compare with what the set
declares for its patched tree. If upstream alone already gives that, upstream fixed it.

In a stack the probe is per fix: the fix's own regression tests, on upstream with the rest of
the stack and the fix's own test files (stack.without), against what that fix declares.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from .. import scratch, series, stack
from ..git import Repo, Sha
from ..model import Fix, Patch, PatchSet
from . import compare, trees
from .run import Job, Runner, SourceRunner, TreeRun, collects

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
    why_not: str = ""  # when not fixed: what the measurement said
    patchset_file: str = ""
    keep_docs: tuple[tuple[str, str], ...] = ()  # docs patches upstream's fix leaves to do: (patch, its page)
    fix: str = ""  # the fix measured, named where the stack carries several ("" : the set's only fix)

    def summary(self) -> str:
        """'fixed upstream: test_x.py passes without the set (30/30)', or why it is not; in a
        stack of several fixes, 'fix 19514 fixed upstream: test_x.py passes without it (30/30)'."""
        who, without = (f"fix {self.fix} ", "it") if self.fix else ("", "the set")
        if self.fixed:
            return f"{who}fixed upstream: " + "; ".join(
                f"{PurePosixPath(c.file).name} passes without {without} ({c.passed}/{c.total})" for c in self.counts)
        return f"{who}not fixed upstream: {self.why_not}"

    def advice(self) -> str:
        """What to do, in the set's own terms. The commit that fixed it is the one the set's
        tests bisect to (make radar), never guessed here from which commit changed the files."""
        return advice(self.patchset_file or f"patches/{self.target}/patchset.yaml", self.retire, self.keep,
                      self.keep_docs)


def advice(where: str, retire: Sequence[str], keep: Sequence[str], keep_docs: Sequence[tuple[str, str]],
           commit: str = "", unknown: str = "radar bisects the set's tests to it") -> str:
    """What to do when upstream fixed the bug: retire the fix patches and record the commit
    that fixed it (commit; else say how to find it: unknown), keep what upstream still lacks.
    One wording for check, apply, delta and radar."""
    record = (f"record {commit[:12]} in status.applied_upstream of {where}" if commit else
              f"record the upstream commit that fixed it in status.applied_upstream of {where} ({unknown})")
    said = [f"retire {', '.join(retire)}: drop {'them' if len(retire) > 1 else 'it'} from the series and {record}"
            if retire else record]
    if keep:
        said.append(f"keep {', '.join(keep)} as a PR if upstream has no test of its own")
    said += [f"keep {name} as a PR: {page} still says what the set's pr.docs phrases describe" for name, page in keep_docs]
    return "; ".join(said)


def disposition(ps: PatchSet, repo: Repo, commit: Sha, statuses: Mapping[str, str], fix: Fix | None = None
                ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...]]:
    """What upstream's own fix at commit leaves of the set, from each patch's series status
    there: (the fix patches to retire, the test-only patches to keep, the docs patches to keep
    with the page each still has to change). Test-only patches that still apply are kept. A
    docs patch (every file under docs/) that still applies cleanly is kept while a page it
    changes still holds one of the set's pr.docs phrases: upstream's fix left that page
    describing the old behaviour. Every other fix patch is retired. fix: only that fix's patches
    (and its pr.docs phrases); default the whole set."""
    patches = fix.patches if fix is not None else ps.patches
    phrases = fix.pr.docs if fix is not None else ps.pr.docs
    keep = tuple(p.name for p in patches if p.tests_only and statuses.get(p.name) in (series.APPLIED, series.THREEWAY))
    retire: list[str] = []
    docs: list[tuple[str, str]] = []
    for p in patches:
        if p.tests_only:
            continue
        pages = [f for f in p.paths if phrases and repo.grep_files(commit, phrases, f)] if (
            statuses.get(p.name) == series.APPLIED and p.paths and all(f.startswith("docs/") for f in p.paths)) else []
        if pages:
            docs.append((p.name, pages[0]))
        else:
            retire.append(p.name)
    return tuple(retire), keep, tuple(docs)


def _wants_probe(o: series.Outcome) -> bool:
    """A fix patch that conflicts or needs a 3-way merge: upstream may have fixed it another way."""
    return o.status in (series.CONFLICT, series.THREEWAY) and not o.patch.tests_only


def needs_probe(outcomes: Sequence[series.Outcome]) -> bool:
    return any(map(_wants_probe, outcomes))


def probed(ps: PatchSet, outcomes: Sequence[series.Outcome]) -> Fix:
    """The fix the probe measures by default: the one whose patch needs it first (_wants_probe),
    else the stack's first."""
    return next((stack.owner(ps, o.patch) for o in outcomes if _wants_probe(o)), None) or ps.fixes[0]


def probe(ps: PatchSet, repo: Repo, base: Sha, outcomes: Sequence[series.Outcome],
          runner: Runner | None = None, fix: Fix | None = None) -> UpstreamFix | None:
    """Run the fix's regression tests on upstream plus the rest of the stack and the fix's own
    test files (default fix: probed()); None when it declares no regression test."""
    measured = measure(ps, repo, base, outcomes, runner, fix)
    return measured[0] if measured else None


def measure(ps: PatchSet, repo: Repo, base: Sha, outcomes: Sequence[series.Outcome],
            runner: Runner | None = None, fix: Fix | None = None, patches: Sequence[Patch] | None = None
            ) -> tuple[UpstreamFix, TreeRun] | None:
    """probe(), also returning the unpatched tree's run (for the delta report). patches: the
    tree's patches instead of the rest of the stack and the fix's test files (make pr: does a
    fix reach what it declares without the backports beneath it?); `fixed` then says the tree
    gives the declared result."""
    fix = fix if fix is not None else probed(ps, outcomes)
    tests = list(fix.tests.regression)
    if not tests:
        return None
    tree = stack.without(ps, fix) if patches is None else list(patches)
    res = series.apply_series(repo, base, tree, committer_date=series.THROWAWAY_DATE, stop_on_conflict=False)
    statuses = {o.patch.name: o.status for o in outcomes}
    statuses.update({o.patch.name: o.status for o in res.outcomes
                     if o.patch.tests_only or patches is not None})  # the fix's test files, as the probe's tree has them
    retire, kept, docs = disposition(ps, repo, base, statuses, fix)
    present = {name for _m, _t, name in repo.ls_tree(res.tip, "", recursive=True)}
    paths = [p for p in trees.existing_paths(repo, base, ps, sorted(set(ps.touched_paths) | set(tests)))
             if p in present]
    runnable = [t for t in tests if t in present and collects(t)]  # never a C++ test: pytest collects none

    stacked = ps.stacked  # the words name the fix where the stack carries several
    whose, whose_tree = (f"fix {fix.id}", "it") if stacked else ("the set", "the set")
    where = (f"fix {fix.id} in " if stacked else "") + f"patches/{ps.root.name}/patchset.yaml"

    def verdict(fixed: bool, counts: tuple[FileCount, ...], why: str = "") -> UpstreamFix:
        return UpstreamFix(ps.target, base, fixed, counts, retire, kept, why, where, docs, fix.id if stacked else "")

    if not runnable:
        return verdict(False, (), f"no regression test of {whose} exists at {base[:12]}"), TreeRun("unpatched", 0, 0)
    with scratch.folder("upstreamfix") as work:
        tree, out = work / "unpatched", work / "out"
        tree.mkdir()
        out.mkdir()
        trees.archive(repo, res.tip, tree, paths)
        [run] = (runner or SourceRunner()).run([Job("unpatched", tree, out)], runnable, trees.source_modules(ps))
    invalid = compare.validity(run)
    declared = (fix.expected or {}).get(MODE, {})
    counts, failing = [], []
    for t in runnable:
        c = compare.counts(run, t)
        want = {k: int(v) for k, v in ((declared.get(t) or {}).get("patched") or {}).items()}
        counts.append(FileCount(t, c["passed"], sum(c.values()), want))
        # Upstream alone must give what the set declares for its patched tree: exactly
        # those counts when declared, else every collected test passing.
        ok = (c == {k: want.get(k, 0) for k in compare.CATEGORIES}) if want else (c["passed"] == sum(c.values()) > 0)
        if not ok:
            failing.append(f"{PurePosixPath(t).name} {c['passed']}/{sum(c.values())} passed without {whose_tree}"
                           + (f" ({whose} declares {_said(want)} with it)" if want else ""))
    if invalid:
        return verdict(False, tuple(counts), "; ".join(invalid)), run
    missing = [t for t in tests if t not in present]
    if missing:
        failing.append(f"{', '.join(missing)} does not exist at {base[:12]}")
    return verdict(not failing, tuple(counts), "; ".join(failing)), run


def _said(counts: dict[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in counts.items())

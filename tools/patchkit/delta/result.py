"""What make delta found: one section per fix of the stack, and the report's JSON (schema 2).

Each fix is graded on its own tests and its own expectations: the tree without it (the rest of
the stack and the fix's own test files, stack.without) against the tree with the whole stack.
Schema 1 (before stacks) had one fix's fields at the top level; schema 2 keeps the target's
fields and the overall verdict at the top and moves the per-test fields into `fixes: [...]`.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from ..errors import Ask, Hint
from ..fresh import View
from ..model import Fix
from . import compare
from .run import TreeRun

SCHEMA = 2


def tree_summary(run: TreeRun) -> dict:
    return {**compare.counts(run), "exitstatus": run.exitstatus,
            "tests": {tid: v["outcome"] for tid, v in sorted(run.tests.items())}}


def not_run_of(*runs: TreeRun) -> dict[str, str]:
    return {tid: v.get("reason", "") for run in runs for tid, v in run.tests.items() if v["outcome"] == "not_run"}


@dataclass
class FixDelta:
    """One fix's section: its tests without it (unpatched) and with the stack (patched)."""

    id: str
    kind: str
    tests: list[str]
    unpatched: dict
    patched: dict
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    pass_to_fail: list[str]
    fail_to_fail: list[str]
    other: dict[str, str]
    not_run: dict[str, str]
    expected: dict
    matches_expected: bool
    mismatches: list[str]
    valid: bool
    invalid: list[str]
    junit: dict[str, str] = field(default_factory=dict)
    # Set when the fix's patches do not apply and its regression tests already give, on upstream
    # with the rest of the stack, what the fix declares with it: its own verdict (upstreamfix).
    fixed_upstream: dict | None = None
    not_collected: list[str] = field(default_factory=list)  # its test files pytest does not collect (C++ tests)
    # the fixes above it whose patches do not apply without it: its unpatched tree lacks their changes too
    left_out: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.valid and (self.matches_expected or self.fixed_upstream is not None)


def graded(fix: Fix, mode: str, unpatched: TreeRun, patched: TreeRun, tests: list[str],
           missing: list[str], ref: str, junit: dict[str, str], not_collected: list[str],
           left_out: list[str] = ()) -> FixDelta:
    """The fix's section from its two runs, graded against what it declares for the mode."""
    d = compare.classify(unpatched, patched)
    invalid = compare.validity(unpatched) + compare.validity(patched)
    expected = (fix.expected or {}).get(mode, {})
    mismatches = [f"{t}: declared, but does not exist at {ref}" for t in missing]
    mismatches += compare.grade(expected, unpatched, patched, d, tests)
    return FixDelta(fix.id, fix.kind, list(fix.tests.all), tree_summary(unpatched), tree_summary(patched),
                    d.fail_to_pass, d.pass_to_pass, d.pass_to_fail, d.fail_to_fail, d.other, not_run_of(unpatched, patched),
                    expected, not mismatches, mismatches, not invalid, invalid, junit, None, list(not_collected),
                    list(left_out))


def fixed_upstream(fix: Fix, mode: str, found: dict, run: TreeRun) -> FixDelta:
    """The fix's section when upstream fixed its bug: only the tree without it exists."""
    return FixDelta(fix.id, fix.kind, list(fix.tests.all), tree_summary(run), {}, [], [], [], [], {}, not_run_of(run),
                    (fix.expected or {}).get(mode, {}), False, [], True, [], {}, found)


def cpp_failed(entry: dict | None) -> bool:
    """Whether a fix's C++ unit tests (delta/cppunit.py) fail with the whole stack: a target
    that ran and did not pass, or did not build (one the tree cannot run is not run, not failed)."""
    outcomes = [v.get("patched", "passed") for v in (entry or {}).get("targets", {}).values()]
    return any(o != "passed" and not o.startswith("not run") for o in outcomes)


@dataclass
class DeltaResult:
    """The report: the target's fields, the overall verdict, and a section per graded fix."""

    target: str
    mode: str
    upstream_ref: str
    upstream_commit: str
    fixes: list[FixDelta]
    report: str = ""
    builder: str = ""  # container mode: the builder that ran the images
    images: dict[str, dict] = field(default_factory=dict)  # container mode: tree -> name, id, digest, labels
    not_graded: dict[str, str] = field(default_factory=dict)  # fix id -> why it has no section
    stack: int = 1  # how many fixes the target's stack carries (the text names each when several)
    tests_ran: str = ""  # where the tests ran: here, fenced or not (delta.run.SourceRunner.said); in the images
    view: View | None = None  # fresh.View: the upstream commit judged, and how fresh that view of upstream is
    # container mode: each compiled fix's C++ unit tests in the set's build tree (cppunit.py), by fix id
    cpp: dict[str, dict] = field(default_factory=dict)
    schema: int = SCHEMA
    ok: bool = field(init=False)
    valid: bool = field(init=False)
    matches_expected: bool = field(init=False)

    def __post_init__(self) -> None:
        self.ok = all(f.ok for f in self.fixes) and not any(cpp_failed(e) for e in self.cpp.values())
        self.valid = all(f.valid for f in self.fixes)
        self.matches_expected = all(f.matches_expected for f in self.fixes)

    @property
    def hints(self) -> list[Hint]:
        """Tests that could not run here run in container mode; the commit that fixed a bug
        upstream is the one make radar bisects the fix's tests to."""
        not_run = any(f.not_run for f in self.fixes)
        return ([self._container_hint()] if not_run and self.mode != "container" else []) + (
            [Hint.radar(self.target)] if any(f.fixed_upstream is not None for f in self.fixes) else [])

    def _container_hint(self) -> Hint:
        """Container mode, in the image of the set's base. A release image is built from a tag;
        a set on a branch (main) has none of its own, and its container.base, a release's, is
        refused by the drift guard once the branch moved: it needs BASE, an image built from it
        (#27 item 4: the hint said MODE=container alone, which main cannot run)."""
        if self.upstream_ref.startswith("refs/tags/"):
            return Hint.run(None, mode="container")
        branch = self.upstream_ref.rsplit("/", 1)[-1]
        return Hint(None, (("mode", "container"), ("base", Ask(f"an image built from {branch}"))),
                    f"{branch} has no release image; make container needs the same BASE")

    def as_json(self) -> str:
        """The report file's text (schema 2)."""
        data = asdict(self)
        del data["stack"]
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

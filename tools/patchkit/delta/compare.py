"""Classify per-test outcomes across the two trees (SWE-bench style) and grade them against
the patch set's declared expectations for the mode."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from .run import OUTCOMES, TreeRun

CATEGORIES = OUTCOMES
INVALID_EXIT = {2: "interrupted", 3: "internal pytest error", 4: "usage error", 5: "no tests collected"}


def file_of(test_id: str) -> str:
    return test_id.split("::", 1)[0]


def counts(run: TreeRun, file: str | None = None) -> dict[str, int]:
    return outcome_counts({tid: t["outcome"] for tid, t in run.tests.items()}, file)


def outcome_counts(outcomes: Mapping[str, str], file: str | None = None) -> dict[str, int]:
    """Tests per outcome category (of one test file, or all), from test id -> outcome as a
    report stores it; the one place that counts, for the delta and the PR body alike."""
    c = Counter(o for tid, o in outcomes.items() if file is None or file_of(tid) == file)
    return {k: c.get(k, 0) for k in CATEGORIES}


def validity(run: TreeRun) -> list[str]:
    """Why a tree's run cannot be graded (empty when it can)."""
    if not run.tests and run.exitstatus not in INVALID_EXIT:
        said = f": {run.stderr}" if run.stderr else ""
        return [f"{run.name}: pytest wrote no outcomes (exit {run.exitstatus}){said}"]
    if run.exitstatus in INVALID_EXIT:
        said = f": {run.stderr}" if run.stderr else ""
        return [f"{run.name}: pytest {INVALID_EXIT[run.exitstatus]} (exit {run.exitstatus}){said}"]
    c = counts(run)
    bad = c["failed"] + c["error"] + c["not_run"]
    if run.exitstatus == 0 and bad:
        return [f"{run.name}: pytest exited 0 but reported {bad} failing or erroring test(s)"]
    if run.exitstatus == 1 and not bad:
        return [f"{run.name}: pytest exited 1 but reported no failure or error"]
    if run.collected == 0 and not c["not_run"]:
        return [f"{run.name}: collection failed: no test was collected"]
    return []


@dataclass
class Delta:
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    pass_to_fail: list[str] = field(default_factory=list)
    fail_to_fail: list[str] = field(default_factory=list)
    other: dict[str, str] = field(default_factory=dict)  # test id -> "unpatched->patched"


def classify(unpatched: TreeRun, patched: TreeRun) -> Delta:
    d = Delta()
    for tid in sorted(set(unpatched.tests) | set(patched.tests)):
        u = unpatched.tests.get(tid, {}).get("outcome", "uncollected")
        p = patched.tests.get(tid, {}).get("outcome", "uncollected")
        bucket = {("failed", "passed"): d.fail_to_pass, ("passed", "passed"): d.pass_to_pass,
                  ("passed", "failed"): d.pass_to_fail, ("failed", "failed"): d.fail_to_fail}.get((u, p))
        if bucket is not None:
            bucket.append(tid)
        else:
            d.other[tid] = f"{u}->{p}"
    return d


def grade(expected: dict, unpatched: TreeRun, patched: TreeRun, d: Delta, tests: list[str]) -> list[str]:
    """Every way the measured runs differ from what the set declares for this mode."""
    problems: list[str] = []
    runs = {"unpatched": unpatched, "patched": patched}
    for file, exp in expected.items():
        if not isinstance(exp, dict):
            problems.append(f"{file}: expectation must be a mapping")
            continue
        if exp.get("not_measured"):  # nothing declared: make backport could not run it fenced
            continue
        if exp.get("not_run"):
            ran = [t for r in runs.values() for t, v in r.tests.items() if file_of(t) == file and v["outcome"] != "not_run"]
            if ran:
                problems.append(f"{file}: expected not to run in this mode, but ran: {_names(ran)}")
            continue
        for name, run in runs.items():
            if name not in exp:
                continue
            want = {k: int(exp[name].get(k, 0)) for k in CATEGORIES}
            got = counts(run, file)
            if got != want:
                diffs = [f"{k} {got[k]} (expected {want[k]})" for k in CATEGORIES if got[k] != want[k]]
                named = [t for t, v in run.tests.items() if file_of(t) == file and got[v["outcome"]] > want[v["outcome"]]]
                problems.append(f"{file} {name}: " + ", ".join(diffs) + (f"; surplus: {_names(named)}" if named else ""))
    for tid in d.pass_to_fail:
        problems.append(f"pass->fail: {tid}")
    for tid, pair in d.other.items():
        if pair.startswith("passed->"):
            problems.append(f"{pair}: {tid}")
    declared = set(expected)
    for t in tests:
        if t not in declared and not any(file_of(x) == t for r in runs.values() for x in r.tests):
            problems.append(f"{t}: no test collected in either tree")
    return problems


def _names(ids: list[str], most: int = 6) -> str:
    ids = sorted(ids)
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")

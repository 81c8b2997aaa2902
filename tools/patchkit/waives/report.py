"""make waivers: which waiver lines skip the tests of every fix of the stack, at which level, in
which stages; each test says which fix it belongs to."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..fresh import View
from ..git import Repo
from ..model import TEST_DB, WAIVES_FILE, PatchSet
from .edit import load_stages, narrowing_of, read_waives
from .narrow import Narrowing, indexed, test_id


@dataclass
class TestWaivers:
    test: str
    lines: list[dict] = field(default_factory=list)  # {line, text, level, stages}
    fixes: list[str] = field(default_factory=list)  # the fixes whose tests it is (none: only the waiver intent's)


@dataclass
class WaiverReport:
    target: str
    ref: str
    waives_file: str
    before: list[TestWaivers]
    after: list[TestWaivers]
    narrowing: Narrowing | None
    stack: int = 1  # how many fixes the target's stack carries (the text names each test's when several)
    view: View | None = None  # fresh.View: the upstream commit judged, and how fresh that view of upstream is


def report(ps: PatchSet, repo: Repo, ref: str) -> WaiverReport:
    """For every test of every fix of the stack, and every test the waiver intent must run: the
    lines that skip it now, and after the set's edit."""
    intent = ps.waivers
    tests = sorted(set(ps.tests.all) | (set(intent.must_run) if intent else set()))
    waives_file = intent.waives_file if intent else WAIVES_FILE
    read = read_waives(repo, ref, waives_file)
    text = read or ""
    stages = load_stages(repo, ref, intent.test_db if intent else TEST_DB)
    narrowing = narrowing_of(repo, ref, intent, read, stages) if intent else None
    after_text = narrowing.after if narrowing and narrowing.changed else text
    owners = {t: [f.id for f in ps.fixes if t in f.tests.all] for t in tests}
    return WaiverReport(ps.target, ref, waives_file, _per_test(tests, text, stages, waives_file, owners),
                        _per_test(tests, after_text, stages, waives_file, owners), narrowing, len(ps.fixes))


def _per_test(tests: list[str], text: str, stages, name: str, owners: dict[str, list[str]]) -> list[TestWaivers]:
    _entries, matcher = indexed(text, stages, name)
    out = []
    for t in tests:
        tw = TestWaivers(t, fixes=owners[t])
        for h in matcher.hits(test_id(t)):
            tw.lines.append({"line": h.entry.lineno, "text": h.entry.text, "level": h.level, "stages": list(h.stages)})
        out.append(tw)
    return out

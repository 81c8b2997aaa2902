"""The two levels at which upstream matches waivers to tests.

Outer (tests/integration/defs/test_list_parser.py): a 'unittest/X' id becomes the CI item
'test_unittests.py::test_unittests_v2[unittest/X]' and is matched by exact node id against
the items the test-db lists; a waiver for a whole listed directory skips that whole item.
Inner (tests/unittest/conftest.py, apply_waives_ut): inside a running item, an id is matched
exactly, then without [params], then cut at '::' down to the file. No directory match.
"""
from __future__ import annotations

from dataclasses import dataclass

from .parse import Entry, Stage


def ci_item(test: str) -> str:
    return f"test_unittests.py::test_unittests_v2[{test}]" if test.startswith("unittest/") else test


@dataclass(frozen=True)
class Hit:
    entry: Entry
    level: str  # "outer" or "inner"
    stages: tuple[str, ...]


def inner_candidates(test_id: str) -> list[str]:
    """What apply_waives_ut compares a test id with: exact, no params, then '::' parts cut."""
    out = [test_id]
    base = test_id.split("[", 1)[0]
    if base not in out:
        out.append(base)
    parts = base.split("::")
    while len(parts) > 1:
        parts = parts[:-1]
        out.append("::".join(parts))
    return out


def _holds(item: str, test_file: str) -> bool:
    """Whether a test-db item (a file or a directory) runs test_file."""
    return item == test_file or test_file.startswith(item.rstrip("/") + "/")


def _file_of(test_id: str) -> str:
    """The file an inner-level id lands on (the last of inner_candidates)."""
    return inner_candidates(test_id)[-1]


def _hw_ok(wid_hw: str | None, stage: Stage) -> bool:
    return wid_hw is None or any(wid_hw.lower() in h or h in wid_hw.lower() for h in stage.hardware)


def hits(test_file: str, entries: list[Entry], stages: list[Stage]) -> list[Hit]:
    """Which waiver lines skip test_file ('unittest/...py'), at which level, in which stages."""
    found: list[Hit] = []
    holding = [s for s in stages if any(_holds(item, test_file) for item in s.items)]
    for e in entries:
        if not e.is_waiver:
            continue
        for wid in e.ids:
            outer = tuple(s.name for s in holding if _hw_ok(wid.hardware, s)
                          and any(ci_item(item) == ci_item(wid.test) and _holds(item, test_file) for item in s.items))
            if outer:
                found.append(Hit(e, "outer", outer))
            if _file_of(wid.test) == test_file:
                stages_in = tuple(s.name for s in holding if _hw_ok(wid.hardware, s)) or ("(any)",)
                found.append(Hit(e, "inner", stages_in))
    return found


def waived_files(test_files: list[str], entries: list[Entry], stages: list[Stage]) -> dict[str, set[tuple]]:
    """For each test file, the (level, stage, line text-sans-lineno) that waive it wholly or in part."""
    result: dict[str, set[tuple]] = {}
    for f in test_files:
        result[f] = {(h.level, st, h.entry.kind, h.entry.reason, h.entry.option, h.entry.expr,
                      _scope(h, f)) for h in hits(f, entries, stages) for st in h.stages}
    return result


def _scope(hit: Hit, test_file: str) -> str:
    """What part of the file the hit covers: the whole file, or named tests in it."""
    if hit.level == "outer":
        return "*"
    names = sorted(w.test for w in hit.entry.ids if _file_of(w.test) == test_file)
    return "*" if test_file in names else ",".join(names)

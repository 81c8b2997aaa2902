"""The two levels at which upstream matches waivers to tests.

Outer (tests/integration/defs/test_list_parser.py): a waiver line's test name, without its
full:<hw>/ prefix, is one CI item ('unittest/X' becomes 'test_unittests.py::test_unittests_v2[unittest/X]')
and is matched by exact node id against the items the test-db lists. So a waiver for a whole
listed directory skips that whole item, and a name with several paths or with -k/-m options
matches only an item written exactly the same way.
Inner (tests/unittest/conftest.py, apply_waives_ut): inside a running item, a node id is matched
against the waiver names that contain 'unittest/': exactly, then without [params], then cut at
'::' down to the file. No directory match, and a name with several paths or options never
equals a node id.

Both levels are looked up in dicts built once, so a test file's hits cost its depth plus the
hits, not the length of waives.txt (issue #11 item 13: matching was quadratic).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .parse import WAIVING, Entry, Stage, split_name


def ci_item(test: str) -> str:
    return f"test_unittests.py::test_unittests_v2[{test}]" if test.startswith("unittest/") else test


@dataclass(frozen=True)
class Hit:
    entry: Entry
    level: str  # "outer" or "inner"
    stages: tuple[str, ...]
    scope: str = "*"  # "*": the whole file; else the node ids or options the hit covers


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


def file_of(test_id: str) -> str:
    """The file (or directory) a node id lands on: the last of inner_candidates."""
    return test_id.split("[", 1)[0].split("::", 1)[0]


_file_of = file_of  # the name narrow.py and older callers use


def ancestors(test_file: str) -> list[str]:
    """'a/b/c.py' -> ['a/b/c.py', 'a/b', 'a']: every path whose item would run the file."""
    out = [test_file]
    while "/" in out[-1]:
        out.append(out[-1].rsplit("/", 1)[0])
    return out


def _hw_ok(hw: str | None, stage: Stage) -> bool:
    return hw is None or any(hw.lower() in h or h in hw.lower() for h in stage.hardware)


def _whole(path: str, selector: str | None) -> bool:
    """Whether an item path runs whole files (a file or directory, no -k/-m), not part of one."""
    return selector is None and file_of(path) == path


class Matcher:
    """The waiver lines and test-db items, indexed for both levels."""

    def __init__(self, entries: list[Entry], stages: list[Stage]) -> None:
        self.stages = list(stages)
        # a file or directory -> (stage index, item, the item's path that names it, the item's options)
        self._items: dict[str, list[tuple[int, str, str, str | None]]] = defaultdict(list)
        for si, s in enumerate(self.stages):
            for item in s.items:
                paths, selector = split_name(item)
                for p in paths:
                    self._items[file_of(p).rstrip("/")].append((si, item, p, selector))
        listed = {item for s in self.stages for item in s.items}
        self._outer: dict[str, list[Entry]] = defaultdict(list)  # CI item name -> its waiver lines
        self._inner: dict[str, list[Entry]] = defaultdict(list)  # test file -> lines naming it or a test in it
        for e in entries:
            if e.kind not in WAIVING:
                continue
            test = e.test
            if test in listed:
                self._outer[test].append(e)
            if "unittest/" in test:
                paths, selector = split_name(test)
                if selector is None and paths == (test,):
                    self._inner[file_of(test)].append(e)

    def hits(self, test_file: str) -> list[Hit]:
        """Which waiver lines skip test_file ('unittest/...py'), at which level, in which stages."""
        holding = [rec for a in ancestors(test_file) for rec in self._items.get(a, ())]
        held_in = sorted({si for si, *_ in holding})
        outer: dict[int, tuple[Entry, set[int], set[str]]] = {}
        for si, item, path, selector in holding:
            for e in self._outer.get(item, ()):
                if _hw_ok(e.hardware, self.stages[si]):
                    _, sis, scopes = outer.setdefault(e.lineno, (e, set(), set()))
                    sis.add(si)
                    scopes.add("*" if _whole(path, selector) else item)
        found = [(e.lineno, 0, Hit(e, "outer", tuple(self.stages[i].name for i in sorted(sis)),
                                   "*" if "*" in scopes else ",".join(sorted(scopes))))
                 for e, sis, scopes in outer.values()]
        for e in self._inner.get(test_file, ()):
            names = tuple(self.stages[i].name for i in held_in if _hw_ok(e.hardware, self.stages[i])) or ("(any)",)
            found.append((e.lineno, 1, Hit(e, "inner", names, "*" if e.test == test_file else e.test)))
        return [h for _, _, h in sorted(found, key=lambda t: (t[0], t[1]))]


def hits(test_file: str, entries: list[Entry], stages: list[Stage]) -> list[Hit]:
    """Which waiver lines skip test_file; builds the index, so call Matcher.hits for many files."""
    return Matcher(entries, stages).hits(test_file)


def waived_files(test_files: list[str], matcher: Matcher) -> dict[str, set[tuple]]:
    """For each test file, what waives it: (level, stage, kind, reason, timeout, scope)."""
    return {f: {(h.level, st, h.entry.kind, h.entry.reason, h.entry.timeout, h.scope)
                for h in matcher.hits(f) for st in h.stages}
            for f in test_files}

"""The narrowest waives.txt edit that lets a patch set's tests run, proven by the model."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ..errors import Conflict
from .match import _file_of, hits, waived_files
from .parse import Entry, Stage, parse_waives

TESTS_ROOT = "tests/"


def test_id(path: str) -> str:
    """'tests/unittest/x/test_a.py' -> 'unittest/x/test_a.py', the form waives.txt uses."""
    return path[len(TESTS_ROOT):] if path.startswith(TESTS_ROOT) else path


@dataclass
class Narrowing:
    changed: bool
    why: str
    before: str
    after: str
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)


def narrow(waives_text: str, stages: list[Stage], test_files: list[str], must_run: list[str],
           name: str = "waives.txt") -> Narrowing:
    """Rewrite the lines that skip must_run so they run; keep every other waived test waived.

    test_files: every test file under tests/ at the ref ('tests/...py'), listed from the ref.
    """
    entries = parse_waives(waives_text, name)
    must = sorted({test_id(p) for p in must_run})
    all_ids = sorted({test_id(p) for p in test_files} | set(must))
    blocking = {id(h.entry): h.entry for m in must for h in hits(m, entries, stages)}
    if not blocking:
        return Narrowing(False, f"no line of {name} skips {', '.join(must)} at this ref; nothing to change",
                         waives_text, waives_text)

    out: list[Entry] = []
    new_lines: list[str] = []
    removed: list[str] = []
    for e in entries:
        if id(e) not in blocking:
            out.append(e)
            continue
        removed.append(e.text)
        keep, expand = [], []
        for wid in e.ids:
            below = wid.test.rstrip("/") + "/"
            if any(m.startswith(below) for m in must):
                # A directory entry: one entry per other test file below it, each matching
                # at the inner level, where a directory entry would match nothing.
                prefix = f"full:{wid.hardware}/" if wid.hardware else ""
                expand += [prefix + t for t in all_ids if t.startswith(below) and t not in must]
            elif _file_of(wid.test) not in must:
                keep.append(wid.raw)
            # else: the id names a must-run test (or a test in it) and is dropped
        tail = (f' {e.option} "{e.expr}"' if e.option else "") + f" {e.kind} ({e.reason})"
        if keep:
            out.append(Entry(e.lineno, " ".join(keep) + tail, kind=e.kind))
        new_lines += [t + tail for t in expand]

    texts = [e.text for e in out]
    for line in sorted(new_lines):
        _insert_sorted(texts, line)
    after = "\n".join(texts)
    added = [t for t in texts if t not in {e.text for e in entries}]
    _prove(waives_text, after, stages, all_ids, must, name)
    return Narrowing(True, f"{len(removed)} line(s) of {name} skipped {', '.join(must)}", waives_text, after,
                     removed, added)


def _insert_sorted(lines: list[str], line: str) -> None:
    """Insert among the waiver lines at its sorted place (waives.txt is kept sorted)."""
    keys = [(i, t) for i, t in enumerate(lines) if t.strip() and not t.lstrip().startswith("#")]
    pos = bisect.bisect_left([t for _, t in keys], line)
    at = keys[pos][0] if pos < len(keys) else (keys[-1][0] + 1 if keys else len(lines))
    lines.insert(at, line)


def _prove(before: str, after: str, stages: list[Stage], all_ids: list[str], must: list[str], name: str) -> None:
    """Before and after, the waived tests must differ by exactly the must-run tests."""
    b = waived_files(all_ids, parse_waives(before, name), stages)
    a = waived_files(all_ids, parse_waives(after, name), stages)
    changed = sorted(t for t in all_ids if _effective(b[t]) != _effective(a[t]))
    still = [m for m in must if a[m]]
    if changed != must or still:
        raise Conflict(f"narrowing {name} would change waivers of {', '.join(changed) or 'nothing'}"
                       f"{' and still skip ' + ', '.join(still) if still else ''}; edit it by hand")


def _effective(hit_set: set[tuple]) -> set[tuple]:
    """What a test's waiving comes to, whatever level carries it: (stage, kind, reason, scope)."""
    return {(stage, kind, reason, opt, expr, scope) for _level, stage, kind, reason, opt, expr, scope in hit_set}

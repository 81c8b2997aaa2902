"""The narrowest waives.txt edit that lets a patch set's tests run, proven by the model.

Linear in the size of waives.txt (issue #11 item 13): one parse, one index per version of the
file, and the new lines merged into the kept ones in a single pass.
"""
from __future__ import annotations

import bisect
import gc
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import Conflict
from .match import Matcher, file_of, waived_files
from .parse import Entry, Stage, parse_line, parse_waives, split_lines

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


@contextmanager
def gc_paused():
    """Hold the cyclic collector while a waives.txt is parsed and indexed.

    Each line becomes a few acyclic objects; with the collector on, every threshold crossing
    rescans the growing heap, which cost about half the time at 100k lines (measured).
    Reference counting still frees everything; the collector resumes afterwards.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def narrow(waives_text: str, stages: list[Stage], test_files: list[str], must_run: list[str],
           name: str = "waives.txt") -> Narrowing:
    """Rewrite the lines that skip must_run so they run; keep every other waived test waived (see _narrow)."""
    with gc_paused():
        return _narrow(waives_text, stages, test_files, must_run, name)


def _narrow(waives_text: str, stages: list[Stage], test_files: list[str], must_run: list[str],
            name: str) -> Narrowing:
    """Rewrite the lines that skip must_run so they run; keep every other waived test waived.

    test_files: every test file under tests/ at the ref ('tests/...py'), listed from the ref.
    A blocking line goes; in its place comes one line per other test file below each path it
    named (the inner level matches files, never directories), with its hardware prefix, marker,
    reason and comment. A line with -k/-m cannot be expanded that way: the proof refuses it.
    """
    entries = parse_waives(waives_text, name)
    must = sorted({test_id(p) for p in must_run})
    must_set = set(must)
    all_ids = sorted({test_id(p) for p in test_files} | must_set)
    matcher = Matcher(entries, stages)
    blocking = {h.entry.lineno for m in must for h in matcher.hits(m)}
    if not blocking:
        return Narrowing(False, f"no line of {name} skips {', '.join(must)} at this ref; nothing to change",
                         waives_text, waives_text)

    kept: list[Entry] = []
    new_lines: list[str] = []
    removed: list[str] = []
    for e in entries:
        if e.lineno not in blocking:
            kept.append(e)
            continue
        removed.append(e.text)
        prefix = f"full:{e.hardware}/" if e.hardware else ""
        for path in e.paths:
            for t in _expand(path, all_ids, must_set):
                new_lines.append(f"{prefix}{t} {e.tail}")
    originals = {e.text for e in entries}
    added = sorted(set(new_lines) - originals)
    after = _merge(kept, added, _newline(entries))
    _prove(_after_entries(after, kept, added, len(entries), name), stages, all_ids, must, name, matcher)
    return Narrowing(True, f"{len(removed)} line(s) of {name} skipped {', '.join(must)}", waives_text, after,
                     removed, added)


def _expand(path: str, all_ids: list[str], must: set[str]) -> list[str]:
    """What a path of a removed line becomes: each other test file below it, or itself."""
    if file_of(path) == path:
        below = path.rstrip("/") + "/"
        start = bisect.bisect_left(all_ids, below)
        if start < len(all_ids) and all_ids[start].startswith(below):  # a directory
            out = []
            for t in all_ids[start:]:
                if not t.startswith(below):
                    break
                if t not in must:
                    out.append(t)
            return out
    return [] if file_of(path) in must else [path]  # a file or node id: dropped if it is a must-run one


def _newline(entries: list[Entry]) -> str:
    return next((e.end for e in entries if e.end), "\n")


def _merge(kept: list[Entry], new: list[str], nl: str) -> str:
    """The kept lines with the new ones (sorted), each before the first waiver line above it.

    waives.txt is kept sorted line by line; blanks and comments are not compared. New lines
    that sort after every entry go right after the last one, before a trailing blank/comment.
    One pass over the kept lines.
    """
    named = [i for i, e in enumerate(kept) if e.name]
    last = named[-1] if named else len(kept) - (1 if kept and not kept[-1].text else 0) - 1
    pairs: list[list[str]] = []
    j = 0
    if last < 0:  # nothing before which to put them
        pairs += [[t, nl] for t in new]
        j = len(new)
    for i, e in enumerate(kept):
        if e.name:
            while j < len(new) and new[j] < e.text:
                pairs.append([new[j], nl])
                j += 1
        pairs.append([e.text, e.end])
        if i == last:
            pairs += [[t, nl] for t in new[j:]]
            j = len(new)
    final_end = kept[-1].end if kept else ""
    for p in pairs[:-1]:
        p[1] = p[1] or nl
    if pairs:
        pairs[-1][1] = final_end
    return "".join(t + end for t, end in pairs)


def _after_entries(after: str, kept: list[Entry], added: list[str], lines_before: int, name: str) -> list[Entry]:
    """The entries of the new text: the kept ones as parsed before, the added ones parsed now.

    Re-parsing every kept line would give the same entries at twice the cost; what is checked
    instead is that the rendered text holds exactly those lines, so the proof is about it.
    """
    if Counter(text for text, _end in split_lines(after)) != Counter([e.text for e in kept] + added):
        raise AssertionError("the merged waives.txt does not hold exactly the kept and added lines")
    return kept + [parse_line(t, lines_before + i + 1, name) for i, t in enumerate(added)]


def _prove(after: list[Entry], stages: list[Stage], all_ids: list[str], must: list[str], name: str,
           before: Matcher) -> None:
    """Before and after, the waived tests must differ by exactly the must-run tests."""
    b = waived_files(all_ids, before)
    a = waived_files(all_ids, Matcher(after, stages))
    changed = sorted(t for t in all_ids if _effective(b[t]) != _effective(a[t]))
    still = [m for m in must if a[m]]
    if changed != must or still:
        raise Conflict(f"narrowing {name} would change waivers of {', '.join(changed) or 'nothing'}"
                       f"{' and still skip ' + ', '.join(still) if still else ''}; edit it by hand")


def _effective(hit_set: set[tuple]) -> set[tuple]:
    """What a test's waiving comes to, whatever level carries it: (stage, kind, reason, timeout, scope)."""
    return {t[1:] for t in hit_set}

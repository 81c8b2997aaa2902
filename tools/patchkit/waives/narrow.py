"""The narrowest waives.txt edit that lets a patch set's tests run, proven by the model.

Linear in the size of waives.txt (issue #11 item 13): one parse, one index per version of the
file, and the new lines merged into the kept ones in a single pass.
"""
from __future__ import annotations

import bisect
import gc
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
    Reference counting still frees everything; the collector resumes afterwards, with what was
    built meanwhile moved to its oldest generation (freeze, then unfreeze, moves every tracked
    object there without walking any): resumed as it was, its first young collection walked
    all 100,000 lines' objects, 0.1 s of make waivers (#17 item 16).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


_INDEXED: list[tuple[str, str, list[Stage], list[Entry], Matcher]] = []  # the last two, newest first


def indexed(text: str, stages: list[Stage], name: str) -> tuple[list[Entry], Matcher]:
    """text parsed and indexed, remembered for the last two texts: make waivers reads the same
    waives.txt for its report and for the narrowing, and parsing 100,000 lines twice cost a
    third of the command (#17 item 16). Entries and matchers are never changed once built."""
    for n, t, st, entries, matcher in _INDEXED:
        if n == name and (t is text or t == text) and st == stages:
            return entries, matcher
    with gc_paused():
        entries = parse_waives(text, name)
        matcher = Matcher(entries, stages)
    _remember(name, text, stages, entries, matcher)
    return entries, matcher


def _remember(name: str, text: str, stages: list[Stage], entries: list[Entry], matcher: Matcher) -> None:
    _INDEXED.insert(0, (name, text, list(stages), entries, matcher))
    del _INDEXED[2:]


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
    entries, matcher = indexed(waives_text, stages, name)
    must = sorted({test_id(p) for p in must_run})
    must_set = set(must)
    all_ids = sorted({test_id(p) for p in test_files} | must_set)
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
    with gc_paused():
        after_entries, fresh = _after_entries(after, kept, added, name)
        after_matcher = Matcher(after_entries, stages)
    _remember(name, after, stages, after_entries, after_matcher)  # the report reads the new text next
    gone = [e for e in entries if e.lineno in blocking]
    _prove(after_matcher, _touched(all_ids, stages, gone, fresh, must_set), must, name, matcher)
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
    One pass over the kept lines' names to place the new ones, then list slices and joins
    (a Python statement per kept line cost 0.1 s at 100,000 lines, #17 item 16).
    """
    texts = [e.text for e in kept]
    named = [i for i, e in enumerate(kept) if e.name]
    last = named[-1] if named else len(kept) - (1 if kept and not kept[-1].text else 0) - 1
    at: list[int] = []  # the index of the kept line each new line goes before
    k = 0
    for t in new:
        if last < 0:  # nothing before which to put them
            at.append(0)
            continue
        while k < len(named) and not t < texts[named[k]]:
            k += 1
        at.append(named[k] if k < len(named) else last + 1)
    ends = [e.end for e in kept]
    out_texts: list[str] = []
    out_ends: list[str] = []
    prev = 0
    for t, i in zip(new, at):
        out_texts += texts[prev:i]
        out_ends += ends[prev:i]
        out_texts.append(t)
        out_ends.append(nl)
        prev = i
    out_texts += texts[prev:]
    out_ends += ends[prev:]
    out_ends = [end or nl for end in out_ends]  # a piece that was the file's last gets a line ending
    if out_ends:
        out_ends[-1] = kept[-1].end if kept else ""
    pieces = [""] * (2 * len(out_texts))
    pieces[::2] = out_texts
    pieces[1::2] = out_ends
    return "".join(pieces)


def _after_entries(after: str, kept: list[Entry], added: list[str], name: str) -> tuple[list[Entry], list[Entry]]:
    """The entries of the new text, numbered as its lines: the kept ones as parsed before
    (renumbered where new lines came in above them), the added ones parsed now; and the added ones.

    Re-parsing every kept line would give the same entries at twice the cost; what is checked
    instead is that the rendered text holds exactly those lines, in order, so the proof is
    about it. An added line is never a kept one (added excludes every original line).
    """
    new = set(added)
    out: list[Entry] = []
    fresh: list[Entry] = []
    k = 0
    for n, (text, end) in enumerate(split_lines(after), start=1):
        if text in new:
            fresh.append(parse_line(text, n, name, end))
            out.append(fresh[-1])
            continue
        if k >= len(kept) or kept[k].text != text:
            raise AssertionError("the merged waives.txt does not hold exactly the kept and added lines")
        e = kept[k]
        out.append(e if (e.lineno, e.end) == (n, end) else e._replace(lineno=n, end=end))
        k += 1
    if k != len(kept) or len(out) != len(kept) + len(added):
        raise AssertionError("the merged waives.txt does not hold exactly the kept and added lines")
    return out, fresh


def _touched(all_ids: list[str], stages: list[Stage], gone: list[Entry], fresh: list[Entry],
             must: set[str]) -> list[str]:
    """The tests whose waiving the edit can change: the must-run ones and those that a removed
    or an added line waives, in all_ids' order.

    What waives a test is the union of what each line does to it (Matcher.hits works line by
    line: the stages a line's hits are in and its scope depend on that line alone), and every
    other line stays with the same text (only its number moves, which _effective leaves out).
    So no other test can change, and the proof compares these rather than every test file
    under tests/ twice (0.4 s of make waivers on 5,000 files, #17 item 16).
    """
    by = Matcher(gone, stages), Matcher(fresh, stages)  # each on its own: their line numbers are two files'
    return [t for t in all_ids if t in must or any(m.hits(t) for m in by)]


def _prove(after: Matcher, touched: list[str], must: list[str], name: str, before: Matcher) -> None:
    """Before and after, the waived tests must differ by exactly the must-run tests (only the
    touched ones can differ; see _touched)."""
    b = waived_files(touched, before)
    a = waived_files(touched, after)
    changed = sorted(t for t in touched if _effective(b[t]) != _effective(a[t]))
    still = [m for m in must if a[m]]
    if changed != must or still:
        raise Conflict(f"narrowing {name} would change waivers of {', '.join(changed) or 'nothing'}"
                       f"{' and still skip ' + ', '.join(still) if still else ''}; edit it by hand")


def _effective(hit_set: set[tuple]) -> set[tuple]:
    """What a test's waiving comes to, whatever level carries it: (stage, kind, reason, timeout, scope)."""
    return {t[1:] for t in hit_set}

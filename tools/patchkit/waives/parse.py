"""Parse tests/integration/test_lists/waives.txt and the test-db yml files, as upstream does.

The line grammar is upstream's `parse_test_list_lines` (tests/integration/defs/test_list_parser.py),
which reads waives.txt and the test lists that trt-test-db writes from the test-db:
- everything from the first '#' on is a comment (even inside an id), then the line is stripped;
- `test_name [MARKER] [REASON]`: the markers are tried in upstream's order XFAIL, SKIP,
  UNSTABLE, TIMEOUT, ISOLATION, and the first whose ' MARKER' occurs anywhere in the line
  splits it there (so ' XFAIL' inside a SKIP reason splits at XFAIL, as upstream does);
- the reason is optional; when present it must open with '(' and upstream keeps the text up
  to the first ')'; an empty '()' is refused as upstream refuses it;
- TIMEOUT takes '(n)', n digits, in minutes; ISOLATION ignores what follows it;
- test_name is one CI item: an optional 'full:<hw>/' prefix, one or more space-separated
  paths or node ids, then optional pytest options ('-k "expr"', '-m "expr"').
Upstream renders the file with Mako before parsing; we do not evaluate templates, so a line
that uses Mako syntax ('%' control lines, '${...}', '<%' tags, a trailing backslash) is refused
rather than misread. Mako drops '##' lines, which are comments here too; line numbers in our
messages are the file's own, so they may be one more than upstream's after such a line. Lines split where Python's
str.splitlines splits them (upstream's), and each keeps its own line ending, so rendering
the parsed entries gives the file back byte for byte.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import BadInput
from ..schema import load_yaml

MARKERS = ("XFAIL", "SKIP", "UNSTABLE", "TIMEOUT", "ISOLATION")  # upstream's search order
WAIVING = frozenset({"SKIP", "XFAIL", "UNSTABLE", "TIMEOUT"})  # markers that make a line a waiver
_STRIP_PARENS = re.compile(r"\((.*?)\)")  # upstream's kSTRIP_PARENS_PAT, used with .match
_FULL = re.compile(r"(full:(.*?)/)(.+)")  # upstream's full:<hw>/ split, used with .match
# Line breaks as str.splitlines knows them; \r\n first so it stays one break.
_BREAK = re.compile("(\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])")
_MAKO = re.compile(r"^\s*%|\$\{|</?%|\\$")  # control line (%% too: Mako makes it %), ${}, tags, line join


class Entry(NamedTuple):
    """One line of a test list: blank, comment, a bare test name, or test name + marker.

    A NamedTuple, not a frozen dataclass: make waivers builds one per line of a 100,000-line
    waives.txt, and a frozen dataclass's __init__ (one object.__setattr__ per field) cost
    0.3 s of the command there, a tuple's 0.05 s (#17 item 16). Immutable either way."""

    lineno: int
    text: str  # the line exactly as in the file, without its line ending
    end: str = "\n"  # the line ending that followed it ("" for the last piece)
    name: str | None = None  # test_name as upstream parses it (prefix included); None: no content
    kind: str | None = None  # the marker, if any
    reason: str | None = None  # upstream's reason (text up to the first ')')
    timeout: int | None = None  # TIMEOUT (n): minutes
    tail: str = ""  # the line's text from the marker on (marker, reason, comment), for new lines
    hardware: str | None = None  # the <hw> of a full:<hw>/ prefix
    test: str = ""  # the name without its full:<hw>/ prefix: the CI item the line names

    @property
    def is_waiver(self) -> bool:
        return self.kind in WAIVING

    @property
    def paths(self) -> tuple[str, ...]:
        return split_name(self.test)[0]

    @property
    def selector(self) -> str | None:
        """The pytest options after the paths ('-k "expr"'), if any."""
        return split_name(self.test)[1]


_OPTION = re.compile(r"(?:^|\s)-")


@functools.lru_cache(maxsize=None)
def split_name(test: str) -> tuple[tuple[str, ...], str | None]:
    """'a.py b/ -k "x y"' -> (('a.py', 'b/'), '-k "x y"'): paths, then options (outside brackets).

    Remembered: make waivers indexes the waives.txt before and after its edit, and the same
    100,000 names were split twice (#17 item 16). A pure function of an immutable string."""
    if "[" not in test:  # the common case, without a scan by hand
        m = _OPTION.search(test)
        if m is None:
            return tuple(test.split()), None
        return tuple(test[:m.start()].split()), test[m.start():].strip()
    if not test.startswith("-") and test.split(None, 1) == [test]:  # one node id, no space: what the scan finds
        return (test,), None
    paths: list[str] = []
    i, n = 0, len(test)
    while i < n:
        while i < n and test[i].isspace():
            i += 1
        if i >= n:
            break
        if test[i] == "-":
            return tuple(paths), test[i:].strip()
        start, depth = i, 0
        while i < n and (depth or not test[i].isspace()):  # a space inside [params] is not a break
            if test[i] == "[":
                depth += 1
            elif test[i] == "]" and depth:
                depth -= 1
            i += 1
        paths.append(test[start:i])
    return tuple(paths), None


def _mako(line: str, lineno: int, name: str) -> None:
    if _MAKO.search(line):
        raise BadInput(f"{name}:{lineno}: Mako template syntax, which upstream renders before parsing "
                       "and patchkit does not evaluate; render the file first")


def _entry(lineno: int, line: str, end: str, test_name: str, kind: str | None = None, reason: str | None = None,
           timeout: int | None = None, tail: str = "") -> Entry:
    m = _FULL.match(test_name) if test_name.startswith("full:") else None
    hardware, test = (m.group(2), m.group(3)) if m else (None, test_name)
    return Entry(lineno, line, end, test_name, kind, reason, timeout, tail, hardware, test)


_SPACED = tuple((m, " " + m) for m in MARKERS)  # what parse_line looks for, built once, not per line


def parse_line(line: str, lineno: int, name: str, end: str = "\n", mako_checked: bool = False) -> Entry:
    """One line, as upstream's parse_test_line reads it; refusals carry upstream's reason."""
    if not mako_checked:
        _mako(line, lineno, name)
    content = line.partition("#")[0]
    stripped = content.strip()
    if not stripped:
        return Entry(lineno, line, end)
    for marker, spaced in _SPACED:
        at = stripped.find(spaced)
        if at < 0:
            continue
        test_name = stripped[:at].strip()
        reason_raw = stripped[at + 1 + len(marker):]
        tail = line[len(content) - len(content.lstrip()) + at + 1:]
        if marker == "TIMEOUT":
            m = _STRIP_PARENS.match(reason_raw.strip())
            value = m.group(1) if m else None
            try:
                minutes = int(value) if value and value.isdigit() else None
            except ValueError:  # a digit int() does not read ('²'): upstream fails there too
                minutes = None
            if minutes is None:
                raise BadInput(f'{name}:{lineno}: Invalid syntax for TIMEOUT value: "{reason_raw}". '
                               "Expected a numeric value in parentheses.")
            return _entry(lineno, line, end, test_name, marker, None, minutes, tail)
        reason = None
        if marker != "ISOLATION" and reason_raw:
            m = _STRIP_PARENS.match(reason_raw.strip())
            reason = m.group(1) if m else None
            if not reason:
                raise BadInput(f'{name}:{lineno}: Invalid syntax for reason: "{reason_raw}". '
                               "Did you forget to add parentheses?")
        return _entry(lineno, line, end, test_name, marker, reason, None, tail)
    return _entry(lineno, line, end, stripped)


# Breaks str.splitlines knows besides "\n", and what every Mako line has one of: each looked for
# with `in` (a memchr-speed scan; a regex class over 100,000 lines cost 0.1 s a scan).
_EXOTIC_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_MAKO_SIGNS = ("%", "\\", "${")


def split_lines(text: str) -> list[tuple[str, str]]:
    """(line, ending) pairs, split where str.splitlines splits; the last piece has ending ''."""
    if not any(b in text for b in _EXOTIC_BREAKS):
        lines = text.split("\n")
        return [(line, "\n") for line in lines[:-1]] + [(lines[-1], "")]
    parts = _BREAK.split(text)
    return [(parts[i], parts[i + 1] if i + 1 < len(parts) else "") for i in range(0, len(parts), 2)]


def parse_waives(text: str, name: str = "waives.txt") -> list[Entry]:
    """Every line of a test list as an Entry (blanks and comments too, for a byte-exact round trip)."""
    screened = not any(sign in text for sign in _MAKO_SIGNS)
    return [parse_line(line, n, name, end, screened) for n, (line, end) in enumerate(split_lines(text), start=1)]


@dataclass(frozen=True)
class Stage:
    name: str
    file: str
    condition: dict
    items: tuple[str, ...]  # each test entry's test name (markers such as TIMEOUT (n) removed)

    @property
    def hardware(self) -> tuple[str, ...]:
        """The GPU names or sm versions in the stage's condition (empty: any/none)."""
        terms = self.condition.get("wildcards", {}) if isinstance(self.condition, dict) else {}
        gpu = terms.get("gpu", ()) if isinstance(terms, dict) else ()
        return tuple(str(g).strip("*").lower() for g in (gpu if isinstance(gpu, list) else [gpu]) if g)


def parse_test_db(text: str, file: str) -> list[Stage]:
    """The stages of one test-db yml: a condition and a list of test entries each.

    trt-test-db writes a stage's entries into a test list that upstream's pytest plugin reads
    with parse_test_list_lines, so each entry follows the waives.txt line grammar
    ('unittest/x.py TIMEOUT (90)', 'unittest/y.py ISOLATION', 'dir -k "expr"').
    """
    data = load_yaml(text, file) or {}  # bounded: size, depth, aliases
    if not isinstance(data, dict):
        raise BadInput(f"{file}: must be a YAML mapping")
    stages = []
    for key, blocks in data.items():
        if key == "version":
            continue
        if not isinstance(blocks, list):
            raise BadInput(f"{file}: stage {key!r} must be a list of blocks")
        for block in blocks:
            if not isinstance(block, dict) or not isinstance(block.get("tests") or [], list):
                raise BadInput(f"{file}: stage {key!r}: each block needs a 'tests' list")
            condition = block.get("condition") or {}
            if not isinstance(condition, dict):
                raise BadInput(f"{file}: stage {key!r}: 'condition' must be a mapping")
            items = []
            for t in block.get("tests") or ():
                if isinstance(t, (dict, list)) or t is None:
                    raise BadInput(f"{file}: stage {key!r}: a test entry must be a string, not {type(t).__name__}")
                try:
                    entry = parse_line(str(t), 0, file)
                except BadInput:  # again, with the line number (found only when needed: it is a scan)
                    entry = parse_line(str(t), _line_of(text, str(t)), file)
                if entry.name:
                    items.append(entry.name)
            stages.append(Stage(str(key), file, condition, tuple(items)))
    return stages


def _line_of(text: str, needle: str) -> int:
    """The first line of text that holds needle (for error messages only)."""
    for n, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return n
    return 0

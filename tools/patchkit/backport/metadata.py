"""A backport's entry in patchset.yaml, written into the maintainer's file as a round trip
(ruamel.yaml): their comments, key order and quoting stay. A one-fix file becomes the stack
form first: the target's fields stay at the top, the fix's move into `fixes:` with its id and
kind, their comments moved with them.
"""
from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString
from ruamel.yaml.tokens import CommentToken

from ..errors import BadInput

TARGET_FIELDS = ("upstream", "branch", "container", "extra_paths")
ENTRY_INDENT = 4  # a fix's keys sit under '  - ' in fixes:
QUOTED = ("id", "title")  # as the maintainers quote them
COUNTS = ("unpatched", "patched")  # a test file's counts, on one line each as in the sets


def _yaml() -> YAML:
    y = YAML()  # round trip
    y.preserve_quotes = True
    y.width = 4096  # never fold a long line the maintainer wrote on one
    y.indent(mapping=2, sequence=4, offset=2)  # '  - file: ...', as the sets are written
    y.representer.add_representer(type(None), lambda r, _d: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    return y


def rewrite(text: str, where: str, *, first_id: str, order: Sequence[str], series: Mapping[str, Sequence[str]],
            entry: Mapping[str, Any]) -> str:
    """patchset.yaml's text with the stack in `order` (fix ids), each fix's series the files
    named in `series`, and the fix entry['id'] set to entry (replaced in place, keys and
    comments of an old entry kept where entry has none). first_id: the id of the fix of a
    one-fix file."""
    y = _yaml()
    try:
        data = y.load(text)
    except YAMLError as exc:
        raise BadInput(f"{where}: not valid YAML ({' '.join(str(exc).split())[:200]})") from None
    if "fixes" not in data:
        data = _stacked(data, first_id)
    by_id = {str(f["id"]): f for f in data["fixes"]}
    new = by_id.get(str(entry["id"]))
    if new is None:
        new = by_id[str(entry["id"])] = CommentedMap()
    for key, value in entry.items():
        new[key] = DoubleQuotedScalarString(value) if key in QUOTED else _plain(value)
    for fix_id, names in series.items():
        _set_series(by_id[fix_id], names)
    fixes = CommentedSeq([by_id[i] for i in order])
    fixes.ca.comment = getattr(data["fixes"], "ca", CommentedSeq().ca).comment
    data["fixes"] = fixes
    out = io.StringIO()
    y.dump(data, out)
    return out.getvalue()


def _stacked(data: CommentedMap, first_id: str) -> CommentedMap:
    """The one-fix form as a stack of that one fix (ours)."""
    top, fix = CommentedMap(), CommentedMap()
    fix["id"] = DoubleQuotedScalarString(first_id)
    fix["kind"] = "ours"
    for key in data:
        side = top if key in TARGET_FIELDS else fix
        side[key] = data[key]
        if key in data.ca.items:
            side.ca.items[key] = data.ca.items[key]
    top.ca.comment = data.ca.comment
    _indent_comments(fix, ENTRY_INDENT, set())
    top["fixes"] = CommentedSeq([fix])
    return top


def _set_series(fix: CommentedMap, names: Sequence[str]) -> None:
    """The fix's series: these files, in order; an old entry's other keys (tests_only) and
    comments stay with the patch at its place."""
    old = list(fix.get("series") or [])
    seq = CommentedSeq()
    for i, name in enumerate(names):
        item = old[i] if i < len(old) and isinstance(old[i], CommentedMap) else CommentedMap()
        item["file"] = name
        seq.append(item)
    if isinstance(fix.get("series"), CommentedSeq):
        seq.ca.comment = fix["series"].ca.comment
    fix["series"] = seq


def _plain(value: Any, key: str = "") -> Any:
    """Nested dicts and lists as ruamel's: block style, but a test file's counts on one line
    ({passed: 4}), as the sets write them."""
    if isinstance(value, Mapping):
        m = CommentedMap()
        for k, v in value.items():
            m[k] = _plain(v, str(k))
        if key in COUNTS:
            m.fa.set_flow_style()
        return m
    if isinstance(value, (list, tuple)):
        return CommentedSeq([_plain(v) for v in value])
    return value


def _indent_comments(node: Any, by: int, seen: set[int]) -> None:
    """Comments on lines of their own, moved right with the keys they belong to (each token
    once: ruamel may hold one in two places)."""
    ca = getattr(node, "ca", None)
    if ca is not None:
        tokens = [t for v in ca.items.values() for t in (v or []) if t is not None]
        tokens += [t for t in (ca.comment or []) if t is not None]
        for t in _flat(tokens):
            if id(t) in seen:
                continue
            seen.add(id(t))
            t.start_mark.column += by  # where the emitter writes it
            lines = t.value.split("\n")  # a token of several lines holds their indentation
            t.value = "\n".join(" " * by + line if i and line.lstrip().startswith("#") else line
                                for i, line in enumerate(lines))
    children = node.values() if isinstance(node, Mapping) else node if isinstance(node, list) else ()
    for child in children:
        _indent_comments(child, by, seen)


def _flat(tokens: list) -> list[CommentToken]:
    out = []
    for t in tokens:
        if isinstance(t, list):
            out += _flat(t)
        elif isinstance(t, CommentToken):
            out.append(t)
    return out

"""patchset.yaml edited as a round trip (ruamel.yaml): the maintainer's comments, key order
and quoting stay, and only what a verb changes is written. A one-fix file becomes the stack
form when a second fix joins it: the target's fields stay at the top, the fix's move into
`fixes:` with its id and kind, their comments moved with them.
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

TARGET_FIELDS = ("upstream", "branch", "container", "extra_paths", "retired")
ENTRY_INDENT = 4  # a fix's keys sit under '  - ' in fixes:
QUOTED = ("id", "title")  # as the maintainers quote them
COUNTS = ("unpatched", "patched")  # a test file's counts, on one line each as in the sets
# Words PyYAML (YAML 1.1, which the loader reads with) takes for a boolean or null: quoted.
YAML11_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", ""}


def _yaml() -> YAML:
    y = YAML()  # round trip
    y.preserve_quotes = True
    y.width = 4096  # never fold a long line the maintainer wrote on one
    y.indent(mapping=2, sequence=4, offset=2)  # '  - file: ...', as the sets are written
    y.representer.add_representer(type(None), lambda r, _d: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    return y


class Meta:
    """One patchset.yaml, loaded for editing; text() is the file as it now reads."""

    def __init__(self, text: str, where: str) -> None:
        self._y = _yaml()
        try:
            self.data = self._y.load(text)
        except YAMLError as exc:
            raise BadInput(f"{where}: not valid YAML ({' '.join(str(exc).split())[:200]})") from None
        self.where = where

    @property
    def stacked(self) -> bool:
        return "fixes" in self.data

    def to_stack(self, first_id: str) -> None:
        """The one-fix form as a stack of that one fix (ours), whose id is first_id."""
        if not self.stacked:
            self.data = _stacked(self.data, first_id)

    def _fixes(self) -> dict[str, CommentedMap]:
        return {str(f["id"]): f for f in self.data["fixes"]}

    def _fix(self, fix_id: str) -> CommentedMap:
        """A fix's mapping: its entry under fixes:, or the top level of a one-fix file."""
        return self._fixes()[fix_id] if self.stacked else self.data

    def put(self, entry: Mapping[str, Any]) -> None:
        """The fix entry['id'] set to entry: replaced in place (keys and comments of the old
        entry kept where entry has none), else added at the end of the stack."""
        fixes = self._fixes()
        new = fixes.get(str(entry["id"]))
        if new is None:
            new = CommentedMap()
            self.data["fixes"].append(new)
        for key, value in entry.items():
            new[key] = DoubleQuotedScalarString(value) if key in QUOTED else plain(value)

    def remove(self, fix_id: str) -> None:
        self.data["fixes"] = self._seq([f for f in self.data["fixes"] if str(f["id"]) != fix_id])

    def order(self, ids: Sequence[str]) -> None:
        """The stack in this order of fix ids (a one-fix file has one order)."""
        if self.stacked:
            fixes = self._fixes()
            self.data["fixes"] = self._seq([fixes[i] for i in ids])

    def _seq(self, items: list) -> CommentedSeq:
        seq = CommentedSeq(items)
        seq.ca.comment = getattr(self.data["fixes"], "ca", CommentedSeq().ca).comment
        return seq

    def set_series(self, fix_id: str, names: Sequence[str]) -> None:
        """The fix's series: these files, in order; an old entry's other keys (tests_only) and
        comments stay with the patch at its place."""
        fix = self._fix(fix_id)
        old = list(fix.get("series") or [])
        seq = CommentedSeq()
        for i, name in enumerate(names):
            item = old[i] if i < len(old) and isinstance(old[i], CommentedMap) else CommentedMap()
            item["file"] = name
            seq.append(item)
        if isinstance(fix.get("series"), CommentedSeq):
            seq.ca.comment = fix["series"].ca.comment
        fix["series"] = seq

    def set_fix(self, fix_id: str, key: str, value: Any) -> None:
        """One key of a fix (expected, status, ...), written as the sets write it."""
        self._fix(fix_id)[key] = plain(value, key)

    def fix_value(self, fix_id: str, *path: str) -> Any:
        """A value under a fix (expected, source, ...); None where there is none."""
        node: Any = self._fix(fix_id)
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        return node

    def set_fix_value(self, fix_id: str, path: Sequence[str], value: Any) -> None:
        """A value under a fix (('expected', 'source')), its mappings made where missing."""
        node = self._fix(fix_id)
        for key in path[:-1]:
            if not isinstance(node.get(key), CommentedMap):
                node[key] = CommentedMap()
            node = node[key]
        node[path[-1]] = plain(value, path[-1])

    def comment_before(self, fix_id: str, path: Sequence[str], text: str) -> None:
        """A comment line above a key under a fix (what a reader of the file must know of its value)."""
        node = self._fix(fix_id)
        for key in path[:-1]:
            node = node[key]
        depth = (ENTRY_INDENT if self.stacked else 0) + 2 * (len(path) - 1)
        node.yaml_set_comment_before_after_key(path[-1], before=text, indent=depth)

    def set_upstream(self, key: str, value: str) -> None:
        self.data["upstream"][key] = value

    def set(self, key: str, value: Any) -> None:
        """A target-level key (branch, retired, ...)."""
        self.data[key] = plain(value, key)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def text(self) -> str:
        out = io.StringIO()
        self._y.dump(self.data, out)
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


def plain(value: Any, key: str = "") -> Any:
    """Nested dicts and lists as ruamel's: block style, but a test file's counts on one line
    ({passed: 4}), as the sets write them."""
    if isinstance(value, CommentedMap | CommentedSeq):
        return value
    if isinstance(value, Mapping):
        m = CommentedMap()
        for k, v in value.items():
            m[k] = plain(v, str(k))
        if key in COUNTS:
            m.fa.set_flow_style()
        return m
    if isinstance(value, (list, tuple)):
        return CommentedSeq([plain(v) for v in value])
    if isinstance(value, str) and value.lower() in YAML11_WORDS:
        return DoubleQuotedScalarString(value)  # forwarded: "no", never the boolean a YAML 1.1 reader sees
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

"""Bounded, validated reading of the files users and tools hand us (YAML metadata, JSON).

Every check raises BadInput with one line naming the file and the key path
(`patches/rc25/patchset.yaml: tests.regression[0]: must be a string`), before anything
runs. Hand-written rather than jsonschema: the messages must name the key in the user's
file, YAML dates must become ISO strings (so --json never meets a date), and the schemas
are small enough to read at a glance.
"""
from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from .errors import BadInput
from .text.words import control

MAX_BYTES = 4 * 1024 * 1024  # larger than any metadata, test-db or report file we read
MAX_DEPTH = 64  # nesting levels; PyYAML's composer recurses and would crash far below 20,000
MAX_ALIASES = 1000  # anchors are legal YAML, but alias bombs must not expand past this
# libyaml's parser where PyYAML was built with it (the same events and values, the constructor
# is PyYAML's own either way): the pure-Python scanner was most of a set's loading, a third of
# make check's own time (#34 item 4).
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_text(path: Path, where: str | None = None, limit: int = MAX_BYTES) -> str:
    """A file's UTF-8 text, bounded in size; BadInput on anything else."""
    where = where or str(path)
    try:
        size = path.stat().st_size
        if size > limit:
            raise BadInput(f"{where}: {size} bytes, more than the {limit} this file may have")
        data = path.read_bytes()
    except IsADirectoryError:
        raise BadInput(f"{where}: is a directory, not a file") from None
    except OSError as exc:
        raise BadInput(f"{where}: cannot read: {exc.strerror}") from None
    return decode(data, where)


def decode(data: bytes, where: str) -> str:
    if b"\0" in data:
        raise BadInput(f"{where}: contains a NUL byte; not a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{where}: not UTF-8 text (byte {exc.start})") from None


def load_yaml(text: str, where: str, max_aliases: int = MAX_ALIASES) -> Any:
    """Safe-load YAML text after checking, on the event stream (no recursion), depth and aliases."""
    if len(text) > MAX_BYTES:
        raise BadInput(f"{where}: more than {MAX_BYTES} bytes")
    try:  # text git gave us keeps bytes that are not UTF-8 as surrogates: libyaml takes UTF-8 only
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadInput(f"{where}: not UTF-8 text (character {exc.start})") from None
    aliases = 0
    # One open mapping or sequence per level: [path, keys seen (None: a sequence), awaiting a key, index].
    stack: list[list] = []
    try:
        for event in yaml.parse(text, Loader=LOADER):
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                stack.pop()
                continue
            if not isinstance(event, yaml.NodeEvent):
                continue
            at = _child_path(stack, event, where)
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if len(stack) >= MAX_DEPTH:
                    raise BadInput(f"{where}: nested more than {MAX_DEPTH} levels deep")
                stack.append([at, set() if isinstance(event, yaml.MappingStartEvent) else None, True, 0])
            elif isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > max_aliases:
                    raise BadInput(f"{where}: more than {max_aliases} YAML aliases")
        return yaml.load(text, Loader=LOADER)  # noqa: S506 - a safe loader (C or Python)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise BadInput(f"{where}: not valid YAML ({at}{problem})") from None
    except (RecursionError, MemoryError):
        raise BadInput(f"{where}: too deeply nested") from None


def _child_path(stack: list[list], event: Any, where: str) -> str:
    """The key path of the node this event starts; a key its mapping already has is BadInput.

    YAML says a mapping's keys are unique, but PyYAML keeps the last of two: the user meant
    one of them, and we must not guess which (issue #17 item 12).
    """
    if not stack:
        return ""
    parent = stack[-1]
    path, keys, awaiting_key, index = parent[:4]
    if keys is None:  # a sequence item
        parent[3] += 1
        return f"{path}[{index}]"
    parent[2] = not awaiting_key
    if awaiting_key:
        if isinstance(event, yaml.ScalarEvent):
            name = event.value
            if name in keys:
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise BadInput(f"{where}: {path + '.' if path else ''}{name}: duplicated key (line {line}); "
                               "keep one of them")
            keys.add(name)
            parent.append(name)
        else:
            parent.append("?")
        return path
    name = parent.pop()
    return f"{path}.{name}" if path else str(name)


def load_json(path: Path, where: str | None = None) -> Any:
    """A JSON file, bounded; BadInput (one line) on unreadable, non-UTF-8 or invalid JSON."""
    where = where or str(path)
    text = read_text(path, where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{where}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise BadInput(f"{where}: too deeply nested") from None


# -- the checks ------------------------------------------------------------------------
Check = Callable[[Any, str], Any]


def fail(where: str, key: str, what: str) -> BadInput:
    return BadInput(f"{where}: {key}: {what}" if key else f"{where}: {what}")


def string(nonempty: bool = True, one_line: bool = True) -> Check:
    def check(value: Any, key: str, where: str = "") -> str:
        if not isinstance(value, str) or (nonempty and not value.strip()):
            raise fail(where, key, "must be a non-empty string" if nonempty else "must be a string")
        if one_line and (found := control(value)):
            raise fail(where, key, f"must be one line without control characters ({found})")
        return value
    return check


def rel_path() -> Check:
    """A path inside the repository: relative, no '..', not into .git, no control characters."""
    def check(value: Any, key: str, where: str = "") -> str:
        value = string()(value, key, where)
        pure = PurePosixPath(value)
        if value.startswith("/") or ".." in pure.parts or ".git" in pure.parts or "\\" in value:
            raise fail(where, key, f"{value!r} must be a path inside the repository")
        return value
    return check


def boolean() -> Check:
    def check(value: Any, key: str, where: str = "") -> bool:
        if not isinstance(value, bool):
            raise fail(where, key, "must be true or false")
        return value
    return check


def count() -> Check:
    def check(value: Any, key: str, where: str = "") -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise fail(where, key, "must be a whole number >= 0")
        return value
    return check


def scalar() -> Check:
    """A string, number, boolean, null or date: dates become ISO strings (JSON has no dates)."""
    def check(value: Any, key: str, where: str = "") -> Any:
        if isinstance(value, (datetime.date, datetime.datetime)):
            return value.isoformat()
        if value is None or isinstance(value, (str, int, float, bool)):
            return value
        raise fail(where, key, "must be a single value, not a list or mapping")
    return check


def optional(inner: Check, default: Any = None) -> Check:
    def check(value: Any, key: str, where: str = "") -> Any:
        return default if value is None else inner(value, key, where)
    check.optional = True  # type: ignore[attr-defined]
    check.default = default  # type: ignore[attr-defined]
    check.inner = inner  # type: ignore[attr-defined] - for keys() (the docs' test)
    return check


def one_of(*choices: Check) -> Check:
    def check(value: Any, key: str, where: str = "") -> Any:
        errors = []
        for c in choices:
            try:
                return c(value, key, where)
            except BadInput as exc:
                errors.append(exc)
        raise errors[-1]
    check.choices = choices  # type: ignore[attr-defined]
    return check


def list_of(inner: Check, nonempty: bool = False, limit: int = 10_000) -> Check:
    def check(value: Any, key: str, where: str = "") -> list:
        if not isinstance(value, list):
            raise fail(where, key, "must be a list" + (" (a single value must still be written as '- item')"
                                                     if isinstance(value, str) else ""))
        if nonempty and not value:
            raise fail(where, key, "must not be empty")
        if len(value) > limit:
            raise fail(where, key, f"has more than {limit} entries")
        return [inner(v, f"{key}[{i}]", where) for i, v in enumerate(value)]
    check.item = inner  # type: ignore[attr-defined]
    return check


def mapping_of(key_check: Check, value_check: Check, limit: int = 10_000) -> Check:
    def check(value: Any, key: str, where: str = "") -> dict:
        if not isinstance(value, dict):
            raise fail(where, key, "must be a mapping")
        if len(value) > limit:
            raise fail(where, key, f"has more than {limit} entries")
        out = {}
        for k, v in value.items():
            sub = f"{key}.{k}" if key else str(k)
            out[key_check(k, sub, where)] = value_check(v, sub, where)
        return out
    check.value = value_check  # type: ignore[attr-defined]
    return check


def keys(check: Check, at: str = "") -> list[str]:
    """Every key path a schema accepts, as the docs name them: `upstream.url`, a list's items
    as `series[]`, a mapping's own keys as `<name>` (`expected.<mode>.<test file>`)."""
    out: list[str] = []
    check = getattr(check, "inner", check)  # an optional key: what it holds when present
    for choice in getattr(check, "choices", (check,)):
        if hasattr(choice, "fields"):
            for name, sub in choice.fields.items():
                path = f"{at}.{name}" if at else name
                out += [path] + keys(sub, path)
        elif hasattr(choice, "item"):
            out += keys(choice.item, f"{at}[]")
        elif hasattr(choice, "value"):
            out += keys(choice.value, f"{at}.<name>" if at else "<name>")
    return list(dict.fromkeys(out))


def record(fields: dict[str, Check], unknown: bool = False) -> Check:
    """A mapping with these keys (those whose check is not optional are required)."""
    def check(value: Any, key: str, where: str = "") -> dict:
        if not isinstance(value, dict):
            raise fail(where, key, "must be a mapping")
        out = {}
        for k in value:
            if not isinstance(k, str) or (k not in fields and not unknown):
                sub = f"{key}.{k}" if key else str(k)
                known = ", ".join(sorted(fields))
                raise fail(where, sub, f"unknown key (known: {known})")
        for name, c in fields.items():
            sub = f"{key}.{name}" if key else name
            if name not in value:
                if not getattr(c, "optional", False):
                    raise fail(where, sub, "is required")
                if c.default is None:  # type: ignore[attr-defined]
                    continue  # absent stays absent
            out[name] = c(value.get(name), sub, where)
        for k in value:
            if k not in out:
                out[k] = scalar()(value[k], f"{key}.{k}" if key else k, where) if not isinstance(value[k], (dict, list)) \
                    else value[k]
        return out
    check.fields = fields  # type: ignore[attr-defined]
    return check


def validate(data: Any, check: Check, where: str) -> Any:
    return check(data, "", where)

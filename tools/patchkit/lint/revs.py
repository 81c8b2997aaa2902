"""Which version of a hook repository's tool upstream's config pins: its `rev`, read as pre-commit reads it.

A rev is a tag (`v0.9.4`, `5.12.0`: the tool's version, with or without a leading `v`), or a
commit id; `pre-commit autoupdate --freeze` writes the id with the tag it froze in a comment on
the same line (`rev: 0123...  # frozen: v0.9.4`). PyYAML drops comments, so the comment is read
from the text at the rev's own position (yaml.compose keeps it). pre-commit itself has already
judged the config (validate-config) before this runs: a missing or non-string rev never reaches
here. What pre-commit accepts but names no version (a branch, a misspelt tag) is a config error
here: pre-commit calls such mutable refs "not supported", and no tool version can be pinned from it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import yaml
from packaging.version import InvalidVersion, Version

SHA = re.compile(r"^(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}$|^[0-9a-f]{40}$")  # a commit id, whole or abbreviated
FROZEN = re.compile(r"^\s*#\s*frozen:\s*(\S+)")


@dataclass(frozen=True)
class Rev:
    """A repository's rev as written, the tag it stands for, and the tool version that tag names."""

    written: str
    tag: str  # the rev itself, or the tag a frozen commit's comment names ("" when unknown)
    version: str  # the tool's version ("" when unknown)


class Malformed(ValueError):
    """A rev that names no version: the message says which and what would."""


def frozen(text: str) -> dict[int, str]:
    """repos index -> the tag in a `# frozen: <tag>` comment on its rev's line."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return {}
    lines = text.splitlines()
    out: dict[int, str] = {}
    repos = _get(root, "repos")
    for i, repo in enumerate(repos.value if isinstance(repos, yaml.SequenceNode) else []):
        rev = _get(repo, "rev")
        if isinstance(rev, yaml.ScalarNode) and rev.end_mark.line < len(lines):
            m = FROZEN.match(lines[rev.end_mark.line][rev.end_mark.column:])
            if m:
                out[i] = m[1]
    return out


def _get(node, key: str):
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)


def version_of(tag: str) -> str:
    """The tool version a tag names (`v0.9.4` -> `0.9.4`), or Malformed."""
    v = tag[1:] if tag[:1] in "vV" else tag
    try:
        Version(v)
    except InvalidVersion:
        raise Malformed(f"{tag!r} is not a version") from None
    return v


def resolve(url: str, rev: str, frozen_tag: str | None) -> Rev:
    """The rev's tag and version; Malformed when it names none (a commit without its frozen tag
    is not malformed: it is well formed, only unknown here, and Rev says so with an empty version)."""
    if SHA.match(rev):
        if frozen_tag is None:
            return Rev(rev, "", "")
        try:
            return Rev(rev, frozen_tag, version_of(frozen_tag))
        except Malformed:
            raise Malformed(f"the rev of {url} is commit {rev[:12]}, whose `# frozen: {frozen_tag}` comment "
                            "names no version") from None
    try:
        return Rev(rev, rev, version_of(rev))
    except Malformed:
        raise Malformed(f"the rev of {url} is {rev!r}, which names no version of its tool: a tag "
                        "(v1.2.3 or 1.2.3) or a commit with its `# frozen: v1.2.3` comment (what "
                        "`pre-commit autoupdate [--freeze]` writes)") from None

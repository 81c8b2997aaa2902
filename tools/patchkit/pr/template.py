"""Upstream's PR template at the target ref, split into what make pr fills and what it keeps.

The template lives in the upstream checkout (.github/pull_request_template.md) and changes
over time (sections, checklist items, bot help), so it is read at the commit being patched,
never copied into this project. A checkout without one gets the built-in template, which
has the same shape, and the result says so.
"""
from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass

from ..git import Repo

PATH = ".github/pull_request_template.md"
_HEADING = re.compile(r"^##\s+(.*?)\s*#*\s*$")
_COMMENT = re.compile(r"<!--.*?-->[ \t]*\n?", re.S)


@dataclass(frozen=True)
class Section:
    heading: str  # the heading line as written, e.g. '## Test Coverage'
    name: str  # its text, e.g. 'Test Coverage'
    text: str  # everything after the heading line, up to the next '## '


@dataclass(frozen=True)
class Template:
    preamble: str  # before the first '## ' heading (upstream: '@coderabbitai summary' and title guidance)
    sections: tuple[Section, ...]
    source: str  # where it came from, for the user

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name.lower() == name.lower()), None)


def at(repo: Repo, rev: str, ref: str) -> Template:
    """The template at rev (ref names it for the user); the built-in one when rev has none."""
    text = repo.show_file(rev, PATH)
    if isinstance(text, bytes):  # the facade may hand out content as bytes
        text = text.decode("utf-8", errors="replace")
    if text is None:
        return parse(builtin(), f"built-in template ({PATH} does not exist at {ref})")
    return parse(text, f"{PATH} at {ref} ({rev[:12]})")


def builtin() -> str:
    return importlib.resources.files("patchkit").joinpath("templates", "pull_request_template.md").read_text(encoding="utf-8")


def parse(text: str, source: str) -> Template:
    """Split at level-2 headings outside fenced code; everything else is kept as written."""
    text = text.replace("\r\n", "\n")
    chunks: list[tuple[str | None, list[str]]] = [(None, [])]
    fence = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        m = None if fence else _HEADING.match(line.rstrip("\n"))
        if m and not line.startswith("###"):
            chunks.append((line.rstrip("\n"), []))
        else:
            chunks[-1][1].append(line)
    preamble = "".join(chunks[0][1])
    sections = tuple(Section(h, _HEADING.match(h).group(1), "".join(body)) for h, body in chunks[1:] if h)
    return Template(preamble, sections, source)


def without_comments(text: str) -> str:
    """The text with its HTML comments (upstream's guidance to the author) removed, and the
    blank lines they leave collapsed."""
    text = _COMMENT.sub("", text)
    return re.sub(r"\n{3,}", "\n\n", text)

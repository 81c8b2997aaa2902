"""DEP-3 provenance of a stack's patches: what make check requires of each patch file, and a
commit message without it (a PR carries the change, not the overlay's metadata).

Each patch's commit message ends with git trailers in Debian's DEP-3 fields (Origin, Bug,
Forwarded, Applied-Upstream, Last-Update; STACK.md says which each kind of fix carries), so
that `git am` keeps them and `make export` writes them back byte for byte. Pure: no git, no files.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .model import DEP3_FIELDS, DEP3_STATUS, Fix, Patch, PatchSet
from .patchset import trailers


@dataclass(frozen=True)
class Missing:
    """A patch of the stack without an origin or a status, and what its fix would have it say."""

    target: str
    fix: Fix
    patch: Patch
    fields: tuple[str, ...]  # "Origin", "a status (Forwarded or Applied-Upstream)"

    def one_line(self) -> str:
        return (f"patches/{self.target}/{self.patch.name} (fix {self.fix.id}) has no {' and no '.join(self.fields)} "
                f"trailer (DEP-3); its fix would say: {'; '.join(f'{k}: {v}' for k, v in expected(self.fix))}")


def expected(fix: Fix) -> list[tuple[str, str]]:
    """The origin and status a patch of this fix carries, from what patchset.yaml says of the fix."""
    if fix.ours:
        return [("Origin", f"vendor, {fix.bug}"), ("Forwarded", fix.status.forwarded)]
    if fix.status.applied_upstream:
        return [("Origin", f"upstream, {fix.origin}"), ("Applied-Upstream", fix.status.applied_upstream)]
    return [("Origin", f"backport, {fix.origin}"), ("Forwarded", "not-needed")]


def missing(ps: PatchSet) -> list[Missing]:
    """The stack's patches that lack an Origin or a status trailer, in stack order."""
    out = []
    for fix in ps.fixes:
        for patch in fix.patches:
            said = patch.provenance
            lacks = (("Origin",) if "Origin" not in said else ()) + (
                ("status (Forwarded or Applied-Upstream)",) if not any(k in said for k in DEP3_STATUS) else ())
            if lacks:
                out.append(Missing(ps.target, fix, patch, lacks))
    return out


_BLANK = re.compile(r"\n(?:[ \t]*\n)+")
_KEY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*:")
_DEP3 = {k.lower() for k in DEP3_FIELDS}


def without(message: str) -> str:
    """The commit message without its DEP-3 trailers (other trailers, a sign-off, stay); a
    trailer block left empty goes with the blank line before it. Which lines are trailers is
    what git interpret-trailers says (patchset.trailers)."""
    subject, sep, body = message.partition("\n\n")
    body = body.rstrip("\n")
    if not sep or not trailers(body):
        return message
    seps = list(_BLANK.finditer(body))
    head, block = (body[:seps[-1].start()], body[seps[-1].end():]) if seps else ("", body)
    kept: list[str] = []
    dropping = False
    for line in block.split("\n"):
        if line[:1] in (" ", "\t"):  # a continuation goes with its trailer
            if not dropping:
                kept.append(line)
            continue
        m = _KEY.match(line)
        dropping = bool(m and m[1].lower() in _DEP3)
        if not dropping:
            kept.append(line)
    rest = "\n\n".join(p for p in (head, "\n".join(kept)) if p.strip())
    return subject + ("\n\n" + rest if rest else "") + "\n"

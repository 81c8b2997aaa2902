"""DEP-3 provenance of a stack's patches: the trailers of a commit message as git reads them,
what make check requires of each patch file (an origin and a status, each field once, an
Origin that names the fix the patch is filed under), and a commit message without it (a PR
carries the change, not the overlay's metadata; an untrusted PR's own fields never reach ours).

Each patch's commit message ends with git trailers in Debian's DEP-3 fields (Origin, Bug,
Forwarded, Applied-Upstream, Last-Update; docs/patch-sets.md says which each kind of fix
carries), so that `git am` keeps them and `make export` writes them back byte for byte.
Pure: no git, no files.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .model import DEP3_FIELDS, DEP3_STATUS, Fix, Patch, PatchSet

_TRAILER = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)$")
_GIT_GENERATED = ("Signed-off-by: ", "(cherry picked from commit ")


def trailers(body: str) -> tuple[tuple[str, str], ...]:
    """The trailers of a commit message body, as `git interpret-trailers --parse` reads them:
    its last paragraph, when every line of it is a 'Key: value' line (a line that starts with
    white space continues the one before), or when git itself wrote one of them (Signed-off-by)
    and at least a quarter are. tests/test_stack.py holds this against git's own parse."""
    paragraphs = [p for p in re.split(r"\n[ \t]*\n", body.strip("\n")) if p.strip()]
    if not paragraphs:
        return ()
    found: list[list[str]] = []
    others = 0
    generated = False
    for line in paragraphs[-1].split("\n"):
        if line[:1] in (" ", "\t") and found:
            found[-1][1] += " " + line.strip()
            continue
        m = _TRAILER.match(line)
        if m:
            found.append([m[1], m[2].strip()])
            generated |= line.startswith(_GIT_GENERATED)
        else:
            others += 1
            generated |= line.startswith(_GIT_GENERATED)
    if not found or (others and not (generated and len(found) * 3 >= others)):
        return ()
    return tuple((k, v) for k, v in found)


def message_trailers(message: str) -> tuple[tuple[str, str], ...]:
    """The trailers of a whole commit message (subject first)."""
    return trailers(message.partition("\n\n")[2])


def first(pairs: Sequence[tuple[str, str]], key: str) -> str | None:
    """The first value of a field, any case of its key, as DEP-3 readers take it; None when absent."""
    return next((v for k, v in pairs if k.lower() == key.lower()), None)


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


def twice(ps: PatchSet) -> list[str]:
    """One line for each patch of the stack that carries a DEP-3 field more than once (a DEP-3
    reader takes the first value, git's trailer readers the last: #31 item 5)."""
    out = []
    for fix in ps.fixes:
        for patch in fix.patches:
            keys = [k.lower() for k, _v in patch.trailers]
            for field in DEP3_FIELDS:
                values = [v for k, v in patch.trailers if k.lower() == field.lower()]
                if keys.count(field.lower()) > 1:
                    out.append(f"patches/{ps.target}/{patch.name} (fix {fix.id}) carries {field} {len(values)} times "
                               f"({'; '.join(repr(v[:80]) for v in values)}); a DEP-3 reader takes the first, git "
                               f"the last: keep one")
    return out


# -- which fix an Origin names ---------------------------------------------------------------------
KIND_WORDS = {"ours": ("vendor",), "backport": ("backport", "upstream")}
_COMMIT = re.compile(r"/commit/([0-9a-f]{7,40})$")


def _key(url: str | None) -> str:
    return (url or "").strip().rstrip("/").lower()


def split_origin(origin: str) -> tuple[str, str]:
    """('vendor', '<url>') of 'vendor, <url>'; ('', text) when it has no kind word."""
    kind, sep, url = origin.partition(",")
    return (kind.strip().lower(), url.strip()) if sep else ("", origin.strip())


def names(fix: Fix, origin: str) -> bool:
    """Whether an Origin's URL is this fix's: its origin (a backport's PR or commit, our bug),
    our bug, the commit upstream applied it as, or one of the upstream commits it was made from."""
    url = _key(split_origin(origin)[1])
    if not url:
        return False
    if url in {_key(fix.origin), _key(fix.status.applied_upstream)} | ({_key(fix.bug)} if fix.ours else set()):
        return True
    m = _COMMIT.search(url)
    return bool(m) and not fix.ours and any(c.lower().startswith(m[1]) for c in fix.upstream_commits)


def named(fixes: Sequence[Fix], origin: str) -> list[Fix]:
    """The fixes an Origin names (by its URL; its kind word aside), in stack order."""
    return [f for f in fixes if names(f, origin)]


def kind_fits(fix: Fix, origin: str) -> bool:
    """Whether an Origin's kind word is one the fix's kind carries (ours: vendor; a backport:
    backport or upstream)."""
    return split_origin(origin)[0] in KIND_WORDS.get(fix.kind, ())


def misfiled(target: str, fixes: Sequence[Fix]) -> list[str]:
    """One line for each patch whose Origin does not name the fix it is filed under (#31 item 2:
    an export by position filed upstream's commit under our fix): naming both fixes."""
    out = []
    for fix in fixes:
        for patch in fix.patches:
            origin = first(patch.trailers, "Origin")
            if origin is None:
                continue  # make check refuses it as missing (missing())
            where = f"patches/{target}/{patch.name} is filed under fix {fix.id} ({fix.kind})"
            said = f"its Origin ({origin[:160]!r})"
            others = named(fixes, origin)
            if fix not in others:
                names_ = (f"names fix {', '.join(f'{o.id} ({o.kind})' for o in others)}" if others
                          else "names no fix of the stack")
                out.append(f"{where}, but {said} {names_}")
            elif not kind_fits(fix, origin):
                out.append(f"{where}, but {said} says {split_origin(origin)[0] or 'no kind'!r}, not "
                           f"{' or '.join(KIND_WORDS[fix.kind])}")
    return out


# -- messages --------------------------------------------------------------------------------------
_BLANK = re.compile(r"\n(?:[ \t]*\n)+")
_KEY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*:")
_DEP3 = {k.lower() for k in DEP3_FIELDS}


def without(message: str) -> str:
    """The commit message without its DEP-3 trailers (other trailers, a sign-off, stay); a
    trailer block left empty goes with the blank line before it. Which lines are trailers is
    what git interpret-trailers says (trailers())."""
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


def untrusted(message: str) -> str:
    """An untrusted commit message (a pull request's) made safe to carry our DEP-3 trailers
    (#31 item 5): its own DEP-3 trailers are removed, and a DEP-3 field line anywhere else in
    its body is quoted ('> Origin: ...'), so that neither git nor a DEP-3 reader, which takes
    the first value it meets in the header, reads the PR's word for ours."""
    subject, sep, body = without(message).partition("\n\n")
    if not sep:
        return subject
    lines = [("> " + line) if (m := _KEY.match(line)) and m[1].lower() in _DEP3 else line
             for line in body.split("\n")]
    return subject + "\n\n" + "\n".join(lines)


_LAST_UPDATE = re.compile(r"^Last-Update[ \t]*:.*$", re.M | re.I)


def without_last_update(body: str) -> str:
    """A message body with its Last-Update trailer left out: what a change is, beside when it was made."""
    return _LAST_UPDATE.sub("", body)


def with_last_update(message: str, day: str) -> str:
    """The message with its Last-Update trailer saying day: the one in its trailer block
    rewritten, else added at the end of the block (a message without trailers gets a block)."""
    text = message.rstrip("\n")
    subject, sep, body = text.partition("\n\n")
    if sep and trailers(body):
        seps = list(_BLANK.finditer(body))
        at = seps[-1].end() if seps else 0
        block = body[at:]
        if _LAST_UPDATE.search(block):
            block = _LAST_UPDATE.sub(f"Last-Update: {day}", block, count=1)
        else:
            block += f"\nLast-Update: {day}"
        return f"{subject}\n\n{body[:at]}{block}\n"
    return f"{text}\n\nLast-Update: {day}\n"

"""A stack's patch files as every verb writes them: git format-patch of its commits on the
base, numbered over the whole stack (0001..000N), and a patch whose change did not change
kept byte for byte (#33 item 3).

A changed patch (a new one, a merged or rebased one) carries `index` lines with the whole
blob ids of the checkout it was made from, so that `git am -3` and `git apply -3` find its
base by hand, and its Last-Update trailer says the day it changed. A patch whose change is
what it was (same author, date, message but for Last-Update, and diff but for its index
lines) keeps its old bytes, only its number (file name and `[PATCH n/m]`) following a new
place: exporting from another checkout (the miniature, a mirror with other blob ids) churns
nothing, and a fix added at the end of the stack leaves the others' files as they are (their
`[PATCH n/m]` says the count of the stack they were numbered in; git am reads none of it).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import provenance, series
from ..errors import Conflict
from ..git import Repo, Sha
from ..model import Fix, Patch, PatchSet
from ..patchset import parse_patch

_INDEX = re.compile(rb"^index [0-9a-f]+\.\.[0-9a-f]+( \d+)?\n", re.M)
_INDEX_TEXT = re.compile(r"^index [0-9a-f]+\.\.[0-9a-f]+( \d+)?\n", re.M)
_PREFIX = re.compile(rb"^Subject: \[PATCH[^\]]*\]", re.M)


@dataclass(frozen=True)
class PatchFile:
    """One file of the stack as it is to be written."""

    name: str
    data: bytes
    changed: bool  # a new change: written as format-patch gave it (index lines, today's Last-Update)
    was: str = ""  # the old file whose bytes it keeps, when unchanged


def without_index_lines(data: bytes) -> bytes:
    """A patch file's bytes without its blob ids."""
    return _INDEX.sub(b"", data)


def change(p: Patch) -> tuple[str, ...]:
    """What a patch changes, and who made it when: equal for the same change in any checkout."""
    return (p.author_name, p.author_email, p.date, p.subject, provenance.without_last_update(p.body),
            _INDEX_TEXT.sub("", p.diff))


def renumber(data: bytes, n: int, total: int) -> bytes:
    """The file's Subject prefix for place n of total, as format-patch numbers a series."""
    prefix = b"[PATCH]" if total == 1 else f"[PATCH {n}/{total}]".encode()
    return _PREFIX.sub(b"Subject: " + prefix, data, count=1)


def bare(p: Patch) -> tuple[str, ...]:
    """What a patch changes with its DEP-3 trailers left out: a commit of the branch that lost
    them (a commit make new-fix made a fix of, still on the branch as the user made it) is the
    same change as the patch that carries them."""
    return (p.author_name, p.author_email, p.date, p.subject, provenance.without(p.message),
            _INDEX_TEXT.sub("", p.diff))


def known(old: Sequence[Patch], p: Patch) -> Patch | None:
    """The old patch whose change p is: the same change, or (p carrying no Origin) the same
    change but for the DEP-3 trailers the old one carries."""
    for q in old:
        if change(q) == change(p):
            return q
    if p.trailer("Origin") is None:
        return next((q for q in old if bare(q) == bare(p)), None)
    return None


def owners(ps: PatchSet, p: Patch) -> list[Fix]:
    """The fixes of the stack a commit (as a patch) may belong to, by its Origin trailer (and
    the kind word its fix carries); without an Origin, the fix one of whose patches it is but
    for the DEP-3 trailers (known()). [] when it belongs to none."""
    origin = p.trailer("Origin")
    if origin is not None:
        return [f for f in provenance.named(ps.fixes, origin) if provenance.kind_fits(f, origin)]
    was = known(ps.patches, p)
    return [f for f in ps.fixes if was in f.patches] if was is not None else []


def formatted(repo: Repo, commits: Sequence[Sha], work: Path) -> list[Patch]:
    """These commits of one line of history (oldest first; others between them, a waiver
    commit say, are left out) as patch files under work, parsed. Conflict when one changes
    nothing (git writes no file for it)."""
    span = f"{commits[0]}~1..{commits[-1]}"
    every = repo.commits(span)
    files = repo.format_series(span, work, full_index=True)
    if len(files) != len(every):
        empty = [c[:12] for c in every if repo.changed_paths(c) == []]
        raise Conflict(f"commit {', '.join(empty) or 'of the stack'} changes nothing once the commits before it are "
                       f"applied; nothing written")
    at = {c: f for c, f in zip(every, files)}
    return [parse_patch(at[c]) for c in commits]


def render(repo: Repo, chain: Sequence[Sha], old: Sequence[Patch], day: str, work: Path,
           first: Sequence[Patch] | None = None) -> list[PatchFile]:
    """The patch files of chain, in order: an old patch's bytes where its change is unchanged
    (known()), else format-patch's with index lines and Last-Update: day. first: the chain
    as formatted() gave it already."""
    if not chain:
        return []
    parsed = list(first) if first is not None else formatted(repo, chain, work / "first")
    stale = [i for i, p in enumerate(parsed) if known(old, p) is None and p.trailer("Last-Update") != day]
    if stale:  # today's date in each changed patch: the chain again from the first of them, messages restamped
        chain = _restamp(repo, chain, set(stale), day)
        parsed = formatted(repo, chain, work / "stamped")
    out = []
    for i, p in enumerate(parsed, 1):
        was = known(old, p)
        if was is not None:  # its bytes; renumbered only when its place (its file name) moved
            data = was.file.read_bytes()
            out.append(PatchFile(p.name, data if was.name == p.name else renumber(data, i, len(parsed)), False,
                                 was.name))
        else:
            out.append(PatchFile(p.name, p.file.read_bytes(), True))
    return out


def _restamp(repo: Repo, chain: Sequence[Sha], changed: set[int], day: str) -> list[Sha]:
    """The chain made again from its first changed commit, each changed one's message with
    Last-Update: day (trees, authors and author dates as they were)."""
    start = min(changed)
    out = list(chain[:start])
    parent = repo.commit_info(chain[start]).parents[0]
    for i in range(start, len(chain)):
        info = repo.commit_info(chain[i])
        message = provenance.with_last_update(info.message, day) if i in changed else info.message
        parent = repo.commit_tree(info.tree, [parent], message, author=info.author, committer=info.author,
                                  author_date=info.author_date, committer_date=series.THROWAWAY_DATE)
        out.append(parent)
    return out

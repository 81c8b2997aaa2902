"""What upstream's hooks need from the ref besides the series' files, fetched alone.

A cold make apply leaves a one-commit, blobless, sparse clone: every tree of the commit is
there, but blobs only of the set's paths. The hooks also need upstream's .pre-commit-config.yaml
and the tools' settings, the scripts its local hooks run, and what those scripts read in turn
(a baseline beside them, a module they import; found by the file names and imports their text
mentions that are files at the ref). Those blobs, and no others, are fetched by id in one
watched batch per round (git's own lazy fetch would start one unwatched process per blob).
Settings that cannot be fetched stop the lint with git's reason (every verdict depends on
them); a script that cannot be had makes its hook not run, with the reason, never passed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ..errors import CommandError, NotFound
from ..git import Repo

_FILE_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*\.[A-Za-z0-9]+")
_IMPORT = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_][\w.]*)", re.M)
CODE = (".py", ".sh")  # files whose text is read for what they read in turn
ROUNDS = 4  # a script, what it reads, what that reads ...: deep enough for upstream's scripts


@dataclass
class Needs:
    files: dict[str, str] = field(default_factory=dict)  # path -> mode: what the workspace takes from the ref
    unavailable: dict[str, str] = field(default_factory=dict)  # script -> why it cannot be had here


def fetch(repo: Repo, rev: str, paths: list[str]) -> dict[str, tuple[str, str]]:
    """The files among paths at rev (path -> (mode, blob id)), their blobs fetched if missing;
    a failing fetch raises git's error (exit 3) or the transfer's (stalled, unreachable: exit 4)."""
    found = repo.blob_ids(rev, paths)
    repo.prefetch([sha for _mode, sha in found.values()])
    return found


def scripts(repo: Repo, rev: str, wanted: set[str]) -> Needs:
    """The local hooks' scripts at rev and what they read, fetched; those that cannot be had, and why."""
    needs = Needs()
    closure = {s: {s} for s in wanted}  # script -> the files it needs
    frontier = set(wanted)
    seen: set[str] = set()
    for _ in range(ROUNDS):
        found = repo.blob_ids(rev, frontier - seen)
        seen |= frontier
        if not found:
            break
        try:
            repo.prefetch([sha for _mode, sha in found.values()])
        except (CommandError, NotFound) as exc:
            why = exc.first_line() if isinstance(exc, CommandError) else str(exc)
            for script, files in closure.items():
                if files & set(found) and script not in needs.unavailable:
                    needs.unavailable[script] = f"{script} could not be fetched ({why})"
            found = {}
        needs.files.update({p: mode for p, (mode, _sha) in found.items()})
        mentioned: dict[str, set[str]] = {}
        for path in found:
            if path in wanted or path.endswith(CODE):  # what runs, not the data it reads
                text = (repo.show_file(rev, path) or b"").decode("utf-8", "replace")
                for q in _mentions(path, text) - seen:
                    mentioned.setdefault(q, set()).add(path)
        frontier = set(repo.blob_ids(rev, mentioned))  # only the mentions that are files at rev
        for q in frontier:
            for files in closure.values():
                if files & mentioned[q]:
                    files.add(q)
        if not frontier:
            break
    for script in sorted(wanted):
        if script not in needs.files and script not in needs.unavailable:
            needs.unavailable[script] = f"{script} is not at this ref"
    keep = set().union(*(closure[s] for s in wanted if s not in needs.unavailable))
    needs.files = {p: mode for p, mode in needs.files.items() if p in keep}
    return needs


def _mentions(path: str, text: str) -> set[str]:
    """Repository paths a script's text may read: file names as written and beside the script,
    and the modules it imports from beside it (our reading; only those at the ref are fetched)."""
    here = PurePosixPath(path).parent
    out: set[str] = set()
    for word in set(_FILE_WORD.findall(text)):
        out |= {word, (here / word).as_posix()}
    for mod in set(_IMPORT.findall(text)):
        out.add((here / (mod.replace(".", "/") + ".py")).as_posix())
    return {p for p in out if ".." not in PurePosixPath(p).parts}

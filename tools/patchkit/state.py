"""What patchkit remembers in a checkout (<git dir>/patchkit/<name>.json), written crash-safe.

A record is the worktree's own (`git rev-parse --git-path`): an apply's record says where
that worktree's HEAD was, and two worktrees of one repository replayed each other's (#24
item 4). A record about a branch alone, which every worktree sees, is shared (make pr's).

Written atomically (a temporary file in the same directory, fsync, rename), so a kill
leaves the old file or the new one, never half of one; read with one clear line when it
is damaged anyway (by hand, by a disk), never a traceback.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import atomic, schema as S
from .errors import BadInput, Conflict
from .git import Repo


def path(repo: Repo, name: str, shared: bool = False) -> Path:
    where = f"patchkit/{name}.json"
    return repo.common_path(where) if shared else repo.git_path(where)


def read(repo: Repo, name: str, schema: S.Check, shared: bool = False) -> dict | None:
    """The state called name, validated; None when there is none; Conflict when it is damaged."""
    f = path(repo, name, shared)
    if not f.exists():
        return None
    try:
        return S.validate(S.load_json(f), schema, str(f))
    except BadInput as exc:
        raise Conflict(f"{exc.message}; patchkit's record is damaged: remove it (rm '{f}'), "
                       f"check the checkout's branches by hand, then run again") from None


def write(repo: Repo, name: str, data: dict, shared: bool = False) -> None:
    f = path(repo, name, shared)
    f.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(f, json.dumps(data, indent=2, sort_keys=True) + "\n")


def remove(repo: Repo, name: str, shared: bool = False) -> None:
    path(repo, name, shared).unlink(missing_ok=True)


def names(repo: Repo) -> list[str]:
    """The names of this worktree's records."""
    folder = repo.git_path("patchkit")
    return sorted(f.stem for f in folder.glob("*.json")) if folder.is_dir() else []

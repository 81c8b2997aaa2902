"""What patchkit remembers in a checkout (.git/patchkit/<name>.json), written crash-safe.

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


def path(repo: Repo, name: str) -> Path:
    return repo.git_path(f"patchkit/{name}.json")


def read(repo: Repo, name: str, schema: S.Check) -> dict | None:
    """The state called name, validated; None when there is none; Conflict when it is damaged."""
    f = path(repo, name)
    if not f.exists():
        return None
    try:
        return S.validate(S.load_json(f), schema, str(f))
    except BadInput as exc:
        raise Conflict(f"{exc.message}; patchkit's record is damaged: remove it (rm '{f}'), "
                       f"check the checkout's branches by hand, then run again") from None


def write(repo: Repo, name: str, data: dict) -> None:
    f = path(repo, name)
    f.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(f, json.dumps(data, indent=2, sort_keys=True) + "\n")


def remove(repo: Repo, name: str) -> None:
    path(repo, name).unlink(missing_ok=True)

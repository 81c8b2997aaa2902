"""The one transaction mechanism: snapshot a checkout, restore it exactly on any failure.

Recorded: HEAD (symbolic or detached), every ref (stash included), the index file's bytes
and the list of registered worktrees. Tracked files come back from HEAD (the commands that
use this refuse a checkout with tracked changes), and untracked files are never touched:
git checkout refuses to overwrite them, so they survive a failure as they were.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import Conflict
from .git import Repo, Sha

log = logging.getLogger("patchkit.transaction")


@dataclass(frozen=True)
class Snapshot:
    symbolic_head: str | None
    head: Sha | None
    refs: dict[str, Sha]
    index: bytes | None
    worktrees: str


def snapshot(repo: Repo) -> Snapshot:
    index = repo.index_path()
    return Snapshot(
        symbolic_head=repo.symbolic_head(),
        head=repo.head(),
        refs=repo.refs(),
        index=index.read_bytes() if index.exists() else None,
        worktrees=repo.worktrees(),
    )


def restore(repo: Repo, snap: Snapshot) -> None:
    """Put refs, HEAD, index and tracked files back as they were in snap."""
    now = repo.refs()
    for ref, sha in now.items():
        if ref not in snap.refs:
            repo.delete_ref(ref, sha)
    for ref, sha in snap.refs.items():
        if now.get(ref) != sha:
            repo.set_ref(ref, sha, "patchkit: restore")
    if snap.symbolic_head:
        repo.set_symbolic_head(snap.symbolic_head)
    elif snap.head:
        repo.detach_head(snap.head)
    if snap.head:
        repo.reset_hard()
    index = repo.index_path()
    if snap.index is not None:
        index.write_bytes(snap.index)
    repo.worktree_prune()


def require_clean(repo: Repo) -> None:
    """Refuse a checkout with tracked changes: restoring it could not give them back."""
    dirty = repo.is_dirty()
    if dirty:
        more = " and more" if len(dirty) > 1 else ""
        raise Conflict(f"{repo.path} has uncommitted changes ({dirty[0]}{more}); commit or stash them, then run again")


@contextlib.contextmanager
def transaction(repo: Repo) -> Iterator[Snapshot]:
    """Run the body against a clean repo; on any exception restore the snapshot and re-raise."""
    require_clean(repo)
    snap = snapshot(repo)
    try:
        yield snap
    except BaseException:
        log.info("restoring %s after a failure", repo.path)
        restore(repo, snap)
        raise

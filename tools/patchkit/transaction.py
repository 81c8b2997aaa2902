"""The one transaction mechanism: snapshot a checkout, restore it exactly on any failure.

Recorded: HEAD (symbolic or detached), every ref (stash included), the index file's bytes
and the list of registered worktrees (a branch another worktree has checked out is never
moved back). Tracked files come back from HEAD (the commands that
use this refuse a checkout with tracked changes), and untracked files are never touched:
git checkout refuses to overwrite them, so they survive a failure as they were.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from . import atomic
from .errors import CommandError, Conflict
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


def restore(repo: Repo, snap: Snapshot, finish: list[str] | None = None, creates: Sequence[str] = ()) -> list[str]:
    """Put refs, HEAD, index and tracked files back as they were in snap.

    creates names the refs the failed body may have made; when git cannot list the refs,
    those are still looked up one by one and deleted, and every recorded ref is reset.

    Every step is tried even when an earlier one fails (a failing git must not leave the
    rest undone); the failures are returned, one line each, with the cause in the tool's own
    words and the path it is about. For each failed step, `finish` gets the git command that
    does it by hand, in order (#17 item 8: say what is left and how to finish).
    """
    failures: list[str] = []
    finish = finish if finish is not None else []
    git = repo.user_command

    def step(what: str, fix: str | None, fn, *args) -> bool:
        try:
            fn(*args)
            return True
        except Exception as exc:  # noqa: BLE001 - collected and reported, never swallowed
            failures.append(f"{what}: {_cause(exc)}")
            if fix and fix not in finish:
                finish.append(fix)
            return False

    now: dict[str, Sha] = {}
    moved_to: list[Sha | None] = []
    def find(ref: str) -> None:
        sha = repo.rev_parse(ref)
        if sha:
            now[ref] = sha

    if not step("read refs", None, lambda: (now.update(repo.refs()), moved_to.append(repo.head()))):
        # Without the list, what the body made is found by name; the recorded refs are all reset below.
        for ref in creates:
            if ref not in snap.refs:
                step(f"read {ref}", git("update-ref", "-d", ref), find, ref)
    # A branch another worktree has checked out is that worktree's: our commands never move it,
    # so a change to it is the user's work there, and putting it back would leave that
    # worktree's files behind its HEAD (#24 item 4).
    theirs = repo.checked_out_elsewhere(snap.worktrees)
    for ref, sha in now.items():
        if ref not in snap.refs and ref not in theirs:
            step(f"delete {ref}", git("update-ref", "-d", ref), repo.delete_ref, ref, sha)
    for ref, sha in snap.refs.items():
        if now.get(ref) != sha and ref not in theirs:
            step(f"reset {ref}", git("update-ref", ref, sha), repo.set_ref, ref, sha, "patchkit: restore")
    if snap.symbolic_head:
        step("restore HEAD", git("symbolic-ref", "HEAD", snap.symbolic_head), repo.set_symbolic_head,
             snap.symbolic_head)
    elif snap.head:
        step("restore HEAD", git("update-ref", "--no-deref", "HEAD", snap.head), repo.detach_head, snap.head)
    # The commands that use a transaction refuse a checkout with tracked changes, so the index
    # was HEAD's: reset --hard finishes both files and index by hand.
    if snap.head:
        step("restore files", git("reset", "-q", "--hard"), _restore_files, repo, snap,
             moved_to[0] if moved_to else None)
    if snap.index is not None:
        step("restore index", git("reset", "-q", "--hard"),
             lambda: atomic.write_bytes(repo.index_path(), snap.index))
    step("prune worktrees", git("worktree", "prune"), repo.worktree_prune)
    for f in failures:  # debug: the one line on stderr already says them (logging's fallback
        log.debug("restoring %s: %s", repo.path, f)  # printed each warning as a line of its own)
    return failures


def _restore_files(repo: Repo, snap: Snapshot, moved_to: Sha | None) -> None:
    """Tracked files back to HEAD, even when a file could never be written (#17 item 7).

    reset --hard against the index the failed step left wants to rewrite a file that a
    checkout could not write (chattr +i), and fails on it. Then: the old index back (its stat
    data matches the files that never changed, so git leaves them alone), reset --hard again,
    and the files the failed checkout created removed, as reset --hard would have (git
    checkout refuses to overwrite untracked files, so each of them is the checkout's).
    """
    try:
        repo.reset_hard()
        return
    except CommandError:
        if snap.index is None or not snap.head:
            raise
    atomic.write_bytes(repo.index_path(), snap.index)
    repo.reset_hard()
    if moved_to and moved_to != snap.head:
        for rel in repo.added_paths(snap.head, moved_to):
            path = repo.path / rel
            if path.is_symlink() or path.is_file():
                path.unlink()
                with contextlib.suppress(OSError):  # the folders it made, as far as they are empty
                    for parent in path.relative_to(repo.path).parents[:-1]:
                        (repo.path / parent).rmdir()


def _cause(exc: Exception) -> str:
    """The reason a restoring step failed, in the tool's own words, with the path it is about."""
    if isinstance(exc, CommandError):
        return exc.first_line()
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def require_clean(repo: Repo) -> None:
    """Refuse a checkout with tracked changes: restoring it could not give them back."""
    dirty = repo.is_dirty()
    if dirty:
        more = " and more" if len(dirty) > 1 else ""
        raise Conflict(f"{repo.path} has uncommitted changes ({dirty[0]}{more}); commit or stash them, then run again")


@contextlib.contextmanager
def transaction(repo: Repo, creates: Sequence[str] = ()) -> Iterator[Snapshot]:
    """Run the body against a clean repo; on any exception restore the snapshot and re-raise.

    creates: the refs the body may make (restore() finds them even when git cannot list refs)."""
    require_clean(repo)
    snap = snapshot(repo)
    try:
        yield snap
    except BaseException as exc:
        log.info("restoring %s after a failure", repo.path)
        finish: list[str] = []
        failures = restore(repo, snap, finish, creates)
        if finish:  # a step that failed and was not made up for by another (read refs: by name)
            exc.add_note(f"restoring {repo.path} failed at: " + "; ".join(failures)
                         + "; to finish the restore, run: " + " && ".join(finish))
        raise

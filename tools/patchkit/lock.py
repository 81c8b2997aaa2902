"""One writer per repository: an exclusive flock on <common git dir>/patchkit/lock, shared by
the repository's worktrees (they share its refs: an apply in one and an unapply in another
must not move the same branch at once).

Two applies on one checkout corrupted each other (the second one's rollback undid the
first one's success). Every command that writes takes this lock; a second run waits a
little (PATCHKIT_LOCK_WAIT seconds, default 5), then refuses with one line naming the
holder. flock is released by the kernel when the holder dies, even by SIGKILL, so a
crash never leaves a stale lock behind; the file itself stays, holding the last holder's
pid and command only while it is locked.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from .errors import Conflict

NAME = "patchkit/lock"


def wait_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("PATCHKIT_LOCK_WAIT", "5")))
    except ValueError:
        return 5.0


@contextlib.contextmanager
def hold(path: Path, command: str, what: str) -> Iterator[None]:
    """Hold the lock at path for the body; Conflict (exit 3) naming the holder if it stays taken.

    A holder may remove the lock file before it lets go (a clone's lock beside TRTLLM_SRC):
    whoever waited on the removed file finds it gone once it has the lock, and takes the
    lock again at path, so two runs never hold "the" lock at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_seconds()
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            _take(fd, deadline, what)
        except BaseException:
            os.close(fd)
            raise
        if _still_at(fd, path):
            break
        os.close(fd)  # its holder removed it: the lock is the file now at path
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} ({command})".encode("utf-8", "replace"), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _take(fd: int, deadline: float, what: str) -> None:
    """flock fd, waiting until deadline; Conflict naming the holder after that."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = os.pread(fd, 300, 0).decode("utf-8", "replace").strip() or "another patchkit"
                raise Conflict(f"{what} is busy: {holder} is working on it; wait for it to finish, "
                               f"then run again") from None
            time.sleep(0.05)


def _still_at(fd: int, path: Path) -> bool:
    """Whether the locked file is still the one at path (not removed or replaced meanwhile)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)

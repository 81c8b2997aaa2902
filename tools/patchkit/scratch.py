"""Temporary folders that a kill does not leave behind (#17 item 9).

A run's scratch space ($TMPDIR/patchkit-<kind>-*: temporary indexes, the delta's trees, an
export's patches) is removed when the step ends; a SIGKILL gives no chance for that. So each
folder holds an flock on a file inside it while in use, which the kernel releases when its
process dies, by any means; every command starts by sweeping the folders whose lock is free.
A live run's folders are never touched, whatever pid namespace it runs in.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

KINDS = ("index", "merge", "export", "archive", "delta", "upstreamfix", "build", "backport", "am", "edit", "bench",
         "benchgen")
HELD = ".patchkit-held"
GRACE = 60.0  # seconds: a folder without its lock file yet may be one that is being made


@contextlib.contextmanager
def folder(kind: str) -> Iterator[Path]:
    """A new folder $TMPDIR/patchkit-<kind>-XXXX, held for the body and removed after it."""
    assert kind in KINDS, kind
    path = Path(tempfile.mkdtemp(prefix=f"patchkit-{kind}-"))
    try:
        fd = os.open(path / HELD, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield path
        finally:
            os.close(fd)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def sweep() -> None:
    """Remove the scratch folders that killed runs left in $TMPDIR: those whose lock is free."""
    base = Path(tempfile.gettempdir())
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    uid = os.getuid()
    for entry in entries:
        name = entry.name
        if not name.startswith("patchkit-") or name.split("-")[1] not in KINDS:
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            _sweep_one(Path(entry.path))
        except OSError:
            continue  # gone meanwhile, or not ours to read: the next run tries again


def _sweep_one(path: Path) -> None:
    try:
        fd = os.open(path / HELD, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        if time.time() - path.lstat().st_mtime > GRACE:  # killed before it held the folder
            shutil.rmtree(path, ignore_errors=True)
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # a live run's
        shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(fd)

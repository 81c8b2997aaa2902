"""The suite's hygiene check: a run of the tests leaves the project's build/ and /tmp as it found them.

The tests write only under their temporary folders (DEVELOPERS.md); the user's build/ holds
their own reports, which make summary reads (#27 item 7: `make test` wrote build/lint/rc25.json
there, over whatever report was in its place). conftest.py takes a snapshot when the session
starts and compares when it ends; any difference fails the run, named path by path.

build/ is compared exactly: every entry's kind, size and modification time, directories
included (a file made and removed again still changes its folder).

Temporary files: the run has a root of its own ($TMPDIR/patchkit-tests-XXXX, made by
conftest.py before pytest picks its base), which every test's TMPDIR and the programs it
starts write under. After a green run removes pytest's base, the root must be empty: that is
what this run left, and only this run. /tmp itself is shared with every other program of the
machine (another user's pytest, another test run of this project, a user's own patchkit), so
there the check is only for what escaped the root: a scratch folder or crash log named as
patchkit names them (scratch.py, cli/__init__.py), that no running patchkit holds and that
stays for a few seconds (#31 item 12: counting /tmp/pytest-of-root, made by another user's
pytest meanwhile, failed a green run).
"""
from __future__ import annotations

import fcntl
import os
import tempfile
import time
from pathlib import Path
from stat import S_ISDIR, S_ISLNK

from helpers import ROOT

BUILD = ROOT / "build"
# The machine's shared temporary folder; a test of this check points it at a folder of its own.
TMP = Path(os.environ.get("PATCHKIT_HYGIENE_TMP") or "/tmp")
# How the programs the tests start name what they put in a temporary folder: patchkit-<kind>-*
# and patchkit-crash-*.log (scratch.py, cli/__init__.py), tmp* (Python's tempfile, pre-commit, pip's
# build backends), pytest-of-<user> (pytest's base; the session's own folder goes after a green run).
OURS = ("patchkit-", ".patchkit")
RUN_ROOT_PREFIX = "patchkit-tests-"  # the run's root (conftest.py): the runs' own, never counted in /tmp


def _tree(top: Path) -> dict[str, tuple]:
    """Every entry under top by its path relative to top: kind and mtime, a file's size too, a
    link's target (not followed). By os.scandir, one lstat an entry: a user's build/ holds
    checkouts and make bench's folders, tens of thousands of entries, walked twice a run."""
    out: dict[str, tuple] = {}
    try:
        st = os.lstat(top)
    except FileNotFoundError:
        return out
    out["."] = ("dir", st.st_mtime_ns)
    folders = [("", str(top))]
    while folders:
        rel, path = folders.pop()
        try:
            entries = os.scandir(path)
        except OSError:  # gone meanwhile, or unreadable: as os.walk, not an error
            continue
        with entries:
            for entry in entries:
                name = rel + entry.name
                try:
                    st = entry.stat(follow_symlinks=False)
                    if S_ISLNK(st.st_mode):
                        out[name] = ("link", os.readlink(entry.path))
                    elif S_ISDIR(st.st_mode):
                        out[name] = ("dir", st.st_mtime_ns)
                        folders.append((name + "/", entry.path))
                    else:
                        out[name] = ("file", st.st_size, st.st_mtime_ns)
                except FileNotFoundError:
                    continue
    return out


def _tmp_names() -> set[str]:
    base = TMP if TMP.is_dir() else Path(tempfile.gettempdir())
    try:
        return {e.name for e in os.scandir(base)}
    except OSError:
        return set()


def snapshot() -> dict:
    return {"build": _tree(BUILD), "tmp": _tmp_names()}


def _live(name: str) -> bool:
    """A scratch folder a running patchkit holds (scratch.py's lock): another program's, at work.
    When the check runs, every process of this session has ended."""
    from patchkit import scratch
    try:
        fd = os.open(TMP / name / scratch.HELD, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _left_in_tmp(before: set[str], after: set[str]) -> list[str]:
    new = {n for n in after - before if n.startswith(OURS) and not n.startswith(RUN_ROOT_PREFIX) and not _live(n)}
    for _ in range(3):  # what another program is still making or removing comes and goes
        if not new:
            break
        time.sleep(1)
        new &= _tmp_names()
    return sorted(new)


def compare(before: dict, after: dict, root: Path | None = None) -> dict[str, list[str]]:
    """What changed: build/ entries added, removed or changed; what is left in the run's root
    (after a green run removed pytest's base: root None skips it); new entries of ours in /tmp."""
    b, a = before["build"], after["build"]
    changes = {
        "added to build/": sorted(set(a) - set(b)),
        "removed from build/": sorted(set(b) - set(a)),
        "changed in build/": sorted(k for k in set(a) & set(b) if a[k] != b[k]),
        "left in the run's temporary root": sorted(k for k in _tree(root) if k != ".") if root else [],
        "left in /tmp": _left_in_tmp(before["tmp"], after["tmp"]),
    }
    return {k: v for k, v in changes.items() if v}


def describe(changes: dict[str, list[str]], root: Path | None = None, most: int = 20) -> list[str]:
    lines = []
    for what, paths in changes.items():
        where = BUILD if "build/" in what else root if "root" in what and root else TMP
        shown = [str(where / p) if p != "." else str(where) for p in paths[:most]]
        lines.append(f"{what} ({len(paths)}): " + ", ".join(shown) + (" ..." if len(paths) > most else ""))
    return lines

"""Every file patchkit writes: a temporary file beside it, fsynced, renamed into place.

A kill, a full disk or a failed command leaves the old file whole or the new one, never half
of one (issue #17 item 6: export on a full disk cut a patch to 4 KB and exited 3). A folder
of outputs (the PR files, the container context) is built beside its place and swapped in.
A ground-floor module: the standard library only.

Hand-written rather than a dependency: atomicwrites, the usual library, is archived by its
author; this is the state.py helper it grew out of, kept in one place.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

TMP_MARK = ".patchkit-tmp"  # in every temporary name, so a sweep can tell ours


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _named(exc: OSError, path: Path) -> OSError:
    """exc with the path we were writing, when the OS gave none (ENOSPC from a write has none)."""
    if exc.filename is None:
        return type(exc)(exc.errno, exc.strerror, str(path))
    return exc


def write_bytes(path: Path | str, data: bytes) -> None:
    """data at path, or the old file untouched: temporary file beside it, fsync, rename.

    The new file gets the old one's mode, else the mode open() would give (mkstemp's is 0600).
    A symlink at path is followed: its target is replaced, the link stays.
    """
    write_all({Path(path): data})


def write_all(files: dict[Path, bytes | None]) -> None:
    """Several files at once (None: remove it): every new one is written and synced beside its
    place first, and only then renamed in, so a full disk or a failed write changes none."""
    staged: list[tuple[Path, Path | None]] = []
    try:
        for path, data in files.items():
            path = Path(os.path.realpath(path))
            if data is None:
                staged.append((path, None))
                continue
            tmp = _stage(path, data)
            staged.append((path, tmp))
        for path, tmp in staged:
            if tmp is None:
                path.unlink(missing_ok=True)
            else:
                try:
                    os.replace(tmp, path)
                except OSError as exc:
                    raise OSError(exc.errno, exc.strerror, str(path)) from None
        for folder in {path.parent for path, _ in staged}:
            _sync_dir(folder)
    finally:
        for _path, tmp in staged:
            if tmp is not None:
                _discard(tmp)


def _stage(path: Path, data: bytes) -> Path:
    """data in a synced temporary file beside path, with the mode path has (or would get)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_MARK, dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
        return tmp
    except OSError as exc:
        _discard(tmp)
        raise _named(exc, path) from None
    except BaseException:
        _discard(tmp)
        raise


def write_text(path: Path | str, text: str, encoding: str = "utf-8") -> None:
    """text at path, atomically (see write_bytes)."""
    write_bytes(path, text.encode(encoding))


@contextlib.contextmanager
def replace_dir(dest: Path) -> Iterator[Path]:
    """A fresh folder to fill; on success it takes dest's place, on any failure dest stays as it was.

    Where the kernel can (Linux's renameat2 RENAME_EXCHANGE), the two folders swap places in
    one step: dest is never missing. Elsewhere the old folder is renamed aside first and
    removed only once the new one is in place; a kill between the two renames leaves both
    beside dest (`.<name>.*.patchkit-tmp`), named.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{dest.name}.new.", suffix=TMP_MARK, dir=dest.parent))
    try:
        new.chmod(0o777 & ~_umask())
        yield new
        if dest.is_dir() and not dest.is_symlink() and _exchange(new, dest):
            shutil.rmtree(new, ignore_errors=True)  # it holds the old folder now
            _sync_dir(dest.parent)
            return
        old = None
        if dest.exists() or dest.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old.", suffix=TMP_MARK, dir=dest.parent))
            os.rename(dest, old / "x")
        try:
            os.rename(new, dest)
        except BaseException:
            if old is not None:
                os.rename(old / "x", dest)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        _sync_dir(dest.parent)
    except OSError as exc:
        shutil.rmtree(new, ignore_errors=True)
        raise _named(exc, dest) from None
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise


def remove_dir(dest: Path) -> None:
    """Remove a folder of outputs as one step: renamed aside first (a kill leaves it whole, or
    gone from its place and named as ours beside it), then deleted."""
    dest = Path(dest)
    aside = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old.", suffix=TMP_MARK, dir=dest.parent))
    try:
        os.rename(dest, aside / "x")
    except OSError as exc:
        shutil.rmtree(aside, ignore_errors=True)
        raise _named(exc, dest) from None
    _sync_dir(dest.parent)
    shutil.rmtree(aside, ignore_errors=True)


def fill(folder: Path, files: dict[str, bytes]) -> None:
    """Files written into a folder being made (replace_dir's), each synced before it is swapped in."""
    for name, data in files.items():
        with open(folder / name, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step (renameat2 RENAME_EXCHANGE); False where the kernel, the
    C library or the filesystem cannot, and nothing moved."""
    import ctypes  # here: only a swap of folders needs it, and every command imports this module

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0


def _sync_dir(folder: Path) -> None:
    """Make the rename itself durable; a filesystem that cannot sync a folder is no error."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _discard(p: Path) -> None:
    try:
        p.unlink()
    except OSError:
        pass

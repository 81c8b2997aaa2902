"""Open the upstream checkout a command works on, or obtain one by partial clone."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from . import fresh, lock
from .errors import BadInput, Hint, NotFound
from .git import Repo, Sha, partial_clone, resolve_target_ref
from .model import PatchSet


def obtain(ps: PatchSet, src: Path, url: str | None, hold: contextlib.ExitStack | None = None,
           command: str = "") -> tuple[Repo, bool]:
    """The checkout at src; when src does not exist, a shallow partial sparse clone of the
    set's ref (one commit, its trees, the blobs of the set's paths).

    Returns (repo, cloned). With hold, the checkout's lock is taken and kept in hold.
    The clone is made in a temporary directory beside src and renamed to src only when it
    is complete, so a kill midway never leaves a half-made checkout at src (one that the
    next run would refuse as dirty); a leftover temporary directory is removed by the next
    clone to the same place.
    """
    if src.exists() or src.is_symlink():
        repo = Repo.open(src)
        if hold is not None:
            hold.enter_context(lock.hold(repo.common_path(lock.NAME), command, str(src)))
        _fetch_missing_ref(repo, ps)
        return repo, False
    made = make_parents(src)
    try:
        repo, cloned = _clone(ps, src, url, hold, command)
    except BaseException:
        _remove_made(made, src)
        raise
    _MADE[src] = made
    return repo, cloned


# The folders obtain made for a clone, by checkout: a command that fails after cloning
# discards the clone with them (discard_clone), so that nothing is left changed.
_MADE: dict[Path, list[Path]] = {}


def discard_clone(src: Path) -> None:
    """Remove a checkout this run cloned, and the folders made for it."""
    shutil.rmtree(src, ignore_errors=True)
    _remove_made(_MADE.pop(src, []), src)


@contextlib.contextmanager
def held(ps: PatchSet, src: Path, url: str | None, command: str) -> Iterator[tuple[Repo, bool]]:
    """obtain() for a command that writes: the checkout's lock held for the body, and a clone
    this run made discarded again when the body fails (a failure changes nothing)."""
    with contextlib.ExitStack() as hold:
        repo, cloned = obtain(ps, src, url, hold=hold, command=command)
        try:
            yield repo, cloned
        except BaseException:
            if cloned:
                discard_clone(src)
            raise


def make_parents(src: Path, setting: str = "src") -> list[Path]:
    """The missing folders above src, made (a fresh clone of this project has no build/ for
    the default build/trtllm-<target>); those this run made, deepest first (remove_made
    takes them away again). setting: the one a bad parent is said against."""
    made, missing = [], [p for p in src.parents if not p.exists()]
    nearest = src.parents[len(missing)] if len(missing) < len(src.parents) else None
    if nearest is not None and not nearest.is_dir():
        raise BadInput(f"{nearest} is not a folder", hint=Hint.choose(setting))
    for p in reversed(missing):
        try:
            p.mkdir()
            made.insert(0, p)
        except FileExistsError:
            pass
        except OSError as e:
            raise BadInput(f"cannot create {p}: {e.strerror}", hint=Hint.choose(setting)) from None
    return made


def _remove_made(made: list[Path], src: Path) -> None:
    """A failed clone changes nothing: the folders made for it go, with the clone's lock file."""
    if made and made[0] == src.parent:
        with contextlib.suppress(OSError):
            (src.parent / _clone_lock_name(src)).unlink()
    for d in made:
        with contextlib.suppress(OSError):
            d.rmdir()


def _clone_lock_name(src: Path) -> str:
    return f".{src.name}.patchkit-clone.lock"


def _drop_clone_lock(src: Path) -> None:
    """The clone has landed: its lock file goes (#17 item 9), removed while still held. A run
    waiting on it, or one that makes a new one, then finds src and only opens it."""
    with contextlib.suppress(FileNotFoundError):
        (src.parent / _clone_lock_name(src)).unlink()


def _clone(ps: PatchSet, src: Path, url: str | None, hold: contextlib.ExitStack | None,
           command: str) -> tuple[Repo, bool]:
    with contextlib.ExitStack() as cloning:
        # Two clones to one place: the second waits, then finds the first one's checkout.
        cloning.enter_context(lock.hold(src.parent / _clone_lock_name(src), command, str(src)))
        if src.exists():
            _drop_clone_lock(src)
            return obtain(ps, src, url, hold, command)
        for stale in src.parent.glob(f".{src.name}.patchkit-partial-*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{src.name}.patchkit-partial-", dir=src.parent))
        try:
            repo = partial_clone(url or ps.upstream.url, tmp / "clone", ps.upstream.ref, ps.sparse_paths)
            if hold is not None:  # the lock file moves with the rename: nobody can slip in between
                hold.enter_context(lock.hold(repo.common_path(lock.NAME), command, str(src)))
            repo.close()
            os.rename(tmp / "clone", src)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            # Landed or refused, the lock file goes while still held (a refused clone into a
            # folder that was already there left it behind): see lock.hold for who waited on it.
            _drop_clone_lock(src)
    landed = Repo(src)
    try:  # a git that fails now fails the clone: it goes again, as one that never landed
        local, sha = resolve_target_ref(landed, ps.upstream.ref)
        fresh.record(landed, local, fresh.CLONED, sha)
    except BaseException:
        landed.close()
        shutil.rmtree(src, ignore_errors=True)
        raise
    return landed, True


def _fetch_missing_ref(repo: Repo, ps: PatchSet) -> None:
    """A later command on a partial clone reuses it: only a ref it lacks is fetched (one
    commit of it, with the clone's filter), and the sparse checkout widened by the set's
    paths it lacks (only in a clean checkout: the files come from HEAD, as a clone would
    have put them). A full checkout is the user's to fetch into."""
    if not repo.is_partial():
        return
    try:
        resolve_target_ref(repo, ps.upstream.ref)
    except NotFound:
        if repo.fetch_ref(ps.upstream.ref):
            fresh.record(repo, resolve_target_ref(repo, ps.upstream.ref)[0])
    patterns = repo.sparse_patterns()
    wanted = [p for p in ps.sparse_paths if f"/{p}" not in patterns]
    if patterns and wanted and not repo.is_dirty():
        repo.sparse_checkout_add(wanted)


def base_of(repo: Repo, ps: PatchSet, url: str | None = None) -> tuple[str, Sha]:
    """The ref the set targets, as found in this checkout, and its commit (NotFound says how to
    fetch it: from origin, else from url, else from the set's upstream)."""
    return resolve_target_ref(repo, ps.upstream.ref, url or ps.upstream.url)


def refuse_symlinked_paths(repo: Repo, base: Sha, ps: PatchSet) -> None:
    """A patch must not write through a symlink that the tree has on its path (every prefix of
    every touched path, looked up in one ls-tree)."""
    prefixes = {path: ["/".join(PurePosixPath(path).parts[:i]) for i in range(1, len(PurePosixPath(path).parts) + 1)]
                for path in ps.touched_paths}
    modes = repo.modes(base, {p for ps_ in prefixes.values() for p in ps_})
    for path, ways in prefixes.items():
        link = next((p for p in ways if modes.get(p) == "120000"), None)
        if link is not None:
            raise BadInput(f"{path}: {link} is a symlink in {base[:12]}; refusing to write through it")

"""Open the upstream checkout a command works on, or obtain one by partial clone."""
from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

from .errors import BadInput, Hint, NotFound
from .git import Repo, Sha, partial_clone, resolve_target_ref
from .model import PatchSet


def obtain(ps: PatchSet, src: Path, url: str | None) -> tuple[Repo, bool]:
    """The checkout at src; when src does not exist, a shallow partial sparse clone of the
    set's ref (one commit, its trees, the blobs of the set's paths).

    Returns (repo, cloned). A failed clone leaves nothing behind.
    """
    if src.exists():
        repo = Repo.open(src)
        _fetch_missing_ref(repo, ps)
        return repo, False
    if not src.parent.is_dir():
        raise BadInput(f"{src.parent} does not exist", hint=Hint.choose("src", also=f"or create {src.parent}"))
    try:
        return partial_clone(url or ps.upstream.url, src, ps.upstream.ref, ps.sparse_paths), True
    except BaseException:
        shutil.rmtree(src, ignore_errors=True)
        raise


def _fetch_missing_ref(repo: Repo, ps: PatchSet) -> None:
    """A later command on a partial clone reuses it: only a ref it lacks is fetched (one
    commit of it, with the clone's filter). A full checkout is the user's to fetch into."""
    try:
        resolve_target_ref(repo, ps.upstream.ref)
    except NotFound:
        if repo.is_partial():
            repo.fetch_ref(ps.upstream.ref)


def base_of(repo: Repo, ps: PatchSet) -> tuple[str, Sha]:
    """The ref the set targets, as found in this checkout, and its commit."""
    return resolve_target_ref(repo, ps.upstream.ref)


def refuse_symlinked_paths(repo: Repo, base: Sha, ps: PatchSet) -> None:
    """A patch must not write through a symlink that the tree has on its path."""
    for path in ps.touched_paths:
        parts = PurePosixPath(path).parts
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            for mode, _typ, name in repo.ls_tree(base, prefix, recursive=False):
                if name == prefix and mode == "120000":
                    raise BadInput(f"{path}: {prefix} is a symlink in {base[:12]}; refusing to write through it")

"""Clones: a full one, and the partial, sparse, one-commit clone apply makes (transfer)."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .. import progress
from ..errors import NotFound
from .repo import Repo
from .runner import GitError, GitRunner
from .transfer import LOCAL_UPLOAD_PACK, _transfer


def _as_url(url: str) -> tuple[str, bool]:
    """(url, local): a local path becomes a file:// URL, so that git transfers it as it would
    from a server (a plain path is hard-linked whole, ignoring --depth and --filter)."""
    if "://" not in url and Path(url).exists():
        return Path(url).resolve().as_uri(), True
    return url, url.startswith("file://")


def clone(url: str, dest: Path) -> Repo:
    """A full clone (every object copied, even from a local path)."""
    _transfer(GitRunner(None), ["clone", "--no-local", url, str(dest)], f"cloning {url} (full)", remote=url)
    return Repo(dest)


def partial_clone(url: str, dest: Path, ref: str, sparse_paths: Iterable[str], *, depth: int | None = 1,
                  filter: str = "blob:none") -> Repo:
    """One commit of ref (depth 1) with its trees, and only the blobs of sparse_paths.

    History comes later, on demand, and only as much as needed (Repo.fetch_commit, deepen).
    Measured on make bench's generated upstream (15,000 files, 5,000 commits): blob:none at
    depth 1 receives one commit's trees and nothing else, the limit for a checkout; tree:0
    receives no trees at first, but git's lazy fetch of the first missing tree asks for it
    with blob:none, i.e. for all trees below it, one round trip per tree, so it ends with the
    same trees, more slowly. depth=None, filter='blob:none' is the old clone with the ref's
    whole history (make bench compares them).

    A local upstream (a path or file://) is served by an upload-pack that reads only that
    repository's own config, which rarely allows filters: git then silently sends every
    blob. So for local URLs we name an upload-pack that allows them, for the clone and for
    the lazy fetches after it, as GitHub does for everyone.
    """
    url, local = _as_url(url)
    # The clone's config is written as git clones (--config), not by a git config each after it:
    # the upload-pack for the lazy fetches of a local upstream; and index version 4, as the
    # index lists every path of the commit (skip-worktree outside the sparse paths), so it is
    # most of what the clone holds on disk, and version 4 prefix-compresses its paths (-40 %).
    pack = ["--upload-pack", LOCAL_UPLOAD_PACK, "--config", f"remote.origin.uploadpack={LOCAL_UPLOAD_PACK}"] \
        if local else []
    shallow = ["--depth", str(depth)] if depth else []
    try:
        _transfer(GitRunner(None), ["clone", *pack, "--config", "index.version=4", f"--filter={filter}", *shallow,
                                    "--no-checkout", "--single-branch", "--branch", ref, "--", url, str(dest)],
                  f"cloning {ref} from {url}", remote=url)
    except GitError as exc:
        raise NotFound(f"cannot clone {ref} from {url}: {exc.first_line()}") from exc
    repo = Repo(dest)
    repo.sparse_checkout(sparse_paths)
    with progress.step(f"checking out {ref} (only the set's paths)"):
        repo.checkout(ref)
    return repo

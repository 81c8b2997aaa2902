"""Raw git, as a person types it: the command lines make bench sets our commands against.

They are git command lines, so they live in the facade with every other; unlike the rest of
it they are not run through the runner's environment policy, but as typed (make bench runs
them with proc, in the environment it gives the command they are measured against).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def check_series(ref: str, patches: Sequence[str]) -> list[list[str]]:
    """Whether a series applies to ref, changing nothing: ref read into an index (the caller
    names its file, GIT_INDEX_FILE), then one apply --check of the whole series there."""
    return [["git", "read-tree", ref], ["git", "apply", "--cached", "--check", *patches]]


def apply_by_hand(url: str, dest: Path, ref: str, paths: Sequence[str], branch: str,
                  patches: Sequence[str]) -> list[list[str]]:
    """A cold apply by hand: ref's one commit cloned without blobs or a checkout, only paths
    checked out (non-cone patterns anchored at the top), the branch made there, the series
    applied by git am."""
    return [["git", "clone", "-q", "--depth", "1", "--filter=blob:none", "--no-checkout", "--branch", ref, url,
             str(dest)],
            ["git", "-C", str(dest), "sparse-checkout", "set", "--no-cone", *(f"/{p}" for p in paths)],
            ["git", "-C", str(dest), "checkout", "-q", "-b", branch],
            ["git", "-C", str(dest), "am", "-q", *patches]]

"""The delta's two trees: unpatched (upstream + the test-only patches) and patched (the series).

Both come from the one series path (series.apply_series) into throwaway commits, and are
written out with git archive into a scratch directory: the user's checkout is never touched,
and in a sparse or blobless clone only the blobs in the archived paths are read.
"""
from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path

from .. import scratch, series
from ..errors import BadInput
from ..git import Repo, Sha
from ..model import PatchSet


@dataclass(frozen=True)
class Trees:
    base: Sha
    unpatched: Path
    patched: Path


def build(repo: Repo, base: Sha, ps: PatchSet, workdir: Path, paths: list[str] | None = None) -> Trees:
    """Write both trees under workdir; paths limits what is archived (default: everything)."""
    out = {}
    for name, patches in (("unpatched", [p for p in ps.patches if p.tests_only]), ("patched", list(ps.patches))):
        res = series.apply_series(repo, base, patches, committer_date=series.THROWAWAY_DATE)
        res.raise_on_conflict(f" to {base[:12]} for the {name} tree")
        dest = workdir / name
        dest.mkdir(parents=True)
        archive(repo, res.tip, dest, paths)
        out[name] = dest
    return Trees(base, out["unpatched"], out["patched"])


def archive(repo: Repo, commit: str, dest: Path, paths: list[str] | None) -> None:
    with scratch.folder("archive") as tmp:
        tar = Path(tmp) / "tree.tar"
        repo.archive(commit, tar, paths or [])
        with tarfile.open(tar) as tf:
            try:
                tf.extractall(dest, filter="data")
            except tarfile.FilterError as exc:  # e.g. a link to an absolute path in upstream's tree
                raise BadInput(f"{commit[:12]}: {exc}; refusing to lay it out for the delta's tests") from None

"""The delta's two trees: unpatched (upstream + the test-only patches) and patched (the series).

Both come from the one series path (series.apply_series) into throwaway commits, and are
written out with git archive into a scratch directory: the user's checkout is never touched,
and in a sparse or blobless clone only the blobs in the archived paths are read. Also which
paths a delta archives and which modules it loads from source (upstreamfix measures the same).
"""
from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

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


def existing_paths(repo: Repo, base: str, ps: PatchSet, paths: list[str]) -> list[str]:
    """The paths to archive: the given ones and the pytest configuration on their way, as far
    as they exist after the series (git archive refuses a pathspec that matches nothing)."""
    wanted = set(paths)
    for t in paths:  # the conftest.py and pytest.ini that pytest would read on the way to a test
        parts = PurePosixPath(t).parts
        wanted |= {"/".join(parts[:i] + (f,)) for i in range(len(parts)) for f in ("conftest.py", "pytest.ini")}
    at_base = {name for _m, _t, name in repo.ls_tree(base, "", recursive=True) if name in wanted}
    added = {fc.path for p in ps.patches for fc in p.files if fc.added}
    return sorted(at_base | (added & set(paths)))


def source_modules(ps: PatchSet) -> list[str]:
    """The dotted modules of the package that the set's non-test patches change."""
    mods = []
    for patch in ps.patches:
        if patch.tests_only:
            continue
        for path in patch.paths:
            p = PurePosixPath(path)
            if p.parts[0] == ps.container.package and p.suffix == ".py":
                mods.append(".".join(p.with_suffix("").parts))
    return sorted(set(mods))

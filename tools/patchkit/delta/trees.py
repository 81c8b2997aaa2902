"""The delta's trees: the whole stack (patched), and for each fix the stack without it (unpatched:
the rest of the stack and the fix's own test files, stack.without).

All come from the one series path (series.apply_series) into throwaway commits, and are
written out with git archive into a scratch directory: the user's checkout is never touched,
and in a sparse or blobless clone only the blobs in the archived paths are read. Also which
paths a delta archives and which modules it loads from source (upstreamfix measures the same).
"""
from __future__ import annotations

import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .. import pyimports, scratch, series, stack
from ..errors import BadInput
from ..git import Repo, Sha
from ..model import Fix, PatchSet, is_test_path


@dataclass(frozen=True)
class Trees:
    base: Sha
    patched: Path  # the whole stack
    without: dict[str, Path]  # fix id -> the stack without that fix
    left_out: dict[str, list[str]]  # fix id -> the fixes above it that do not apply without it (cut too)


def build(repo: Repo, base: Sha, ps: PatchSet, fixes: Sequence[Fix], workdir: Path,
          paths: list[str] | None = None) -> Trees:
    """Write the stack's tree and each fix's tree without it under workdir; paths limits what
    is archived (default: everything). A fix above it whose patch does not apply without it
    (made on its lines) is cut to its test files there too, and named in left_out."""
    stacked = ps.stacked
    without, left_out = {}, {}
    for i, fix in enumerate(fixes):
        name = f"unpatched tree of fix {fix.id}" if stacked else "unpatched tree"
        res, left_out[fix.id] = _without(repo, base, ps, fix, name)
        without[fix.id] = _write(repo, res, workdir / f"without-{i}", paths)
    res = series.apply_series(repo, base, list(ps.patches), committer_date=series.THROWAWAY_DATE)
    res.raise_on_conflict(f" to {base[:12]} for the patched tree")
    return Trees(base, _write(repo, res, workdir / "patched", paths), without, left_out)


def _without(repo: Repo, base: Sha, ps: PatchSet, fix: Fix, name: str) -> tuple[series.SeriesResult, list[str]]:
    """The series of the tree without fix, and the fixes above it cut as they depend on it."""
    order = [f.id for f in ps.fixes]
    cut: list[str] = []
    while True:
        res = series.apply_series(repo, base, stack.without(stack.cut(ps, cut), fix),
                                  committer_date=series.THROWAWAY_DATE)
        bad = next((o for o in res.outcomes if o.status == series.CONFLICT), None)
        if bad is None:
            return res, cut
        owner = stack.owner(ps, bad.patch).id
        if order.index(owner) <= order.index(fix.id) or owner in cut:  # not a fix made on this one's lines
            res.raise_on_conflict(f" to {base[:12]} for the {name}")
        cut.append(owner)


def _write(repo: Repo, res: series.SeriesResult, dest: Path, paths: list[str] | None) -> Path:
    dest.mkdir(parents=True)
    archive(repo, res.tip, dest, paths)
    return dest


def archive(repo: Repo, commit: str, dest: Path, paths: list[str] | None) -> None:
    with scratch.folder("archive") as tmp:
        tar = Path(tmp) / "tree.tar"
        repo.archive(commit, tar, paths or [])
        with tarfile.open(tar) as tf:
            try:
                tf.extractall(dest, filter="data")
            except tarfile.FilterError as exc:  # e.g. a link to an absolute path in upstream's tree
                raise BadInput(f"{commit[:12]}: {exc}; refusing to lay it out for the delta's tests") from None


def existing_paths(repo: Repo, base: str, ps: PatchSet, paths: list[str], *, conftests: bool = False) -> list[str]:
    """The paths to archive: the given ones, the pytest configuration on their way, and the
    modules of the tree that the test files (and with conftests, the conftest.py files: pytest
    imports them in container mode; source mode runs --noconftest) import, followed through
    what those import, as far as they exist after the series (git archive refuses a pathspec
    that matches nothing)."""
    wanted = set(paths)
    for t in paths:  # the conftest.py and pytest.ini that pytest would read on the way to a test
        parts = PurePosixPath(t).parts
        wanted |= {"/".join(parts[:i] + (f,)) for i in range(len(parts)) for f in ("conftest.py", "pytest.ini")}
    # A file a patch adds: its text is the patch's (its one hunk's lines after the change).
    added = {fc.path: "".join(line for h in fc.hunks for line in h.postimage)
             for p in ps.patches for fc in p.files if fc.added}
    listed = {name for _m, typ, name in repo.ls_tree(base, "", recursive=True) if typ == "blob"}
    tree = pyimports.Tree(listed | set(added))
    at_base = wanted & listed
    # #31 item 15: upstream's tests/unittest/conftest.py puts tests/ on sys.path and imports
    # integration.defs.test_list_parser; the tree held only the tests and their conftest.py, so
    # collection failed in a release image (which installs no tests). Modules are looked for
    # under the tests' folders, never at the tree's top (the package there is the image's).
    def read(path: str) -> str:
        return added[path] if path in added else (repo.show_file(base, path) or b"").decode("utf-8", "replace")

    given = set(paths)
    importers = [p for p in sorted(at_base | (set(added) & given)) if (p in given and is_test_path(p))
                 or (conftests and PurePosixPath(p).name == "conftest.py")]
    imported = pyimports.closure(tree, importers, read)
    return sorted(at_base | (imported & listed) | (set(added) & (given | imported)))


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

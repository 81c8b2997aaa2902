"""The persistent build tree: one per set and devel image, kept between builds.

    <cache>/trees/<set>-<devel key>/
        src/          the stack's sources, as the stack's commit has them; the build writes its
                      own outputs inside (cpp/build, build/, tensorrt_llm/libs), as upstream's does
        state.json    which blob each source file holds, and the configuration CMake last had
        building      there while a build runs (its start, and the session it runs in); found
                      at the next start, it means that build was killed: what still runs of
                      it is stopped
        build.log     the last build's whole output
    <cache>/ccache/<devel key>/   the compiler cache of that devel image (shared by every set)

Only the sources that differ from the last build are written (temporary file beside, renamed
in), so their times change and nothing else's: a second build after a one-line change
recompiles that file and relinks. A build killed midway may leave an object half-written with
a newer time than its source, which make or ninja would take for done: the objects written
since that build started are removed first (ccache gives them back at once).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import atomic, proc, progress
from ..errors import BadInput
from ..git import Repo, Sha

MARKER = "building"
LOG = "build.log"  # the last build's whole output
OBJECTS = (".o", ".obj", ".so", ".a", ".whl", ".part")


@dataclass
class Tree:
    root: Path  # <cache>/trees/<set>-<key>
    ccache: Path
    state: dict = field(default_factory=dict)

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def configured(self) -> dict:
        return self.state.get("configured", {})

    def save(self) -> None:
        atomic.write_text(self.root / "state.json", json.dumps(self.state, indent=1, sort_keys=True) + "\n")


def open_tree(cache: Path, target: str, key: str) -> Tree:
    """The tree of target built with the devel image key (made when missing); a killed build's
    half-written objects are removed from it first."""
    root = cache / "trees" / f"{target}-{key}"
    ccache = cache / "ccache" / key
    for d in (root / "src", ccache):
        d.mkdir(parents=True, exist_ok=True)
    tree = Tree(root, ccache, read_state(root))
    marker = root / MARKER
    if marker.exists():
        session = next((int(w[1]) for w in map(str.split, marker.read_text().splitlines())
                        if len(w) == 2 and w[0] == "session" and w[1].isdigit()), None)
        stopped = proc.stop_session(session, root) if session is not None else 0
        removed = _since(tree.src, marker.stat().st_mtime)
        still = f"{stopped} process(es) of it still running stopped, " if stopped else ""
        progress.say(f"the last build in {root} was killed: {still}{removed} object(s) it was writing removed")
        marker.unlink()
    return tree


def read_state(root: Path) -> dict:
    """The tree's state.json at root ({} when there is none, or it cannot be read)."""
    try:
        state = json.loads((root / "state.json").read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _since(folder: Path, start: float) -> int:
    """Remove the build outputs written at start or later (their sources are older)."""
    n = 0
    for path in folder.rglob("*"):
        if path.suffix in OBJECTS and path.is_file() and not path.is_symlink() and path.stat().st_mtime >= start - 1:
            path.unlink()
            n += 1
    return n


@dataclass(frozen=True)
class Synced:
    written: tuple[str, ...]
    removed: tuple[str, ...]


def sync(repo: Repo, commit: Sha, tree: Tree) -> Synced:
    """src/ made to hold commit's files: those whose blob differs from the last sync written,
    those commit no longer has removed; the build's own outputs are left alone."""
    files = repo.tree_files(commit)
    had: dict[str, str] = tree.state.get("files", {})
    todo = {p: e for p, e in files.items() if e[0] != "160000" and (had.get(p) != e[1] or not _present(tree.src, p))}
    repo.prefetch([sha for _mode, sha in todo.values()])  # a partial clone: one fetch for all of them
    for path, (mode, sha) in sorted(todo.items()):
        _write(tree.src, path, mode, repo.read_blob(sha))
    gone = sorted(p for p in had if p not in files)
    for path in gone:
        target = tree.src / path
        if target.is_symlink() or target.is_file():
            target.unlink()
    tree.state["files"] = {p: e[1] for p, e in files.items() if e[0] != "160000"}
    tree.save()
    return Synced(tuple(sorted(todo)), tuple(gone))


def _present(src: Path, path: str) -> bool:
    return (src / path).is_symlink() or (src / path).exists()


def _write(src: Path, path: str, mode: str, data: bytes) -> None:
    parts = PurePosixPath(path).parts
    if ".." in parts or PurePosixPath(path).is_absolute():
        raise BadInput(f"{path}: a path out of the tree; refusing to write it")
    target = src / path
    parent = target.parent
    if not parent.resolve().is_relative_to(src.resolve()):  # through a link the tree itself has
        raise BadInput(f"{path}: its folder is a link out of the tree; refusing to write through it")
    parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():
        if target.is_dir() and not target.is_symlink():
            raise BadInput(f"{path}: a folder in the build tree where the stack has a file")
        target.unlink()
    if mode == "120000":
        target.symlink_to(data.decode("utf-8", "surrogateescape"))
        return
    atomic.write_bytes(target, data)
    if mode == "100755":
        target.chmod(0o755)


def begin(tree: Tree) -> None:
    """A build starts: its marker, dated now (objects written from now on are this build's)."""
    marker = tree.root / MARKER
    marker.write_text(f"{os.getpid()} {time.time()}\n")


def running(tree: Tree, session: int) -> None:
    """The build's session, added to its marker: killed with us (SIGKILL: we cannot stop it),
    an unfenced build goes on writing into the tree, and the next run stops it by this first."""
    marker = tree.root / MARKER
    with open(marker, "a", encoding="utf-8") as fh:
        fh.write(f"session {session}\n")


def end(tree: Tree) -> None:
    (tree.root / MARKER).unlink(missing_ok=True)

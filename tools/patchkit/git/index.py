"""The private index trees are built in (GIT_INDEX_FILE), never a user's index: slim.

A full index of TensorRT-LLM holds ~15,000 entries; every `git apply --cached` reads and
rewrites all of it and drops its cached trees, so the `git write-tree` after it hashes every
folder again (about 45 ms a patch, 1.4 s for a 30-patch stack; #26's bench). This index holds
only the paths it is asked about: before git applies a diff here, every path its headers
name (diff_paths; a path more is harmless, it is only read from the base) and the files or
links above them are loaded from the base tree; reading, adding or removing a file loads it
first. git applies to the
few entries with exactly the checks it makes on the full index (a file that already exists,
a preimage that differs, a path beyond a symlink). write_tree lays those paths over the base
tree: only the folders above them are rewritten, as git's own tree objects (entries sorted as
git sorts them, folders as name + '/'), stored by gitdb in this process like write_object.

A path the index has loaded is in `_known`, with its entry in the last tree written: its
state here (an entry, or none: removed) is its state in the tree being built; every other
path is as the base tree has it. Each write_tree lays only what changed since the last one
over that tree, so a series of commits rewrites each commit's own folders, not the series'.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from gitdb.util import hex_to_bin

from .runner import Result, Sha

TREE = b"40000"
Entry = tuple[bytes, str]  # (mode, object id) as a tree holds them


class Index:
    """A private, slim index over a base tree (see the module's docstring)."""

    def __init__(self, repo: Any, path: Path) -> None:
        """repo: the Repo whose objects room (objects.py) made this index (not imported: a circle)."""
        self.repo = repo
        self.path = path
        self._env = {"GIT_INDEX_FILE": str(path)}
        self._tree: Sha | None = None  # the base, then the last tree written
        self._known: dict[str, Entry | None] = {}  # each loaded path's entry in _tree

    def _run(self, *args: str, input: str | bytes | None = None, check: bool = True) -> Result:
        return self.repo._run(*args, env=self._env, input=input, check=check)

    def read_tree(self, rev: str) -> None:
        """Start over from rev's tree (nothing is read until a path is asked about)."""
        self._tree = Sha(self.repo._run("rev-parse", "--verify", f"{rev}^{{tree}}").text.strip())
        self._known = {}
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    # -- loading paths from the base tree ------------------------------------------------------
    def _load(self, paths: Iterable[str]) -> None:
        """Bring paths, and the files or links above them, into the index as the tree has them."""
        want = {p for p in paths if p and p not in self._known}
        if not want:
            return
        above = {str(a) for p in want for a in PurePosixPath(p).parents if str(a) != "."} - set(self._known)
        found = self.repo.ls_entries(self._tree, want | above) if self._tree else {}
        files = {name: (mode.encode(), sha) for name, (mode, typ, sha) in found.items() if typ != "tree"}
        if files:
            rows = "".join(f"{mode.decode()} {sha}\t{name}\0" for name, (mode, sha) in files.items())
            self._run("update-index", "--add", "-z", "--index-info", input=rows)
        self._known.update({p: None for p in want})
        self._known.update(files)

    # -- what git does on it --------------------------------------------------------------------
    def apply(self, diff: str | bytes, *, check: bool = False, reverse: bool = False,
              verbose: bool = False, atomic: bool = False) -> tuple[bool, str]:
        """Apply diff to the index (git apply --cached); with check, only say whether it would.

        Returns (applies, git's complaint; with verbose also the hunks that apply at an offset).
        Without check, a failure raises GitError; with atomic, it is returned like check's
        (git apply changes nothing unless every hunk applies).
        """
        self._load(diff_paths(diff))
        args = ["apply", "--cached", "--whitespace=nowarn"] + (["--check"] if check else []) + \
            (["-v"] if verbose else []) + (["--reverse"] if reverse else []) + ["-"]
        res = self._run(*args, input=diff, check=not (check or atomic))
        return res.returncode == 0, res.stderr

    def read(self, path: str) -> bytes | None:
        """The bytes of path as staged here; None when the index has no such file."""
        self._load([path])
        entry = self._entries([path]).get(path)
        return None if entry is None else self.repo.read_blob(entry[1])

    def add(self, path: str, data: bytes, mode: str = "100644") -> None:
        """Stage data at path."""
        self._load([path])
        blob = self.repo.write_blob(data)
        self._run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")

    def remove(self, path: str) -> None:
        self._load([path])
        self._run("update-index", "--force-remove", "--", path)

    def _entries(self, paths: Iterable[str] = ()) -> dict[str, Entry]:
        """path -> (mode, blob) of the entries staged here (of paths only, when given)."""
        args = ["--literal-pathspecs", "ls-files", "-s", "-z"] + (["--", *paths] if paths else [])
        if not self.path.exists():
            return {}
        found = {}
        for rec in self._run(*args).stdout.decode("utf-8", "surrogateescape").split("\0"):
            if rec:
                meta, name = rec.split("\t", 1)
                mode, sha, _stage = meta.split(" ")
                found[name] = (mode.encode(), sha)
        return found

    def write_tree(self) -> Sha:
        """The tree: the last one written (at first the base) with each path staged here that
        changed since laid over it (a loaded path no longer staged is removed)."""
        staged = self._entries()
        changes = {p: staged.get(p) for p in set(self._known) | set(staged) if staged.get(p) != self._known.get(p)}
        if changes or self._tree is None:
            self._tree = self._overlay(self._tree, _split(changes)) or self.repo.write_object("tree", b"")
            self._known.update(changes)
        return self._tree

    # -- trees ----------------------------------------------------------------------------------
    def _overlay(self, tree: Sha | None, changes: "_Changes") -> Sha | None:
        """tree with changes laid over it; None when nothing is left in it."""
        entries = dict(self._tree_entries(tree)) if tree else {}
        before = dict(entries)
        for name, entry in changes.here.items():
            if entry is None:
                if name in entries and entries[name][0] != TREE:
                    del entries[name]
            else:
                entries[name] = entry
        for name, sub in changes.below.items():
            cur = entries.get(name)
            new = self._overlay(Sha(cur[1]) if cur and cur[0] == TREE else None, sub)
            if new is not None:
                entries[name] = (TREE, new)
            elif cur is not None and cur[0] == TREE:
                del entries[name]
        if entries == before and tree:
            return tree
        if not entries:
            return None
        data = b"".join(mode + b" " + name + b"\0" + hex_to_bin(sha)
                        for name, (mode, sha) in sorted(entries.items(), key=_order))
        return self.repo.write_object("tree", data)

    def _tree_entries(self, tree: Sha) -> Iterator[tuple[bytes, Entry]]:
        data = self.repo.read_object(tree)
        pos = 0
        while pos < len(data):
            space = data.index(b" ", pos)
            nul = data.index(b"\0", space)
            yield data[space + 1:nul], (data[pos:space], data[nul + 1:nul + 21].hex())
            pos = nul + 21


def _order(item: tuple[bytes, Entry]) -> bytes:
    """git's order of tree entries: by name, a folder's name as if it ended in '/'."""
    name, (mode, _) = item
    return name + b"/" if mode == TREE else name


class _Changes:
    """Changes to one folder: its own entries (name -> entry, or None: removed) and its folders'."""

    def __init__(self) -> None:
        self.here: dict[bytes, Entry | None] = {}
        self.below: dict[bytes, _Changes] = {}


def _split(changes: dict[str, Entry | None]) -> _Changes:
    root = _Changes()
    for path, entry in changes.items():
        *folders, name = path.encode("utf-8", "surrogateescape").split(b"/")
        node = root
        for f in folders:
            node = node.below.setdefault(f, _Changes())
        node.here[name] = entry
    return root


_NAMED = ("rename from ", "rename to ", "copy from ", "copy to ")
_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}


def diff_paths(diff: str | bytes) -> set[str]:
    """Every path a diff's headers may name, as git apply -p1 reads them: `diff --git`, `---`,
    `+++`, rename and copy lines, C-quoted or not. A superset is harmless (a hunk's line that
    looks like a header only loads a path more), a path missed is not: a header git reads is
    never skipped."""
    text = diff.decode("utf-8", "surrogateescape") if isinstance(diff, bytes) else diff
    found: set[str] = set()
    for line in text.splitlines():
        if line.startswith(_NAMED):
            found.add(_unquote(line.split(" ", 2)[2]))
        elif line.startswith(("--- ", "+++ ")):
            name = _unquote(line[4:].split("\t")[0].rstrip())
            if name != "/dev/null":
                found.add(_strip(name))
        elif line.startswith("diff --git "):
            found.update(_strip(n) for n in _git_names(line[len("diff --git "):]))
    found.discard("")
    return found


def _git_names(rest: str) -> list[str]:
    """The two names of a `diff --git` line: quoted ones, or every way to split it in two."""
    if rest.startswith('"'):
        end = _closing(rest)
        first, second = rest[:end + 1], rest[end + 1:].strip()
        return [_unquote(first), _unquote(second)]
    if rest.endswith('"'):
        start = rest.rindex(' "')
        return [rest[:start], _unquote(rest[start + 1:])]
    parts = rest.split(" ")
    return [n for i in range(1, len(parts)) for n in (" ".join(parts[:i]), " ".join(parts[i:]))]


def _closing(quoted: str) -> int:
    i = 1
    while i < len(quoted):
        if quoted[i] == "\\":
            i += 2
            continue
        if quoted[i] == '"':
            return i
        i += 1
    return len(quoted) - 1


def _unquote(name: str) -> str:
    """git's C-style quoting of a path undone (octal escapes are bytes of UTF-8)."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "0123":
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt)))
            i += 2
            continue
        out += c.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _strip(name: str) -> str:
    """-p1: the first component (a/, b/) off."""
    return name.split("/", 1)[1] if "/" in name else name

"""The private index trees are built in (GIT_INDEX_FILE), never a user's index: slim.

A full index of TensorRT-LLM holds ~15,000 entries; every `git apply --cached` reads and
rewrites all of it and drops its cached trees, so the `git write-tree` after it hashes every
folder again (about 45 ms a patch, 1.4 s for a 30-patch stack; #26's bench). This index holds
only the paths it is asked about: before git applies a diff here, every path its headers
name (diff_paths; a path more is harmless, it is only read from the base), the files or links
above them and, where such a path is a folder, the files in it are loaded from the base tree;
reading, adding or removing a file loads it first. git applies to the few entries with
exactly the checks it makes on the full index (a file that already exists, a preimage that
differs, a path beyond a symlink, a file where a folder is). write_tree lays those paths over
the base tree: only the folders above them are rewritten, as git's own tree objects (entries
sorted as git sorts them, folders as name + '/', modes as git's index holds them), stored by
gitdb in this process like write_object.

A path the index has loaded is in `_known`, with its entry in the last tree written: its
state here (an entry, or none: removed) is its state in the tree being built; every other
path is as the base tree has it. Each write_tree lays only what changed since the last one
over that tree, so a series of commits rewrites each commit's own folders, not the series'.
"""
from __future__ import annotations

import contextlib
import os
import struct
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any


from .runner import GitError, Result, Sha

TREE = b"40000"
_FULL_ID = re.compile(r"[0-9a-f]{40}")
Entry = tuple[bytes, str]  # (mode, object id) as a tree holds them


class Index:
    """A private, slim index over a base tree (see the module's docstring)."""

    def __init__(self, repo: Any, path: Path) -> None:
        """repo: the Repo whose objects room (objects.py) made this index (not imported: a circle)."""
        self.repo = repo
        self.path = path
        # version 2 whatever the repository says (our clones set index.version=4): GitPython reads it
        self._env = {"GIT_INDEX_FILE": str(path), "GIT_INDEX_VERSION": "2"}
        self._tree: Sha | None = None  # the base, then the last tree written
        self._rev: str | None = None  # the base as given, until its tree is needed (write_tree)
        # The entries of each tree read or written here, by id (a tree never changes): a series'
        # next commit rewrites the folders the last one wrote, so they are not read back through
        # the object reader, a round trip for each folder of each patch (#34 item 5).
        self._trees: dict[str, dict[bytes, Entry]] = {}
        self._known: dict[str, Entry | None] = {}  # each loaded path's entry in _tree

    def _run(self, *args: str, input: str | bytes | None = None, check: bool = True) -> Result:
        # Never split, whatever the user's core.splitIndex: a split index leaves its shared
        # part in the repository's .git (sharedindex.*), not beside this private file.
        return self.repo._run("-c", "core.splitIndex=false", *args, env=self._env, input=input, check=check)

    def read_tree(self, rev: str) -> None:
        """Start over from rev's tree (nothing is read until a path is asked about; rev's tree id
        only when a tree is written: a probe never needs it, #34 item 4)."""
        self._tree, self._rev = None, rev
        self._known = {}
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    # -- loading paths from the base tree ------------------------------------------------------
    def _load(self, paths: Iterable[str]) -> None:
        """Bring paths, the files or links above them and, for a path that is a folder, every file
        in it (git refuses a file there while one is staged) into the index as the tree has them."""
        want = {p for p in paths if _in_tree(p) and p not in self._known}
        if not want:
            return
        above = {str(a) for p in want for a in PurePosixPath(p).parents if str(a) != "."} - set(self._known)
        base = self._tree or self._rev  # ls-tree takes a commit as well
        found = self.repo.ls_entries(base, want | above) if base else {}
        folders = sorted(p for p in want if found.get(p, ("", ""))[1] == "tree")
        if folders:
            found.update({p: e for p, e in self.repo.ls_below(base, folders).items() if p not in self._known})
        files = {name: (mode.encode(), sha) for name, (mode, typ, sha) in found.items() if typ != "tree"}
        if files:
            rows = "".join(f"{mode.decode()} {sha}\t{name}\0" for name, (mode, sha) in files.items())
            self._run("update-index", "--add", "-z", "--index-info", input=rows)
        self._known.update({p: None for p in want})
        self._known.update(files)

    def expect(self, diffs: Iterable[str | bytes]) -> None:
        """Load every path these diffs name at once (a series: one ls-tree and one update-index
        for all its patches, not two more processes a patch)."""
        self._load(set().union(*(diff_paths(d) for d in diffs)))

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
        if res.returncode not in (0, 1) and "fatal: " in res.stderr:
            # git itself failed (an index it cannot read or lock, a signal): no verdict on the
            # patch. A patch git cannot read is an error:, exit 128 too, and is the patch's answer.
            raise GitError(list(res.cmd), res.returncode, res.text, res.stderr, str(self.repo.path))
        return res.returncode == 0, res.stderr

    def read(self, path: str) -> bytes | None:
        """The bytes of path as staged here; None when the index has no such file."""
        entry = self._staged(path)
        return None if entry is None else self.repo.read_blob(entry[1])

    def mode(self, path: str) -> str | None:
        """The mode of path as staged here (100644, 100755, 120000); None when there is no such file."""
        entry = self._staged(path)
        return None if entry is None else entry[0].decode()

    def _staged(self, path: str) -> Entry | None:
        self._load([path])
        return self._entries([path]).get(path)

    def add(self, path: str, data: bytes, mode: str = "100644") -> None:
        """Stage data at path."""
        self._load([path])
        blob = self.repo.write_blob(data)
        self._run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")

    def remove(self, path: str) -> None:
        self._load([path])
        self._run("update-index", "--force-remove", "--", path)

    def _entries(self, paths: Iterable[str] = ()) -> dict[str, Entry]:
        """path -> (mode, blob) of the entries staged here (of paths only, when given): read by
        GitPython from the index file, a few entries, in this process; through git ls-files
        when GitPython cannot read it (an index version 4 or a split index the user's config
        asks for, a name that is not UTF-8)."""
        if not self.path.exists():
            return {}
        want = set(paths)
        found = self._read_file()
        if found is None:
            args = ["--literal-pathspecs", "ls-files", "-s", "-z"] + (["--", *sorted(want)] if want else [])
            found = {}
            for rec in self._run(*args).stdout.decode("utf-8", "surrogateescape").split("\0"):
                if rec:
                    meta, name = rec.split("\t", 1)
                    mode, sha, _stage = meta.split(" ")
                    found[name] = (mode.encode(), sha)
        return {p: e for p, e in found.items() if not want or p in want}

    def _read_file(self) -> dict[str, Entry] | None:
        from git.index.fun import read_cache  # GitPython's reader, imported when an index is read
        try:
            with open(self.path, "rb") as f:
                _version, entries, extensions, _sha = read_cache(f)
        except (OSError, ValueError, AssertionError, UnicodeDecodeError, struct.error):
            return None
        pos = 0
        while pos + 8 <= len(extensions):  # a split index's entries are elsewhere: git reads it
            if extensions[pos:pos + 4] == b"link":
                return None
            pos += 8 + int.from_bytes(extensions[pos + 4:pos + 8], "big")
        return {str(path): (b"%o" % e.mode, e.hexsha) for (path, stage), e in entries.items() if stage == 0}

    def write_tree(self, only: Iterable[str] | None = None) -> Sha:
        """The tree: the last one written (at first the base) with each path staged here that
        changed since laid over it (a loaded path no longer staged is removed); with only, of
        those paths alone (a series applied at once, committed patch by patch: series.py)."""
        if self._rev is not None:
            self._tree, self._rev = self._base_tree(self._rev), None
        staged = self._entries()
        paths = set(self._known) | set(staged)
        if only is not None:
            paths &= set(only)
        changes = {p: staged.get(p) for p in paths if staged.get(p) != self._known.get(p)}
        if changes or self._tree is None:
            self._tree = self._overlay(self._tree, _split(changes)) or self.repo.write_object("tree", b"")
            self._known.update(changes)
        return self._tree

    def _base_tree(self, rev: str) -> Sha:
        """rev's tree: read from the commit by the object reader, which write_tree uses next
        anyway, when rev is a commit id; else as git resolves rev^{tree}."""
        tree = self.repo.tree_of(rev) if _FULL_ID.fullmatch(rev) else None
        if tree:
            return tree
        return Sha(self.repo._run("rev-parse", "--verify", f"{rev}^{{tree}}").text.strip())

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
        data = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha)
                        for name, (mode, sha) in sorted(entries.items(), key=_order))
        written = self.repo.write_object("tree", data)
        self._trees[written] = entries
        return written

    def _tree_entries(self, tree: Sha) -> dict[bytes, Entry]:
        """A tree's entries (name -> (mode as the index holds it, id)), read once."""
        if tree not in self._trees:
            data = self.repo.read_object(tree)
            entries, pos = {}, 0
            while pos < len(data):
                space = data.index(b" ", pos)
                nul = data.index(b"\0", space)
                entries[data[space + 1:nul]] = (_canon(data[pos:space]), data[nul + 1:nul + 21].hex())
                pos = nul + 21
            self._trees[tree] = entries
        return self._trees[tree]


def _canon(mode: bytes) -> bytes:
    """A tree entry's mode as git's index holds it, and so as git writes it again: an old tree may
    hold 100664 or 040000, which a folder git rewrites loses (git's canon_mode)."""
    kind = int(mode, 8) & 0o170000
    if kind == 0o100000:
        return b"100755" if int(mode, 8) & 0o100 else b"100644"
    return {0o040000: TREE, 0o120000: b"120000"}.get(kind, b"160000")


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


_NAMED = ("rename from ", "rename to ", "rename old ", "rename new ", "copy from ", "copy to ")
_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}
_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def diff_paths(diff: str | bytes) -> set[str]:
    """Every path a diff's headers may name, as git apply reads them: `diff --git`, `---`, `+++`,
    rename and copy lines, C-quoted or not, after -p1 (and as they are when git may guess -p0:
    a traditional diff whose names have no folder). Where git's reading depends on more than
    the line (which space or tab ends a name, a date after it or not, a quote it cannot undo),
    every reading is taken: a path more is harmless (it is only read from the base), a path
    missed is not. A hunk's lines are skipped by its counts, as git skips them."""
    text = diff.decode("utf-8", "surrogateescape") if isinstance(diff, bytes) else diff
    named: set[str] = set()  # rename and copy lines: never stripped
    headed: set[str] = set()  # --- and +++ lines, before -p
    git_lines: list[str] = []
    old = new = 0  # the current hunk's old and new lines still to come
    for line in text.split("\n"):  # git's lines end at a newline only
        if old or new:
            kind = line[:1]
            if kind in ("", " ", "-", "+", "\\"):  # an empty line is context, as git reads it
                old -= kind in ("", " ", "-")
                new -= kind in ("", " ", "+")
                continue
            old = new = 0  # git calls the patch corrupt: it applies nothing, whatever is loaded
        hunk = _HUNK.match(line)
        if hunk:
            old, new = (int(n) if n is not None else 1 for n in hunk.groups())
        elif line.startswith(_NAMED):
            named |= _readings(line.split(" ", 2)[2], "\r")
        elif line.startswith(("--- ", "+++ ")):
            headed |= _readings(line[4:], " \t\r")
        elif line.startswith("diff --git "):
            git_lines.append(line[len("diff --git "):])
    headed.discard("/dev/null")
    ps = (1, 0) if any(n and "/" not in n for n in headed) else (1,)
    found = named | {m for n in headed for p in ps for m in [_skip(n, p)] if m}
    found |= {m for rest in git_lines for p in ps for m in _header_names(rest, p)}
    return {m for n in found for m in (n, re.sub("/+", "/", n)) if _in_tree(m)}


def _in_tree(path: str) -> bool:
    """Whether an index could hold path (git refuses absolute ones, empty, '.' and '..' parts)."""
    return all(part not in ("", ".", "..") for part in path.split("/"))


def _readings(rest: str, stops: str) -> set[str]:
    """The names a header's rest may hold: the C-quoted one it starts with, and each prefix up to
    a stop character (where git ends a name, or where a date git strips begins) or the end."""
    names = {rest[:i] for i, c in enumerate(rest) if c in stops} | {rest}
    quoted = _unquote(rest)
    return names if quoted is None else names | {quoted}


def _skip(name: str, p: int) -> str | None:
    """name without its first p folders (git's -p); None when it has too few."""
    return name if p == 0 else (name.split("/", 1)[1] if "/" in name else None)


def _header_names(rest: str, p: int) -> set[str]:
    """The name a `diff --git` line gives (git reads it when no other line names the file):
    the same name after -p on both sides of a space or tab, or a C-quoted one."""
    out = set()
    for i, c in enumerate(rest):
        if c == '"':
            quoted = _unquote(rest[i:])
            if quoted is not None and _skip(quoted, p):
                out.add(_skip(quoted, p))
        elif c in " \t" and _skip(rest[:i], p) is not None and _skip(rest[:i], p) == _skip(rest[i + 1:], p):
            out.add(_skip(rest[:i], p))
    return out


def _unquote(quoted: str) -> str | None:
    """The C-quoted name quoted starts with, undone as git undoes it (octal escapes are bytes of
    UTF-8; what follows the closing quote is ignored); None when git could not undo it either."""
    if not quoted.startswith('"'):
        return None
    out, i = bytearray(), 1
    while i < len(quoted):
        c = quoted[i]
        if c == '"':
            return out.decode("utf-8", "surrogateescape")
        if c != "\\":
            out += c.encode("utf-8", "surrogateescape")
            i += 1
            continue
        nxt = quoted[i + 1:i + 2]
        if nxt and nxt in "0123":
            digits = quoted[i + 1:i + 4]
            if len(digits) < 3 or any(d not in "01234567" for d in digits):
                return None
            out.append(int(digits, 8))
            i += 4
        elif nxt and nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            return None
    return None

"""Objects: the persistent `cat-file --batch` reader (GitPython's GitCmdObjectDB), blobs,
trees and commits, the temporary Index (index.py), and the text operations git owns (trailers, 3-way
merge of a file, format-patch, archive): a room of Repo (repo.py).

GitPython's object database reads blobs, trees and commits through ONE persistent
`git cat-file --batch` process per repository, instead of a `git show` per file (git-revise's
odb.py does the same by hand).
"""
from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import scratch
from .index import Index
from .runner import GitError, Identity, Sha, gitpython_errors, identity_env


# interpret-trailers with no configuration at all: trailer.* cannot be reset with -c (a
# trailer.<token>.command forged sign-offs, trailer.separators rewrote `Fixes #19514`), so it
# runs where no config file is read: no system or global file, no -c or GIT_CONFIG_COUNT
# entries of the user's, and a GIT_DIR that is no repository (interpret-trailers needs none).
_NO_CONFIG = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_SYSTEM": "/dev/null", "GIT_CONFIG_GLOBAL": "/dev/null",
              "GIT_CONFIG_PARAMETERS": "", "GIT_CONFIG_COUNT": "0", "GIT_DIR": "/dev/null"}


_TREE_LINE = re.compile(rb"tree [0-9a-f]{40}\n")


@dataclass(frozen=True)
class CommitInfo:
    """A commit as read from the object database."""

    sha: Sha
    tree: Sha
    parents: tuple[Sha, ...]
    author: Identity
    author_date: str  # git's raw form: '<seconds> <+hhmm>'
    committer: Identity
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]



class ObjectsMixin:
    """Repo's objects and the text operations git owns (uses Repo's _run, _out, _repo, close)."""

    def commit_info(self, rev: str) -> CommitInfo:
        """Parents, author, committer, tree and message of a commit, from the object database."""
        from git.objects.util import altz_to_utctz_str
        with self._objects(f"cat-file commit {rev}"):
            c = self._repo.commit(rev)
            c.tree  # noqa: B018 - read now, inside the error boundary
        return CommitInfo(Sha(c.hexsha), Sha(c.tree.hexsha), tuple(Sha(p.hexsha) for p in c.parents),
                          Identity(c.author.name or "", c.author.email or ""),
                          f"{c.authored_date} {altz_to_utctz_str(c.author_tz_offset)}",
                          Identity(c.committer.name or "", c.committer.email or ""),
                          c.message if isinstance(c.message, str) else c.message.decode("utf-8", "replace"))

    # -- objects: one cat-file --batch process (GitPython's GitCmdObjectDB) -------------------
    def _ls(self, rev: str, paths: Iterable[str] | None, *flags: str,
            literal: bool = True) -> list[tuple[str, str, str, str]]:
        """(mode, type, id, path) rows of one `ls-tree --full-tree` at rev, read from trees only
        (nothing is fetched): of paths (none: no rows), or of the whole tree when paths is None."""
        want = None if paths is None else sorted(set(paths))
        if want == []:
            return []
        args = (["--literal-pathspecs"] if literal else []) + ["ls-tree", "--full-tree", "-z", *flags, rev]
        rows = []
        for rec in self._run(*args, *(["--", *want] if want else [])).text.split("\0"):
            if rec:
                meta, name = rec.split("\t", 1)
                mode, typ, sha = meta.split(" ")
                rows.append((mode, typ, sha, name))
        return rows

    def ls_tree(self, rev: str, path: str = "", recursive: bool = True) -> list[tuple[str, str, str]]:
        """(mode, type, path) entries under path at rev, read from trees only (no blobs needed)."""
        return [(mode, typ, name) for mode, typ, _sha, name in
                self._ls(rev, [path] if path else None, *(["-r"] if recursive else []), literal=False)]

    def modes(self, rev: str, paths: Iterable[str]) -> dict[str, str]:
        """path -> mode at rev for those of paths that are entries there (files, links, folders),
        in one ls-tree: git descends only as far as the paths need."""
        want = set(paths)
        return {name: mode for mode, _typ, _sha, name in self._ls(rev, want) if name in want}

    def blob_ids(self, rev: str, paths: Iterable[str]) -> dict[str, tuple[str, str]]:
        """path -> (mode, blob id) at rev for those of paths that are files there, read from trees
        only: in a blobless clone nothing is fetched (make lint fetches what it needs in one batch)."""
        want = set(paths)
        return {name: (mode, sha) for mode, typ, sha, name in self._ls(rev, want, "-r") if typ == "blob" and name in want}

    def ls_entries(self, rev: str, paths: Iterable[str]) -> dict[str, tuple[str, str, str]]:
        """path -> (mode, type, id) at rev for those of paths that are entries there, from trees
        only (one ls-tree, descending as far as the paths need; nothing is fetched). A folder is
        an entry too (-t: also when ls-tree descends into it for a path below)."""
        want = set(paths)
        return {name: (mode, typ, sha) for mode, typ, sha, name in self._ls(rev, want, "-t") if name in want}

    def tree_files(self, rev: str) -> dict[str, tuple[str, str]]:
        """path -> (mode, id) of every file, link and submodule of rev's whole tree, from trees
        only (nothing is fetched): what a full checkout of rev holds."""
        return {name: (mode, sha) for mode, _typ, sha, name in self._ls(rev, None, "-r")}

    def ls_below(self, rev: str, folders: Iterable[str]) -> dict[str, tuple[str, str, str]]:
        """path -> (mode, type, id) at rev of every file, link and submodule under folders."""
        return {name: (mode, typ, sha) for mode, typ, sha, name in self._ls(rev, folders, "-r")}

    def read_object(self, sha: str) -> bytes:
        """An object's raw content (a tree's entries, a blob's bytes), by id."""
        with self._objects(f"cat-file --batch {sha}"):
            return self._repo.odb.stream(bytes.fromhex(sha)).read()

    def tree_of(self, commit: str) -> Sha | None:
        """The tree of the commit with this id, read by the object reader (no process of its
        own); None when the id is not a commit's."""
        with self._objects(f"cat-file --batch {commit}"):
            stream = self._repo.odb.stream(bytes.fromhex(commit))
            head = stream.read()[:46] if stream.type in (b"commit", "commit") else b""
        # a commit's first line is its tree's id (git's object format)
        return Sha(head[5:45].decode()) if _TREE_LINE.fullmatch(head) else None

    def read_blob(self, sha: str) -> bytes:
        """A blob's bytes, by id (lazily fetched in a blobless clone)."""
        with self._objects(f"cat-file blob {sha}"):
            return self._repo.odb.stream(bytes.fromhex(sha)).read()

    @contextlib.contextmanager
    def _objects(self, what: str) -> Iterator[None]:
        """GitPython's object database raises its own errors when its git process fails (a
        ValueError for an empty answer, GitCommandError, a broken pipe): they become GitError,
        so that a failing git is one line and never 'internal error'. The persistent process
        is dropped, to be started afresh on the next read."""
        try:
            yield
        except (ValueError, OSError, AssertionError, *gitpython_errors()[:1]) as exc:
            self.close()
            msg = " ".join(str(getattr(exc, "stderr", "") or exc).split())
            raise GitError(["git", *what.split()], getattr(exc, "status", -1) if isinstance(
                getattr(exc, "status", None), int) else -1, "", msg, str(self.path)) from exc

    def show_file(self, rev: str, path: str) -> bytes | None:
        """The bytes of path at rev; None when rev has no such file."""
        try:
            # The same persistent cat-file --batch process the object database reads through.
            _sha, typ, _size, data = self._repo.git.get_object_data(f"{rev}:{path}")
        except ValueError as exc:
            if "could not be resolved" in str(exc):  # cat-file answered "missing"
                return None
            with self._objects(f"cat-file --batch {rev}:{path}"):
                raise
        except (OSError, AssertionError, *gitpython_errors()[:1]):
            with self._objects(f"cat-file --batch {rev}:{path}"):
                raise
        return data if typ in (b"blob", "blob") else None  # GitPython gives the type as bytes

    def grep_files(self, rev: str, phrases: Iterable[str], path: str) -> list[str]:
        """The files under path at rev that contain any of the phrases (fixed strings, any case).
        git grep reads the tree at rev (lazily fetching blobs in a blobless clone); GitPython has
        no search of its own."""
        args = ["grep", "-l", "-F", "-i", "-I"] + [a for p in phrases for a in ("-e", p)] + [rev, "--", path]
        res = self._run(*args, check=False)
        if res.returncode not in (0, 1):  # 1: nothing matched
            raise GitError(["git", *args], res.returncode, res.text, res.stderr, str(self.path))
        return sorted(line.split(":", 1)[1] for line in res.text.splitlines() if ":" in line)

    def write_blob(self, data: bytes) -> Sha:
        """Store data as a blob (a loose object); its id."""
        return self.write_object("blob", data)

    def write_object(self, kind: str, data: bytes) -> Sha:
        """Store data as a loose object of kind (blob, tree, commit); its id. Written by gitdb
        in this process, as git writes one (GitPython's own store runs a git hash-object each
        time, and a radar writes hundreds)."""
        from gitdb import IStream
        from gitdb.db.loose import LooseObjectDB
        with self._objects(f"hash-object -w -t {kind} --stdin"):
            stream = LooseObjectDB.store(self._repo.odb, IStream(kind, len(data), _BytesReader(data)))
        return Sha(stream.hexsha.decode() if isinstance(stream.hexsha, bytes) else stream.hexsha)

    def commit_tree(self, tree: str, parents: Sequence[str], message: str, *, author: Identity,
                    committer: Identity, author_date: str | None = None, committer_date: str | None = None) -> Sha:
        """A commit object for tree on parents; no ref moves."""
        args = ["commit-tree", tree] + [a for p in parents for a in ("-p", p)]
        env = identity_env(author, committer, author_date, committer_date)
        return Sha(self._out(*args, env=env, input=message))

    @contextlib.contextmanager
    def temp_index(self, rev: str) -> Iterator["Index"]:
        """A private index holding rev's tree; the checkout's own index is never touched."""
        with scratch.folder("index") as tmp:
            index = Index(self, Path(tmp) / "index")
            index.read_tree(rev)
            yield index

    # -- text operations git owns ---------------------------------------------------------------
    def add_trailer(self, message: str, trailer: str) -> str:
        """message with the trailer added unless an identical one is there (interpret-trailers,
        as git does it with no configuration: a sign-off is ours to write, byte for byte)."""
        return self._run("interpret-trailers", "--if-exists", "addIfDifferent", "--trailer", trailer,
                         input=message.rstrip("\n") + "\n", env=_NO_CONFIG).text.strip() + "\n"

    def trailers(self, message: str) -> list[tuple[str, str]]:
        """(key, value) of each trailer of message, as git parses them (with no configuration:
        an alias such as trailer.sign.key=Signed-off-by must not make `sign:` a sign-off)."""
        out = self._run("interpret-trailers", "--parse", input=message, env=_NO_CONFIG).text
        return [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in out.splitlines()) if k]

    def merge_file(self, ours: bytes, base: bytes, theirs: bytes) -> tuple[bytes, int]:
        """A 3-way merge of three versions of a file: (merged bytes, number of conflicts)."""
        with scratch.folder("merge") as tmp:
            files = []
            for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                p = Path(tmp) / name
                p.write_bytes(data)
                files.append(str(p))
            res = self._run("merge-file", "-p", *files, check=False)
        if res.returncode < 0 or res.returncode > 127:  # merge-file: exit n = n conflicts
            raise GitError(list(res.cmd), res.returncode, "", res.stderr, str(self.path))
        return res.stdout, res.returncode

    def format_series(self, rev_range: str, out_dir: Path, *, full_index: bool = False) -> list[Path]:
        """The commits of rev_range as patch files in out_dir, the same bytes for the same commits.

        No commit ids (--zero-commit), no diffstat, no signature; full_index: each file's
        index line with the whole blob ids of its two sides (what git am -3 builds its
        fake ancestor from, in any clone: an abbreviated id depends on the repository's
        size). An exported set does not
        depend on whoever exports it: the user's format.* and diff.* settings are overridden
        (runner.OVERRIDES), and those that config cannot reset (format.headers, format.to,
        format.cc, format.attach) are dropped by flags; each setting is named again here, as
        flags, so that the set's bytes never rest on one mechanism alone.
        """
        out_dir.mkdir(parents=True, exist_ok=True)
        before = set(out_dir.iterdir())
        self._run("format-patch", "-q", "--zero-commit", "--no-signature", "--no-stat", "--no-cover-letter",
                  "--no-signoff", "--subject-prefix=PATCH", "--no-add-header", "--no-to", "--no-cc", "--no-from",
                  "--no-thread", "--suffix=.patch", "--no-notes", "--no-base", "--no-attach", "--no-ext-diff",
                  "--no-textconv", *(["--full-index"] if full_index else []), "-o", str(out_dir), rev_range)
        return sorted(set(out_dir.iterdir()) - before)

    def archive(self, rev: str, tar: Path, paths: Sequence[str] = ()) -> None:
        """A tar of rev (only paths, files or directories, when given) at tar; reads only
        those paths' blobs.

        With paths, the tar is written here, from blobs read through the one object reader
        after the missing ones are fetched in one batch: in a partial clone, git archive
        first fetches every blob of the tree, whatever the pathspec (git 2.39; measured: a
        three-file archive of a one-commit clone fetched all 616 blobs).
        """
        if not paths:
            self._run("archive", "--format=tar", "-o", str(tar), rev)
            return
        out = self._run("ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths).text
        entries = [(meta.split(" ")[0], meta.split(" ")[2], name)
                   for meta, _, name in (rec.partition("\t") for rec in out.split("\0") if rec)]
        entries = [e for e in entries if e[0] != "160000"]  # submodules: git archive leaves them out too
        self.prefetch([sha for _m, sha, _p in entries])
        mtime = int(self._out("log", "-1", "--format=%ct", rev))
        import tarfile  # here: only the delta's trees need it, and every command imports this module

        with tarfile.open(tar, "w", format=tarfile.PAX_FORMAT) as tf:
            for mode, sha, name in entries:
                data = self.read_blob(sha)
                info = tarfile.TarInfo(name)
                info.mtime = mtime
                if mode == "120000":
                    info.type, info.linkname = tarfile.SYMTYPE, data.decode("utf-8", "surrogateescape")
                    tf.addfile(info)
                    continue
                info.size, info.mode = len(data), 0o755 if mode == "100755" else 0o644
                tf.addfile(info, io.BytesIO(data))

    def fast_import(self, stream: str | bytes) -> None:
        # Blobs over 1 MiB (generated binaries) are stored without trying to delta them.
        self._run("fast-import", "--quiet", "--big-file-threshold=1m", input=stream)


class _BytesReader:
    """The read() gitdb's IStream wants, over bytes."""

    def __init__(self, data: bytes) -> None:
        self._data, self._pos = data, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self._data) if size < 0 else self._pos + size
        chunk = self._data[self._pos:end]
        self._pos += len(chunk)
        return chunk

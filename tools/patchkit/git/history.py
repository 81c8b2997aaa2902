"""History of a set's paths (make radar): the range's commits fetched into a shallow clone by
date (commits only in a partial clone), the files at some paths in many commits read from the
trees on the way to them alone (the missing ones fetched level by level, exactly those), and
slim commits of a few files to probe patches on, written here without a git process: a room
of Repo (repo.py).
"""
from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence


from .runner import GitError, Identity, Sha
from .transfer import _transfer

TREE_MODE = "40000"
_ENTRY = re.compile(rb"([0-7]+) ([^\0]*)\0(.{20})", re.S)  # a raw tree's entries, one after the other
Files = dict[str, tuple[str, str]]  # {path: (mode, blob id)}
_NOTHING_SELECTED = "no commits selected for shallow requests"  # upload-pack: every commit is older


def _timestamp(date: str) -> int:
    """An ISO 8601 date with its offset (what fetch_history is given) as seconds since the epoch."""
    return int(datetime.datetime.fromisoformat(date).timestamp())


class HistoryMixin:
    """What make radar asks of a repository."""

    def fetch_history(self, rev: Sha, since_date: str, trees: bool = True) -> bool:
        """In a shallow clone, the history behind rev back to since_date (git's --shallow-since),
        never a blob of it in a partial clone (its filter), and with trees=False there not a
        tree either: commits only (files_at reads the few trees it needs). rev is fetched by
        id into no ref at all: the user's refs do not move, and a run killed after the fetch
        leaves no ref of ours behind.

        False when nothing of rev's history is that recent (rev itself committed before
        since_date, a quiet branch or a clock set apart): git would select no commit and fail
        ("no commits selected for shallow requests"), so nothing is fetched; the caller
        fetches what it needs by count (deepen)."""
        if not self.is_shallow():
            return True
        if int(self._out("log", "-1", "--format=%ct", rev)) < _timestamp(since_date):
            return False
        args = ["fetch", "--no-tags", "--no-write-fetch-head", f"--shallow-since={since_date}"]
        args += self._history_filter(trees)
        res = _transfer(self._runner, [*args, "origin", rev], f"fetching the history since {since_date}",
                        check=False, remote=self._origin())
        if res.returncode == 0:
            return True
        if _NOTHING_SELECTED in res.stderr:  # git's own reading of the dates had the last word
            return False
        raise GitError(list(res.cmd), res.returncode, res.text, res.stderr, str(self.path))

    def _history_filter(self, trees: bool) -> list[str]:
        """The filter a fetch of history takes: the clone's own, tree:0 for commits alone."""
        filt = self.config_get("remote.origin.partialclonefilter")
        if not filt:
            return []
        return ["--filter=tree:0" if not trees and self.is_partial() else f"--filter={filt}"]

    def is_ancestor(self, ancestor: str, rev: str) -> bool:
        res = self._run("merge-base", "--is-ancestor", ancestor, rev, check=False)
        if res.returncode not in (0, 1):
            raise GitError(list(res.cmd), res.returncode, res.text, res.stderr, str(self.path))
        return res.returncode == 0

    def first_parent_before(self, rev: str, date: str) -> Sha | None:
        """The newest commit of rev's first-parent history committed at or before date."""
        out = self._out("rev-list", "--first-parent", "-n1", f"--before={date}", rev)
        return Sha(out) if out else None

    def first_parent_log(self, since: str, until: str) -> list[tuple[Sha, Sha, str, str]]:
        """The first-parent commits of since..until, oldest first: (id, tree id, committer date,
        subject). Reads commits only."""
        out = self._run("log", "--reverse", "--first-parent", "--format=%H%x02%T%x02%cI%x02%s",
                        f"{since}..{until}").text
        return [(Sha(sha), Sha(tree), date, subject) for sha, tree, date, subject
                in (line.split("\x02", 3) for line in out.splitlines() if line)]

    def files_at(self, trees: Sequence[str], paths: Sequence[str]) -> list[Files]:
        """For each root tree, {path: (mode, blob id)} of the files at or under paths, read from
        the trees on the way to them and nothing else. In a partial clone the missing ones are
        fetched a level at a time, each level in one batch of exactly those trees (filter
        tree:0 sends a wanted tree and nothing below it): never a whole tree of history."""
        wanted = {p.strip("/") for p in paths}
        on_the_way: dict[str, set[str]] = {}  # a directory ('' the top, else 'a/b/') -> its names we want
        for p in wanted:
            parts = p.split("/")
            for i in range(len(parts)):
                on_the_way.setdefault("".join(f"{d}/" for d in parts[:i]), set()).add(parts[i])
        # (tree, its directory, everything under it wanted?) -> (its files, its subtrees)
        found: dict[tuple[str, str, bool], tuple[list[tuple[str, str, str]], list[tuple[str, str, bool]]]] = {}
        level = list(dict.fromkeys((t, "", False) for t in trees))
        while level:
            self.prefetch([t for t, _p, _a in level], "tree:0")
            entries = self._trees([t for t, _p, _a in level])
            after: dict[tuple[str, str, bool], None] = {}
            for key in level:
                tree, prefix, whole = key
                names = on_the_way.get(prefix, set())
                files, subtrees = [], []
                for mode, name, sha in entries[tree]:
                    if not whole and name not in names:
                        continue
                    full = prefix + name
                    if mode == TREE_MODE:
                        subtrees.append((sha, full + "/", whole or full in wanted))
                    elif mode != "160000" and (whole or full in wanted):
                        files.append((full, mode, sha))
                found[key] = (files, subtrees)
                after.update((s, None) for s in subtrees if s not in found)
            level = list(after)

        memo: dict[tuple[str, str, bool], Files] = {}

        def collect(key: tuple[str, str, bool]) -> Files:
            if key not in memo:
                files, subtrees = found[key]
                out = {full: (mode, sha) for full, mode, sha in files}
                for sub in subtrees:
                    out.update(collect(sub))
                memo[key] = out
            return memo[key]
        return [dict(collect((t, "", False))) for t in trees]

    def _trees(self, trees: Sequence[str]) -> dict[str, list[tuple[str, str, str]]]:
        """(mode, name, id) of each tree's entries, all read by one cat-file --batch (a radar
        reads thousands: one request each to the persistent reader took seconds)."""
        ids = list(dict.fromkeys(trees))
        res = self._run("cat-file", "--batch", input="".join(f"{t}\n" for t in ids))
        out, at, found = res.stdout, 0, {}
        for tree in ids:
            end = out.index(b"\n", at)
            head = out[at:end].split(b" ")
            if len(head) != 3 or head[1] != b"tree":
                raise GitError(list(res.cmd), 0, "", f"{tree}: {b' '.join(head[1:]).decode()} (a tree was expected)",
                               str(self.path))
            size = int(head[2])
            raw = out[end + 1:end + 1 + size]
            at = end + 2 + size
            found[tree] = [(m.group(1).decode(), m.group(2).decode("utf-8", "surrogateescape"), m.group(3).hex())
                           for m in _ENTRY.finditer(raw)]
        return found

    def commit_of_files(self, files: Mapping[str, tuple[str, str]], message: str, who: Identity, date: str) -> Sha:
        """A parentless commit holding only these files ({path: (mode, blob id)}): a slim tree
        to probe patches on. Its trees and the commit are written here as git writes them (a
        radar writes hundreds: objects.write_object); no ref moves."""
        root: dict = {}
        for path, (mode, sha) in files.items():
            *dirs, name = path.split("/")
            node = root
            for d in dirs:
                node = node.setdefault(d, {})
            node[name] = (mode, sha)
        stamp = datetime.datetime.fromisoformat(date)
        offset = int(stamp.utcoffset().total_seconds() // 60) if stamp.utcoffset() else 0
        when = f"{int(stamp.timestamp())} {'-' if offset < 0 else '+'}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
        body = (f"tree {self._write_tree(root)}\nauthor {who.name} <{who.email}> {when}\n"
                f"committer {who.name} <{who.email}> {when}\n\n{message.rstrip(chr(10))}\n")
        return self.write_object("commit", body.encode())

    def _write_tree(self, node: dict) -> str:
        entries = []
        for name, value in node.items():
            mode, sha = (TREE_MODE, self._write_tree(value)) if isinstance(value, dict) else value
            # git sorts a tree's entries by name, a directory's name as if it ended in '/'
            key = name.encode("utf-8", "surrogateescape") + (b"/" if mode == TREE_MODE else b"")
            entries.append((key, mode.lstrip("0").encode() + b" " + name.encode("utf-8", "surrogateescape")
                            + b"\0" + bytes.fromhex(sha)))
        return self.write_object("tree", b"".join(e for _k, e in sorted(entries)))

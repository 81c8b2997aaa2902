"""History of a set's paths (make radar): the range's commits and trees fetched into a shallow
clone by date, the first-parent commits that change some paths with the blobs they leave, and
slim commits of a few files to probe patches on: a room of Repo (repo.py).
"""
from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from .objects import Index
from .runner import GitError, Identity, Sha
from .transfer import _transfer


class HistoryMixin:
    """What make radar asks of a repository."""

    def fetch_history(self, rev: Sha, since_date: str) -> None:
        """In a shallow clone, the history behind rev back to since_date (git's --shallow-since),
        as commits and trees only in a partial clone (its filter): never a blob of history.
        rev is fetched by id under refs/patchkit/, so the user's refs do not move."""
        if not self.is_shallow():
            return
        tmp = "refs/patchkit/radar"
        args = ["fetch", "--no-tags", "--no-write-fetch-head", f"--shallow-since={since_date}"]
        filt = self.config_get("remote.origin.partialclonefilter")
        if filt:
            args.append(f"--filter={filt}")
        try:
            _transfer(self._runner, [*args, "origin", f"+{rev}:{tmp}"], f"fetching the history since {since_date}")
        finally:
            self._run("update-ref", "-d", tmp, check=False)

    def is_ancestor(self, ancestor: str, rev: str) -> bool:
        res = self._run("merge-base", "--is-ancestor", ancestor, rev, check=False)
        if res.returncode not in (0, 1):
            raise GitError(list(res.cmd), res.returncode, res.text, res.stderr, str(self.path))
        return res.returncode == 0

    def first_parent_before(self, rev: str, date: str) -> Sha | None:
        """The newest commit of rev's first-parent history committed at or before date."""
        out = self._out("rev-list", "--first-parent", "-n1", f"--before={date}", rev)
        return Sha(out) if out else None

    def path_history(self, since: str, until: str, paths: Sequence[str]) -> list[tuple[Sha, str, str, list[tuple[str, str, str]]]]:
        """The first-parent commits of since..until that change paths, oldest first: (id,
        committer date, subject, [(path, mode, blob id; ZERO when deleted)]). Trees only."""
        out = self._run("-c", "core.quotePath=false", "log", "--reverse", "--first-parent", "--no-renames",
                        "--diff-merges=first-parent", "--raw", "--no-abbrev", "--format=%x01%H%x02%cI%x02%s",
                        f"{since}..{until}", "--", *paths).text
        commits: list[tuple[Sha, str, str, list[tuple[str, str, str]]]] = []
        for line in out.splitlines():
            if line.startswith("\x01"):
                sha, date, subject = line[1:].split("\x02", 2)
                commits.append((Sha(sha), date, subject, []))
            elif line.startswith(":") and commits and "\t" in line:
                meta, path = line[1:].split("\t", 1)
                _old_mode, new_mode, _old, new, _status = meta.split(" ")[:5]
                commits[-1][3].append((path, new_mode, new))
        return commits

    def blobs_at(self, rev: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
        """{path: (mode, blob id)} of the files at or under paths at rev (trees only)."""
        out = self._run("ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths).text
        found = {}
        for rec in out.split("\0"):
            if rec:
                meta, _, name = rec.partition("\t")
                mode, typ, sha = meta.split(" ")
                if typ == "blob":
                    found[name] = (mode, sha)
        return found

    def commit_of_files(self, files: Mapping[str, tuple[str, str]], message: str, who: Identity, date: str) -> Sha:
        """A parentless commit holding only these files ({path: (mode, blob id)}): a slim tree
        to probe patches on, built in a private index; no ref moves."""
        with tempfile.TemporaryDirectory(prefix="patchkit-index-") as tmp:
            index = Index(self, Path(tmp) / "index")
            index._run("update-index", "--add", "--index-info",
                       input="".join(f"{m} {s}\t{p}\n" for p, (m, s) in sorted(files.items())))
            tree = index.write_tree()
        return self.commit_tree(tree, [], message, author=who, committer=who, author_date=date, committer_date=date)

"""Changes taken from upstream (make backport): what origin serves under a name, a pull
request's own commits fetched alone, the files a commit changes read from the trees on the
way to them alone, DEP-3 trailers written by git, and range-diff: a room of Repo (repo.py).

Nothing here writes a ref: commits are fetched by id (origin names them first, with
ls-remote), so a run killed after a fetch leaves the user's refs as they were; a fetch never
updates a remote-tracking branch (--refmap=).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .history import TREE_MODE
from .objects import _NO_CONFIG
from .runner import GitError, Sha
from .transfer import _FULL_ID, _transfer

# git's words when a shallow-exclude fetch leaves nothing to send: every wanted commit is
# reachable from the excluded ref.
_NOTHING_SELECTED = "no commits selected for shallow requests"
# upload-pack's words for a wanted id it does not have (or does not serve): 'not our ref <id>'.
_NOT_OURS = "not our ref"


class NotOnOrigin(GitError):
    """origin sends no object of that id: it has none (upload-pack: 'not our ref')."""


@dataclass(frozen=True)
class TreeChange:
    """One file a commit changes: its mode and blob before and after ('' where absent)."""

    path: str
    old_mode: str
    old_blob: str
    new_mode: str
    new_blob: str


class ChangesMixin:
    """What make backport asks of a repository (uses Repo's _run, _out, _runner, _trees,
    prefetch, present_commit, is_shallow, is_partial, config_get, _origin)."""

    def ls_remote(self, *patterns: str) -> tuple[dict[str, Sha], dict[str, str]]:
        """What origin serves under these names: ({ref: commit id}, {symbolic ref: its target}),
        e.g. ({'HEAD': ..., 'refs/pull/7/head': ...}, {'HEAD': 'refs/heads/main'})."""
        res = _transfer(self._runner, ["ls-remote", "--symref", "origin", *patterns], "asking origin for "
                        + ", ".join(patterns), remote=self._origin(), progress_flag=False)
        refs: dict[str, Sha] = {}
        symrefs: dict[str, str] = {}
        for line in res.text.splitlines():
            left, _, name = line.partition("\t")
            if left.startswith("ref: "):
                symrefs[name] = left[len("ref: "):]
            elif _FULL_ID.fullmatch(left):
                refs[name] = Sha(left)
        return refs, symrefs

    def fetch_ids(self, ids: Iterable[str], *, commits_only: bool = False, exclude: str = "") -> bool:
        """Make these commits present, into no ref; False when origin sends nothing because
        every one of them is reachable from exclude; NotOnOrigin when origin has one of them not.

        In a shallow clone they come at depth 1, or with exclude (a ref on origin), with all
        of their history that exclude does not reach (git's --shallow-exclude): a pull
        request's own commits and no more. In a partial clone commits_only leaves their trees
        behind (filter tree:0: tree_changes fetches the few it reads). A full clone receives
        what it lacks, as any fetch does, and stays full.
        """
        want = [i for i in dict.fromkeys(ids) if self.present_commit(i) is None]
        if not want:
            return True
        shallow = self.is_shallow()
        args = ["fetch", "--no-tags", "--no-write-fetch-head", "--refmap=", "--recurse-submodules=no"]
        if shallow:
            args.append(f"--shallow-exclude={exclude}" if exclude else "--depth=1")
        filt = self.config_get("remote.origin.partialclonefilter")
        if filt and self.is_partial():
            args.append("--filter=tree:0" if commits_only else f"--filter={filt}")
        res = _transfer(self._runner, [*args, "origin", *want], f"fetching {len(want)} commit(s)", check=False,
                        remote=self._origin())
        if res.returncode != 0:
            if shallow and exclude and _NOTHING_SELECTED in res.stderr:
                return False
            if _NOT_OURS in res.stderr:
                raise NotOnOrigin(list(res.cmd), res.returncode, "", res.stderr, str(self.path))
            raise GitError(list(res.cmd), res.returncode, "", res.stderr, str(self.path))
        return True

    def own_commits(self, tip: str, base: str | None = None) -> list[Sha]:
        """tip's commits down to base (not included), oldest first; without base, down to the
        shallow edge (what a shallow-exclude fetch brought)."""
        return self.commits(f"{base}..{tip}" if base else tip)

    def merge_base(self, a: str, b: str) -> Sha | None:
        res = self._run("merge-base", a, b, check=False)
        if res.returncode == 1 and not res.stderr.strip():
            return None
        if res.returncode != 0:
            raise GitError(list(res.cmd), res.returncode, res.text, res.stderr, str(self.path))
        return Sha(res.text.strip())

    def committer_time(self, rev: str) -> int:
        """A commit's committer time (seconds since the epoch), from the commit object alone."""
        return int(self._out("show", "-s", "--format=%ct", rev))

    def tree_changes(self, old_tree: str, new_tree: str) -> list[TreeChange]:
        """The files that differ between two root trees, read from the trees that differ alone:
        in a partial clone the missing ones are fetched a level at a time, each level in one
        batch (filter tree:0), and a subtree both sides share is never read."""
        out: list[TreeChange] = []
        level = [(old_tree, new_tree, "")]
        while level:
            wanted = [t for old, new, _p in level for t in (old, new) if t]
            self.prefetch(wanted, "tree:0")
            entries = self._trees(wanted)
            after = []
            for old, new, prefix in level:
                a = {name: (mode, sha) for mode, name, sha in entries[old]} if old else {}
                b = {name: (mode, sha) for mode, name, sha in entries[new]} if new else {}
                for name in sorted(a.keys() | b.keys()):
                    (ma, sa), (mb, sb) = a.get(name, ("", "")), b.get(name, ("", ""))
                    if (ma, sa) == (mb, sb):
                        continue
                    ta, tb = ma == TREE_MODE, mb == TREE_MODE
                    if ta or tb:
                        after.append((sa if ta else "", sb if tb else "", f"{prefix}{name}/"))
                    if (ma and not ta) or (mb and not tb):
                        out.append(TreeChange(prefix + name, "" if ta else ma, "" if ta else sa,
                                              "" if tb else mb, "" if tb else sb))
            level = after
        return sorted(out, key=lambda c: c.path)

    def with_trailers(self, message: str, trailers: Sequence[tuple[str, str]]) -> str:
        """message with these trailers added at the end of its trailer block, by git
        interpret-trailers with no configuration (see objects._NO_CONFIG)."""
        args = ["interpret-trailers", "--where", "end", "--if-exists", "addIfDifferent"]
        args += [a for k, v in trailers for a in ("--trailer", f"{k}: {v}")]
        return self._run(*args, input=message.rstrip("\n") + "\n", env=_NO_CONFIG).text.strip() + "\n"

    def range_diff(self, old: str, new: str) -> str:
        """git range-diff of two commit ranges ('base..tip'), without colour."""
        return self._run("range-diff", "--no-color", old, new).text


_SUBJECT_TAIL = re.compile(r"\(#(\d+)\)\s*$")


def squash_number(subject: str) -> str | None:
    """The pull request number a squash-merged commit names at the end of its subject
    (GitHub: '<title> (#<number>)'), else None."""
    m = _SUBJECT_TAIL.search(subject)
    return m[1] if m else None

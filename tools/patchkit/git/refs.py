"""Refs, the work tree, worktrees and history: a room of Repo (repo.py), and how a target's
ref is found in a checkout."""
from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import NotFound
from .runner import ZERO, GitError, Identity, Sha, identity_env


class RefsMixin:
    """Repo's refs, work tree, worktrees and history (uses Repo's _run and _out)."""

    # -- refs --------------------------------------------------------------------------------
    def rev_parse(self, rev: str) -> Sha | None:
        """The commit rev names, or None when it names none."""
        res = self._run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False)
        if res.returncode == 0:
            return Sha(res.text.strip())
        if res.returncode == 1 and not res.stderr.strip():
            return None  # --quiet: exit 1 and silence mean "no such commit"
        raise GitError(list(res.cmd), res.returncode, res.text, res.stderr, str(self.path))

    def rev_parse_many(self, revs: Sequence[str]) -> dict[str, Sha | None]:
        """The commit each of revs names (None: none), as rev_parse says it, in one git process
        (cat-file --batch-check of each `<rev>^{commit}`): a target's ref is looked for in three
        places, and each was a rev-parse of its own (#34 item 4)."""
        if not revs:
            return {}
        if any(not r or "\n" in r or r.startswith("-") for r in revs):  # a line each; never an option
            return {r: self.rev_parse(r) for r in revs}
        lines = self._run("cat-file", "--batch-check=%(objectname) %(objecttype)",
                          input="".join(f"{r}^{{commit}}\n" for r in revs)).text.split("\n")
        found: dict[str, Sha | None] = {}
        for rev, line in zip(revs, lines):
            sha, _, kind = line.partition(" ")
            if line.endswith(" ambiguous"):  # rev-parse's own words for it (an error)
                found[rev] = self.rev_parse(rev)
            else:
                found[rev] = Sha(sha) if kind == "commit" else None
        return found

    def symbolic_head(self) -> str | None:
        res = self._run("symbolic-ref", "-q", "HEAD", check=False)
        if res.returncode == 0:
            return res.text.strip()
        if res.returncode == 1:
            return None  # detached
        raise GitError(list(res.cmd), res.returncode, res.text, res.stderr, str(self.path))

    def head(self) -> Sha | None:
        return self.rev_parse("HEAD")

    def refs(self) -> dict[str, Sha]:
        text = self._out("for-each-ref", "--format=%(refname) %(objectname)")
        return {name: Sha(sha) for name, sha in (line.split(" ") for line in text.splitlines() if line)}

    def update_ref(self, ref: str, new: Sha, old: Sha | None, message: str = "patchkit") -> None:
        """Compare-and-swap: move ref to new only if it is still at old (None: must not exist yet)."""
        self._run("update-ref", "-m", message, "--", ref, new, old if old is not None else ZERO)

    def set_ref(self, ref: str, new: Sha, message: str = "patchkit") -> None:
        """Point ref at new whatever it was (restoring a snapshot, keeping a backup)."""
        self._run("update-ref", "-m", message, "--", ref, new)

    def update_refs(self, updates: Sequence[tuple[str, Sha, Sha | None]], message: str = "patchkit") -> None:
        """Move several refs at once, all or none (one update-ref transaction); each (ref, new,
        old) is a compare-and-swap unless old is None (then the ref may be anything, or absent)."""
        lines = ["start"] + [f"update {ref} {new}" + (f" {old}" if old is not None else "") for ref, new, old in updates]
        self._run("update-ref", "-m", message, "--stdin", input="\n".join(lines + ["prepare", "commit"]) + "\n")

    def delete_ref(self, ref: str, old: Sha) -> None:
        """Delete ref if it is still at old."""
        self._run("update-ref", "-d", "--", ref, old)

    def set_symbolic_head(self, ref: str) -> None:
        """HEAD names the branch ref (refs/heads/...), without touching files or index."""
        self._run("symbolic-ref", "HEAD", ref)

    def detach_head(self, sha: Sha) -> None:
        """HEAD holds sha itself, without touching files or index."""
        self._run("update-ref", "--no-deref", "HEAD", sha)

    # -- the work tree -----------------------------------------------------------------------
    def is_dirty(self) -> list[str]:
        """Tracked changes (staged or not); untracked files are not dirt."""
        text = self._run("status", "--porcelain", "--untracked-files=no").text
        return [line[3:] for line in text.splitlines() if line.strip()]

    def checkout(self, rev: str) -> str:
        """Switch the work tree to rev (a branch name, or a commit: detached); git's complaints.

        git checkout exits 0 when it could not write a file (an immutable or read-only work
        tree: `error: unable to unlink old '<path>': Operation not permitted`), so what it said
        is returned for the caller that checks the work tree afterwards.
        """
        return self._run("checkout", "-q", rev, "--").stderr

    def reset_hard(self) -> None:
        """Index and tracked files back to HEAD; untracked files stay."""
        self._run("reset", "-q", "--hard", "HEAD")

    def add_all_and_commit(self, message: str, who: Identity, date: str) -> Sha:
        """Stage everything in the work tree and commit it as who, at date (the miniature)."""
        self._run("add", "-A")
        self._run("commit", "-q", "--no-verify", "-m", message, env=identity_env(who, who, date, date))
        return Sha(self._out("rev-parse", "HEAD"))

    def stage_all(self) -> None:
        """Stage everything in the work tree (make lint's workspace: the series' files as added)."""
        self._run("add", "-A")

    def tag(self, name: str, rev: str = "HEAD") -> None:
        self._run("tag", "--", name, rev)

    # -- worktrees -----------------------------------------------------------------------------
    def worktrees(self) -> str:
        """The registered worktrees, as `git worktree list --porcelain -z` says them."""
        return self._run("worktree", "list", "--porcelain", "-z").text

    def checked_out_elsewhere(self, listing: str | None = None) -> dict[str, Path]:
        """The branches the repository's other worktrees have checked out (an unborn one too),
        each with that worktree's path; read from listing (worktrees()'s text) when given.

        Deleting or moving such a branch leaves that worktree on a branch that is gone (every
        file staged as added) or with files that no longer match its HEAD (#24 item 4)."""
        me = self.path.resolve()
        out: dict[str, Path] = {}
        path, branch = None, None
        for field in (self.worktrees() if listing is None else listing).split("\0"):
            if field.startswith("worktree "):
                path = Path(field[len("worktree "):])
            elif field.startswith("branch "):
                branch = field[len("branch "):]
            elif not field:  # the end of one worktree's record
                if path is not None and branch and path.resolve() != me:
                    out.setdefault(branch, path)
                path, branch = None, None
        return out

    def worktree_add(self, path: Path, rev: str) -> RefsMixin:
        """A detached worktree of rev at path (a Repo)."""
        self._run("worktree", "add", "-q", "--detach", str(path), rev)
        return type(self)(path)  # type: ignore[call-arg]

    def worktree_remove(self, path: Path) -> None:
        self._run("worktree", "remove", "--force", str(path))

    def worktree_prune(self) -> None:
        self._run("worktree", "prune")

    # -- history -------------------------------------------------------------------------------
    def commits(self, *rev_args: str) -> list[Sha]:
        """Commits of a range (e.g. 'base..branch', or 'tip --not --remotes'), oldest first."""
        return [Sha(s) for s in self._out("rev-list", "--reverse", "--topo-order", *rev_args).splitlines() if s]

    def log_paths(self, rev: str, paths: Iterable[str], limit: int) -> list[Sha]:
        """The newest `limit` commits from rev that touch paths, newest first."""
        out = self._out("log", f"-n{limit}", "--format=%H", rev, "--", *paths)
        return [Sha(s) for s in out.splitlines() if s]

    def changed_paths(self, rev: str, other: str | None = None) -> list[str]:
        """Paths a commit changes (against its parent), or that differ between rev and other."""
        args = ["diff-tree", "-r", "--name-only", "-z", "--no-commit-id", rev] + ([other] if other else [])
        return sorted(p for p in self._run(*args).text.split("\0") if p)

    def added_paths(self, rev: str, other: str) -> list[str]:
        """Paths that other has and rev does not (what checking out other would create)."""
        out = self._run("diff-tree", "-r", "--name-only", "-z", "--no-commit-id", "--diff-filter=A", rev, other).text
        return sorted(p for p in out.split("\0") if p)

    def failing_filter(self, rev: str, other: str) -> tuple[str, str] | None:
        """The first path that checking out other over rev would write through a filter that
        fails (a required git-lfs smudge without git-lfs), with git's words; None when none does.

        git checkout deletes such a file and stops half-way, and restoring fails on the same
        filter (#17 item 8), so the filters run first, on content only: `cat-file --filters`
        smudges a blob to stdout without touching the work tree.
        """
        paths = [p for p in self._run("diff-tree", "-r", "--name-only", "-z", "--no-commit-id", "--diff-filter=d",
                                      rev, other).text.split("\0") if p]
        if not paths:
            return None
        fields = self._run("check-attr", "-z", "filter", "--", *paths).text.split("\0")
        for path, _attr, value in zip(fields[0::3], fields[1::3], fields[2::3]):
            if value in ("unspecified", "unset"):
                continue
            res = self._run("cat-file", "--filters", f"{other}:{path}", check=False)
            if res.returncode:
                said = [line for line in res.stderr.splitlines() if line.strip()]
                return path, (said[-1] if said else f"exit {res.returncode}").removeprefix("fatal: ").removeprefix(f"{path}: ")
        return None

    def is_tracked(self, path: str) -> bool:
        """Whether the index has path."""
        return bool(self._run("--literal-pathspecs", "ls-files", "-z", "--", path).text.strip("\0"))

    def force_checkout(self, rev: str) -> None:
        """Check out rev, overwriting tracked files (a generated repository, never a user's)."""
        self._run("checkout", "-q", "-f", rev, "--")

    # -- a git am session left for the user (make apply THREEWAY=keep) -------------------------
    def am_three_way(self, patches: Sequence[Path]) -> tuple[bool, str]:
        """`git am -3` of the patch files onto HEAD: (every patch applied, git's words).

        --keep-non-patch: only `[PATCH n/m]` leaves a subject (a plain am stripped upstream's
        `[#19514][fix]` too); the rest pins what the user's am.* and apply.* config would
        change in the commits (a Message-Id, a scissors line, whitespace fixed)."""
        if not patches:  # git am with no file reads its standard input
            raise ValueError("git am -3 of no patch")
        res = self._run("am", "-3", "--keep-non-patch", "--no-message-id", "--no-scissors", "--whitespace=nowarn",
                        "--no-gpg-sign", "--quiet", "--", *map(str, patches), check=False)
        return res.returncode == 0, (res.stderr + "\n" + res.text).strip()

    def am_in_progress(self) -> bool:
        """Whether a git am session is under way in this worktree (git's own test: rebase-apply/applying)."""
        return self.git_path("rebase-apply/applying").is_file()  # type: ignore[attr-defined]

    def am_position(self) -> tuple[int, int]:
        """(the patch the session stopped at, how many it has), 1-based; (0, 0) when none."""
        try:
            folder = self.git_path("rebase-apply")  # type: ignore[attr-defined]
            return int((folder / "next").read_text()), int((folder / "last").read_text())
        except (OSError, ValueError):
            return 0, 0

    def am_abort(self) -> None:
        """Give up a git am session: HEAD, index and files back to where it started. When
        git cannot (its record half written by a kill), the session is dropped (--quit) and
        index and files are reset to HEAD."""
        res = self._run("am", "--abort", check=False)
        if res.returncode != 0 or self.am_in_progress():
            self._run("am", "--quit", check=False)
            folder = self.git_path("rebase-apply")  # type: ignore[attr-defined]
            if folder.exists():  # so half written that --quit did not recognise it
                shutil.rmtree(folder)
            self._run("reset", "-q", "--hard", "HEAD")

    def unmerged_paths(self) -> list[str]:
        """The paths the index holds in conflict (stages 1-3), each once."""
        out = self._run("ls-files", "-u", "-z").text
        return sorted({rec.split("\t", 1)[1] for rec in out.split("\0") if "\t" in rec})


def ref_candidates(ref: str) -> list[str]:
    """Where a target's ref may live in a checkout: tag, remote-tracking branch, local branch."""
    if ref.startswith("refs/"):
        return [ref]
    return [f"refs/tags/{ref}", f"refs/remotes/origin/{ref}", f"refs/heads/{ref}"]


def short_ref(ref: str) -> str:
    """refs/heads/x, refs/tags/x, refs/remotes/origin/x -> x (the name a person types)."""
    for prefix in ("refs/heads/", "refs/tags/", "refs/remotes/origin/", "refs/remotes/"):
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref


def fetch_command(repo: "RefsMixin", ref: str, url: str) -> str:
    """The git command that brings a target's ref into the checkout where resolve_target_ref
    finds it, as the user runs it: from origin, or from url when the checkout has no origin.

    `git fetch origin <tag>` leaves no tag behind in a clone made with --no-tags (only
    FETCH_HEAD), and without origin no remote-tracking ref is written at all: the refspec
    says where the ref lands. A ref named like upstream's release tags (v1.3.0rc25) is
    fetched as a tag; any other name as a branch."""
    remote = url if url and not repo.config_get("remote.origin.url") else "origin"  # type: ignore[attr-defined]
    if ref.startswith("refs/"):
        spec = [f"{ref}:{ref}"]
    elif _RELEASE_TAG.match(ref):
        spec = ["tag", ref]
    else:
        spec = [f"{ref}:refs/remotes/origin/{ref}"]
    return repo.user_command("fetch", remote, *spec)  # type: ignore[attr-defined]


_RELEASE_TAG = re.compile(r"^v[0-9]")


def resolve_target_ref(repo: "RefsMixin", ref: str, url: str = "") -> tuple[str, Sha]:
    """Where the target's ref is in this checkout, and its commit; NotFound with the command
    that fetches it (from url when the checkout has no origin)."""
    found = repo.rev_parse_many(ref_candidates(ref))  # type: ignore[attr-defined]
    for cand, sha in found.items():
        if sha:
            return cand, sha
    raise NotFound(f"{ref} is not in {repo.path}; run: {fetch_command(repo, ref, url)}")


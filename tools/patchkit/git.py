"""The git facade: the one way this package talks to git, built on GitPython.

- `git.Repo` (GitPython) is the repository; its object database (GitCmdObjectDB) reads blobs,
  trees and commits through ONE persistent `git cat-file --batch` process per repository,
  instead of a `git show` per file (git-revise's odb.py does the same by hand).
- Porcelain and plumbing commands go through GitPython's command runner (`Git.execute`),
  with our environment policy: no prompts, no editor, no pager, LC_ALL=C; the inherited
  variables that would point git at another repository (GIT_DIR, GIT_INDEX_FILE, ... as set
  inside a hook) are removed, while transport and identity settings (GIT_SSH_COMMAND,
  GIT_ASKPASS, GIT_SSL_CAINFO, GIT_CONFIG_*, GIT_AUTHOR_*, ...) are the user's and are kept.
- Every exit code is checked: a failing command raises GitError (command, exit code, git's
  own message); git missing raises ToolMissing. Content is bytes, so that files that are not
  UTF-8 survive a 3-way merge.

Where GitPython has no API for an operation (apply --cached, format-patch, archive,
interpret-trailers, merge-file, sparse-checkout, fast-import, worktree ...), the facade calls
that git command through GitPython's runner, so environment and errors stay uniform. Never
os.chdir, never a shell. No other module imports GitPython or runs git (tests/test_house.py).
"""
from __future__ import annotations

import contextlib
import io
import os
import shlex
import signal
import threading
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NewType

# Without git on PATH, GitPython's import would fail; we say "git is missing" at the first call.
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")

import git as gitpy  # noqa: E402  (GitPython)
from git.exc import GitCommandError, GitCommandNotFound, InvalidGitRepositoryError, NoSuchPathError  # noqa: E402
from git.objects.util import altz_to_utctz_str  # noqa: E402
from gitdb import IStream  # noqa: E402
from gitdb.util import hex_to_bin  # noqa: E402

from . import identity, progress  # noqa: E402
from .errors import CommandError, NotFound, ToolMissing  # noqa: E402

Sha = NewType("Sha", str)

ZERO = Sha("0" * 40)
LOCAL_UPLOAD_PACK = "git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack"

# Variables that make git work on another repository, index or object store than the one we
# name (git rev-parse --local-env-vars, plus a few of the same kind). Inside a hook or a
# `git rebase -x` they are set for the outer repository; they must not reach our commands.
_REDIRECTS = frozenset({
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_NAMESPACE",
    "GIT_QUARANTINE_PATH", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS",
})
# Forced for every git child: never wait for a person, never page, messages we can parse.
POLICY = {"GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "false", "GIT_SEQUENCE_EDITOR": "false",
          "GIT_PAGER": "cat", "PAGER": "cat", "LC_ALL": "C", "LANGUAGE": "C", "GIT_OPTIONAL_LOCKS": "0"}


class GitError(CommandError):
    """A git command failed: its command line, exit code and git's own message."""


@contextlib.contextmanager
def _without_redirects() -> Iterator[None]:
    # GitPython builds each child's environment from os.environ and can add variables but
    # not remove them; so the redirecting ones are out of os.environ while a child starts.
    # Git commands run on one thread here, so the window is not shared.
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k in _REDIRECTS}
    try:
        yield
    finally:
        os.environ.update(saved)


class _Git(gitpy.Git):
    """GitPython's command runner with our environment policy."""

    def __init__(self, working_dir: str | os.PathLike | None = None) -> None:
        super().__init__(working_dir)
        self.update_environment(**POLICY)

    def execute(self, command, *args, **kwargs):  # type: ignore[override]
        with _without_redirects():
            return super().execute(command, *args, **kwargs)


class _GitPythonRepo(gitpy.Repo):
    """git.Repo whose command runner, and so whose cat-file process, follows our policy."""

    GitCommandWrapperType = _Git


@dataclass(frozen=True)
class Result:
    cmd: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        """stdout as text, without the final newline (git's own output is UTF-8 or ASCII)."""
        return self.stdout.decode("utf-8", "surrogateescape").removesuffix("\n")


def _call(runner: _Git, args: Sequence[str], *, env: Mapping[str, str] | None = None,
          input: str | bytes | None = None, check: bool = True, timeout: float | None = None) -> Result:
    """Run `git args` through GitPython's runner; GitError when it fails and check is set."""
    cmd = ["git", *[str(a) for a in args]]
    kwargs: dict = {"with_extended_output": True, "with_exceptions": False, "stdout_as_string": False,
                    "strip_newline_in_stdout": False}
    if env:
        kwargs["env"] = dict(env)
    with contextlib.ExitStack() as stack:
        if input is not None:
            # GitPython hands stdin to Popen as a file; a temporary file avoids pipe deadlocks.
            data = input.encode("utf-8", "surrogateescape") if isinstance(input, str) else input
            stream = stack.enter_context(tempfile.TemporaryFile())
            stream.write(data)
            stream.seek(0)
            kwargs["istream"] = stream
        try:
            if timeout is None:
                status, out, err = runner.execute(cmd, **kwargs)
            else:
                status, out, err = _execute_with_deadline(runner, cmd, kwargs, timeout)
        except GitCommandNotFound as exc:
            raise ToolMissing("git is not installed or not on PATH") from exc
        except GitCommandError as exc:  # with_exceptions=False: only a failure to start or a timeout
            raise GitError(cmd, exc.status if isinstance(exc.status, int) else -1, "", str(exc.stderr),
                           runner._working_dir) from exc
    result = Result(tuple(cmd), status, out or b"", err or "")
    if check and status != 0:
        raise GitError(cmd, status, result.stdout.decode("utf-8", "replace"), result.stderr,
                       None if runner._working_dir is None else str(runner._working_dir))
    return result


def _execute_with_deadline(runner: _Git, cmd: list[str], kwargs: dict, timeout: float) -> tuple[int, bytes, str]:
    """execute, with the process tree killed after timeout seconds.

    Not GitPython's kill_after_timeout: its watchdog is a non-daemon Timer that nothing
    cancels when the wait is interrupted, so after Ctrl-C during a clone the process said
    'interrupted' and then hung for the whole timeout (30 minutes) before it could exit."""
    child = runner.execute(cmd, as_process=True, istream=kwargs.get("istream"), env=kwargs.get("env"))
    expired = threading.Event()
    timer = threading.Timer(timeout, lambda: (expired.set(), _kill_tree(child.proc.pid)))
    timer.daemon = True
    timer.start()
    try:
        out, err = child.proc.communicate()
    finally:
        timer.cancel()
    status = child.proc.returncode
    if expired.is_set():
        err = f"git did not complete in {timeout:g} s (PATCHKIT_NETWORK_TIMEOUT)".encode()
    return status, out or b"", (err or b"").decode("utf-8", "replace").rstrip("\n")


def run_git(*args: str, cwd: str | os.PathLike | None = None, input: str | bytes | None = None,
            check: bool = True, timeout: float | None = None) -> Result:
    """A git command outside any repository (clone, init, ls-remote)."""
    return _call(_Git(cwd), args, input=input, check=check, timeout=timeout)


def check_ref_format(ref: str) -> bool:
    """Whether git accepts ref as a full ref name, and it cannot be read as an option."""
    if not ref or ref.startswith("-") or len(ref) > 1000 or any(ord(c) < 32 for c in ref):
        return False
    return run_git("check-ref-format", ref, check=False).returncode == 0


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


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


def identity_env(author: Identity, committer: Identity, author_date: str | None = None,
                 committer_date: str | None = None) -> dict[str, str]:
    env = {"GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
           "GIT_COMMITTER_NAME": committer.name, "GIT_COMMITTER_EMAIL": committer.email}
    if author_date:
        env["GIT_AUTHOR_DATE"] = author_date
    if committer_date:
        env["GIT_COMMITTER_DATE"] = committer_date
    return env


class Repo:
    """A repository (its work tree when it has one) at a path."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._runner = _Git(self.path)
        self._gitpython: _GitPythonRepo | None = None

    def user_command(self, *args: str) -> str:
        """A git command line for the user to run on this checkout, as a hint says it."""
        return shlex.join(["git", "-C", str(self.path), *args])

    @staticmethod
    def open(path: str | os.PathLike) -> "Repo":
        """A Repo for an existing work tree; NotFound when path is not one."""
        p = Path(path)
        if not p.is_dir():
            raise NotFound(f"{p} does not exist")
        res = run_git("rev-parse", "--show-toplevel", cwd=p, check=False)
        if res.returncode != 0:
            raise NotFound(f"{p} is not a git checkout")
        top = Path(res.text.strip())
        if top.resolve() != p.resolve():
            raise NotFound(f"{p} is inside the checkout {top}; give its top directory")
        return Repo(p)

    # -- the two ways in: GitPython's repository (objects) and its command runner ----------
    @property
    def _repo(self) -> _GitPythonRepo:
        if self._gitpython is None:
            try:
                self._gitpython = _GitPythonRepo(self.path)
            except (InvalidGitRepositoryError, NoSuchPathError) as exc:
                raise NotFound(f"{self.path} is not a git repository") from exc
        return self._gitpython

    def close(self) -> None:
        """Stop the persistent cat-file processes (they also stop when the Repo is collected)."""
        if self._gitpython is not None:
            self._gitpython.close()
            self._gitpython = None

    def _run(self, *args: str, env: Mapping[str, str] | None = None, input: str | bytes | None = None,
             check: bool = True, timeout: float | None = None) -> Result:
        return _call(self._runner, args, env=env, input=input, check=check, timeout=timeout)

    def _out(self, *args: str, env: Mapping[str, str] | None = None, input: str | bytes | None = None) -> str:
        return self._run(*args, env=env, input=input).text.strip()

    # -- where things are ------------------------------------------------------------------
    def git_path(self, name: str) -> Path:
        """A path inside the repository's git directory (shared across worktrees)."""
        common = Path(self._out("rev-parse", "--git-common-dir"))
        if not common.is_absolute():
            common = self.path / common
        return common / name

    def index_path(self) -> Path:
        p = Path(self._out("rev-parse", "--git-path", "index"))
        return p if p.is_absolute() else self.path / p

    # -- refs --------------------------------------------------------------------------------
    def rev_parse(self, rev: str) -> Sha | None:
        """The commit rev names, or None when it names none."""
        res = self._run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False)
        if res.returncode == 0:
            return Sha(res.text.strip())
        if res.returncode == 1 and not res.stderr.strip():
            return None  # --quiet: exit 1 and silence mean "no such commit"
        raise GitError(list(res.cmd), res.returncode, res.text, res.stderr, str(self.path))

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

    def checkout(self, rev: str) -> None:
        """Switch the work tree to rev (a branch name, or a commit: detached)."""
        self._run("checkout", "-q", rev, "--")

    def reset_hard(self) -> None:
        """Index and tracked files back to HEAD; untracked files stay."""
        self._run("reset", "-q", "--hard", "HEAD")

    def add_all_and_commit(self, message: str, who: Identity, date: str) -> Sha:
        """Stage everything in the work tree and commit it as who, at date (the miniature)."""
        self._run("add", "-A")
        self._run("commit", "-q", "--no-verify", "-m", message, env=identity_env(who, who, date, date))
        return Sha(self._out("rev-parse", "HEAD"))

    def tag(self, name: str, rev: str = "HEAD") -> None:
        self._run("tag", "--", name, rev)

    def config_get(self, key: str) -> str:
        """A config value, '' when unset."""
        res = self._run("config", "--get", key, check=False)
        if res.returncode == 0:
            return res.text.strip()
        if res.returncode == 1:
            return ""
        raise GitError(list(res.cmd), res.returncode, res.text, res.stderr, str(self.path))

    def config_set(self, key: str, value: str) -> None:
        self._run("config", key, value)

    def identity(self) -> Identity | None:
        """The identity the user configured (GIT_COMMITTER_* or user.name/user.email), else None.

        Never git's guess from the host name: a sign-off or a commit must not carry an
        identity nobody chose.
        """
        name_env, email_env = os.environ.get("GIT_COMMITTER_NAME"), os.environ.get("GIT_COMMITTER_EMAIL")
        name = name_env or self.config_get("user.name")
        email = email_env or self.config_get("user.email")
        if not (name and email):
            return None
        source = " and ".join(("GIT_COMMITTER_NAME" if name_env else "git config user.name",
                               "GIT_COMMITTER_EMAIL" if email_env else "git config user.email"))
        return Identity(*identity.check(name, email, source))  # one line, no control characters

    # -- worktrees -----------------------------------------------------------------------------
    def worktrees(self) -> str:
        """The registered worktrees, as `git worktree list --porcelain` says them."""
        return self._run("worktree", "list", "--porcelain").text

    def worktree_add(self, path: Path, rev: str) -> "Repo":
        """A detached worktree of rev at path."""
        self._run("worktree", "add", "-q", "--detach", str(path), rev)
        return Repo(path)

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

    def is_shallow(self) -> bool:
        return self._out("rev-parse", "--is-shallow-repository") == "true"

    # -- fetching on demand: one commit's worth, never the history between -----------------------
    def is_partial(self) -> bool:
        """A partial clone: origin promises the objects left out, and lazily fetches them."""
        return self.config_get("remote.origin.promisor") == "true"

    def present_commit(self, rev: str) -> Sha | None:
        """The commit rev names if it is here, without fetching it: in a partial clone,
        rev-parse of a missing commit id fetches it lazily, with all of its history."""
        res = self._run("rev-list", "-n1", "--no-walk", "--missing=allow-any", "--end-of-options", rev, check=False)
        return Sha(res.text.strip()) if res.returncode == 0 and res.text.strip() else None

    def fetch_commit(self, rev: str) -> Sha | None:
        """Make rev (a commit id, or a tag or branch name on origin) present with its trees.

        In a shallow clone it comes at depth 1, with the clone's filter: one commit and the
        trees that differ from what is here, not the history in between. None when origin
        has no such commit (or there is no origin).
        """
        have = self.present_commit(rev)
        if have is not None or not self.config_get("remote.origin.url"):
            return have
        args = ["fetch", "--no-tags", "--no-write-fetch-head"] + (["--depth", "1"] if self.is_shallow() else [])
        filt = self.config_get("remote.origin.partialclonefilter")
        if filt:
            args.append(f"--filter={filt}")
        # A name is fetched into FETCH_HEAD's place below refs/patchkit/ only for the moment of
        # reading its id: the user's refs are not ours to add to.
        tmp = "refs/patchkit/fetched"
        res = _transfer(self._runner, [*args, "origin", f"+{rev}:{tmp}"], f"fetching {rev} (one commit)", check=False)
        if res.returncode != 0:
            return None
        sha = self.present_commit(tmp)
        self._run("update-ref", "-d", tmp)
        return sha

    def deepen(self, commits: int) -> bool:
        """commits more of history behind a shallow clone's edge; False when there is no more."""
        before = self._out("rev-list", "--count", "--all")
        res = _transfer(self._runner, ["fetch", "--no-tags", f"--deepen={commits}", "origin"],
                        f"fetching {commits} more commits of history", check=False)
        return res.returncode == 0 and self._out("rev-list", "--count", "--all") != before

    def fetch_ref(self, ref: str) -> bool:
        """A ref that a single-ref clone lacks, at depth 1 in a shallow one, under the name a
        clone of it would give it (refs/tags/x or refs/remotes/origin/x); False when origin has none."""
        listed = self._run("ls-remote", "origin", f"refs/tags/{ref}", f"refs/heads/{ref}", check=False)
        names = [line.split("\t", 1)[1] for line in listed.text.splitlines() if "\t" in line]
        if listed.returncode != 0 or not names:
            return False
        name = min(names)  # refs/heads/ sorts before refs/tags/; a tag wins over a branch, as in ref_candidates
        name = next((n for n in names if n.startswith("refs/tags/")), name)
        local = name if name.startswith("refs/tags/") else "refs/remotes/origin/" + name[len("refs/heads/"):]
        args = ["fetch", "--no-tags"] + (["--depth", "1"] if self.is_shallow() else [])
        return _transfer(self._runner, [*args, "origin", f"+{name}:{local}"], f"fetching {ref}",
                         check=False).returncode == 0

    def sparse_patterns(self) -> set[str]:
        """The sparse checkout's patterns; empty when the checkout is not sparse."""
        if self._run("config", "--bool", "core.sparseCheckout", check=False).text.strip() != "true":
            return set()
        return {ln.strip() for ln in self._run("sparse-checkout", "list").text.splitlines() if ln.strip()}

    def sparse_checkout_add(self, paths: Iterable[str]) -> None:
        """Widen a sparse checkout by these paths (non-cone patterns, anchored at the top)."""
        if self._run("config", "--bool", "core.sparseCheckout", check=False).text.strip() != "true":
            return
        self._run("sparse-checkout", "add", "--stdin", input="".join(f"/{p}\n" for p in sorted(set(paths))))

    def object_stats(self) -> "ObjectStats":
        """What the object store holds: objects, their bytes as packed or loose, and the packs'
        bytes (in a clone, what was received: git stores fetched packs as they arrive)."""
        kv = dict(line.split(": ", 1) for line in self._out("count-objects", "-v").splitlines() if ": " in line)
        packs = sorted(self.git_path("objects/pack").glob("*.pack"))
        return ObjectStats(int(kv.get("in-pack", 0)), sum(p.stat().st_size for p in packs), len(packs),
                           int(kv.get("count", 0)))

    def commit_objects(self, rev: str, paths: Iterable[str] = ()) -> list[str]:
        """The objects a checkout of rev needs at the least: the commit, all of its trees, and
        the blobs at paths, files or directories (the limit a one-commit fetch can reach)."""
        out = self._run("ls-tree", "-r", "-t", "-z", rev).text
        trees = [rec.split(" ")[2].split("\t")[0] for rec in out.split("\0") if rec and rec.split(" ")[1] == "tree"]
        want = tuple(paths)
        blobs = [meta.split(" ")[2] for meta, _, name in (rec.partition("\t") for rec in out.split("\0") if rec)
                 if meta.split(" ")[1] == "blob" and any(name == p or name.startswith(p + "/") for p in want)]
        return [self._out("rev-parse", f"{rev}^{{commit}}"), self._out("rev-parse", f"{rev}^{{tree}}"), *trees, *blobs]

    def packed_size(self, objects: Sequence[str]) -> int:
        """The bytes of one pack holding exactly these objects, as a server would send them."""
        return len(self._run("pack-objects", "--stdout", input="".join(f"{o}\n" for o in objects)).stdout)

    def commit_info(self, rev: str) -> CommitInfo:
        """Parents, author, committer, tree and message of a commit, from the object database."""
        with self._objects(f"cat-file commit {rev}"):
            c = self._repo.commit(rev)
            c.tree  # noqa: B018 - read now, inside the error boundary
        return CommitInfo(Sha(c.hexsha), Sha(c.tree.hexsha), tuple(Sha(p.hexsha) for p in c.parents),
                          Identity(c.author.name or "", c.author.email or ""),
                          f"{c.authored_date} {altz_to_utctz_str(c.author_tz_offset)}",
                          Identity(c.committer.name or "", c.committer.email or ""),
                          c.message if isinstance(c.message, str) else c.message.decode("utf-8", "replace"))

    def changed_paths(self, rev: str, other: str | None = None) -> list[str]:
        """Paths a commit changes (against its parent), or that differ between rev and other."""
        args = ["diff-tree", "-r", "--name-only", "-z", "--no-commit-id", rev] + ([other] if other else [])
        return sorted(p for p in self._run(*args).text.split("\0") if p)

    def added_paths(self, rev: str, other: str) -> list[str]:
        """Paths that other has and rev does not (what checking out other would create)."""
        out = self._run("diff-tree", "-r", "--name-only", "-z", "--no-commit-id", "--diff-filter=A", rev, other).text
        return sorted(p for p in out.split("\0") if p)

    def is_tracked(self, path: str) -> bool:
        """Whether the index has path."""
        return bool(self._run("--literal-pathspecs", "ls-files", "-z", "--", path).text.strip("\0"))

    # -- objects: one cat-file --batch process (GitPython's GitCmdObjectDB) -------------------
    def ls_tree(self, rev: str, path: str = "", recursive: bool = True) -> list[tuple[str, str, str]]:
        """(mode, type, path) entries under path at rev, read from trees only (no blobs needed)."""
        args = ["ls-tree", "--full-tree", "-z"] + (["-r"] if recursive else []) + [rev]
        if path:
            args += ["--", path]
        rows = []
        for rec in self._run(*args).text.split("\0"):
            if not rec:
                continue
            meta, name = rec.split("\t", 1)
            mode, typ, _ = meta.split(" ")
            rows.append((mode, typ, name))
        return rows

    def read_blob(self, sha: str) -> bytes:
        """A blob's bytes, by id (lazily fetched in a blobless clone)."""
        with self._objects(f"cat-file blob {sha}"):
            return self._repo.odb.stream(hex_to_bin(sha)).read()

    @contextlib.contextmanager
    def _objects(self, what: str) -> Iterator[None]:
        """GitPython's object database raises its own errors when its git process fails (a
        ValueError for an empty answer, GitCommandError, a broken pipe): they become GitError,
        so that a failing git is one line and never 'internal error'. The persistent process
        is dropped, to be started afresh on the next read."""
        try:
            yield
        except (ValueError, GitCommandError, OSError, AssertionError) as exc:
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
        except (GitCommandError, OSError, AssertionError):
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
        """Store data as a blob (a loose object, written by GitPython itself); its id."""
        with self._objects("hash-object -w --stdin"):
            stream = self._repo.odb.store(IStream("blob", len(data), _BytesReader(data)))
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
        with tempfile.TemporaryDirectory(prefix="patchkit-index-") as tmp:
            index = Index(self, Path(tmp) / "index")
            index.read_tree(rev)
            yield index

    # -- text operations git owns ---------------------------------------------------------------
    def add_trailer(self, message: str, trailer: str) -> str:
        """message with the trailer added unless an identical one is there (interpret-trailers)."""
        return self._run("interpret-trailers", "--if-exists", "addIfDifferent", "--trailer", trailer,
                         input=message.rstrip("\n") + "\n").text.strip() + "\n"

    def trailers(self, message: str) -> list[tuple[str, str]]:
        """(key, value) of each trailer of message, as git parses them."""
        out = self._run("interpret-trailers", "--parse", input=message).text
        return [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in out.splitlines()) if k]

    def merge_file(self, ours: bytes, base: bytes, theirs: bytes) -> tuple[bytes, int]:
        """A 3-way merge of three versions of a file: (merged bytes, number of conflicts)."""
        with tempfile.TemporaryDirectory(prefix="patchkit-merge-") as tmp:
            files = []
            for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                p = Path(tmp) / name
                p.write_bytes(data)
                files.append(str(p))
            res = self._run("merge-file", "-p", *files, check=False)
        if res.returncode < 0 or res.returncode > 127:  # merge-file: exit n = n conflicts
            raise GitError(list(res.cmd), res.returncode, "", res.stderr, str(self.path))
        return res.stdout, res.returncode

    def format_series(self, rev_range: str, out_dir: Path) -> list[Path]:
        """The commits of rev_range as patch files in out_dir, the same bytes for the same commits.

        No commit ids (--zero-commit), no diffstat, no signature; the user's prefix settings are
        pinned, so that an exported set does not depend on whoever exports it.
        """
        out_dir.mkdir(parents=True, exist_ok=True)
        before = set(out_dir.iterdir())
        self._run("-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false", "format-patch", "-q",
                  "--zero-commit", "--no-signature", "--no-stat", "-o", str(out_dir), rev_range)
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

    def prefetch(self, shas: Iterable[str]) -> None:
        """In a partial clone, fetch the objects among shas that are not here, in one batch
        (git's own lazy fetch would fetch them one process at a time)."""
        if not self.is_partial():
            return
        present = set(self._run("cat-file", "--batch-all-objects", "--batch-check=%(objectname)").text.split())
        missing = sorted(set(shas) - present)
        if missing:
            # As git's lazy fetch does: no negotiation (we hold the commits these blobs are in,
            # so the server would think we have them), the clone's filter, no tags.
            _transfer(self._runner, ["fetch", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
                                     f"--filter={self.config_get('remote.origin.partialclonefilter') or 'blob:none'}",
                                     "origin", *missing],
                      f"fetching {len(missing)} file(s) of the set", config=["fetch.negotiationAlgorithm=noop"])

    def fast_import(self, stream: str | bytes) -> None:
        # Blobs over 1 MiB (generated binaries) are stored without trying to delta them.
        self._run("fast-import", "--quiet", "--big-file-threshold=1m", input=stream)

    def force_checkout(self, rev: str) -> None:
        """Check out rev, overwriting tracked files (a generated repository, never a user's)."""
        self._run("checkout", "-q", "-f", rev, "--")

    def sparse_checkout(self, paths: Iterable[str]) -> None:
        """Only these paths in the work tree (non-cone patterns, anchored at the top)."""
        self._run("sparse-checkout", "set", "--no-cone", "--stdin",
                  input="".join(f"/{p}\n" for p in sorted(set(paths))))


class _BytesReader:
    """The read() gitdb's IStream wants, over bytes."""

    def __init__(self, data: bytes) -> None:
        self._data, self._pos = data, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self._data) if size < 0 else self._pos + size
        chunk = self._data[self._pos:end]
        self._pos += len(chunk)
        return chunk


class Index:
    """A private index file (GIT_INDEX_FILE): trees are built here, never in a user's index."""

    def __init__(self, repo: Repo, path: Path) -> None:
        self.repo = repo
        self.path = path
        self._env = {"GIT_INDEX_FILE": str(path)}

    def _run(self, *args: str, input: str | bytes | None = None, check: bool = True) -> Result:
        return self.repo._run(*args, env=self._env, input=input, check=check)

    def read_tree(self, rev: str) -> None:
        self._run("read-tree", rev)

    def apply(self, diff: str | bytes, *, check: bool = False, reverse: bool = False,
              verbose: bool = False) -> tuple[bool, str]:
        """Apply diff to the index (git apply --cached); with check, only say whether it would.

        Returns (applies, git's complaint; with verbose also the hunks that apply at an offset).
        Without check, a failure raises GitError.
        """
        args = ["apply", "--cached", "--whitespace=nowarn"] + (["--check"] if check else []) + \
            (["-v"] if verbose else []) + (["--reverse"] if reverse else []) + ["-"]
        res = self._run(*args, input=diff, check=not check)
        return res.returncode == 0, res.stderr

    def read(self, path: str) -> bytes | None:
        """The bytes of path as staged here; None when the index has no such file."""
        out = self._run("--literal-pathspecs", "ls-files", "-s", "-z", "--", path).text
        for rec in out.split("\0"):
            meta, _, name = rec.partition("\t")
            if name == path:
                return self.repo.read_blob(meta.split(" ")[1])
        return None

    def add(self, path: str, data: bytes, mode: str = "100644") -> None:
        """Stage data at path."""
        blob = self.repo.write_blob(data)
        self._run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")

    def remove(self, path: str) -> None:
        self._run("update-index", "--force-remove", "--", path)

    def write_tree(self) -> Sha:
        # --missing-ok: in a blobless clone, checking every blob would fetch them all.
        return Sha(self._run("write-tree", "--missing-ok").text.strip())


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


def resolve_target_ref(repo: Repo, ref: str) -> tuple[str, Sha]:
    for cand in ref_candidates(ref):
        sha = repo.rev_parse(cand)
        if sha:
            return cand, sha
    raise NotFound(f"{ref} is not in {repo.path}; run: git -C {repo.path} fetch origin {ref}")


def init(path: Path, branch: str = "main", bare: bool = False) -> Repo:
    """A new repository at path with branch as its unborn HEAD."""
    run_git("init", "-q", *(["--bare"] if bare else []), "-b", branch, str(path))
    return Repo(path)


@dataclass(frozen=True)
class ObjectStats:
    objects: int  # in packs: in a clone, the objects received
    pack_bytes: int  # the packs as received
    packs: int
    loose: int  # objects written here (commits and trees of the series, ...)


def _transfer(runner: _Git, args: Sequence[str], what: str, *, check: bool = True,
              config: Sequence[str] = ()) -> Result:
    """clone or fetch. When progress is shown, git's own progress goes to our stderr as git
    draws it (while its messages are still kept for the error); otherwise git is quiet."""
    pre = [a for c in config for a in ("-c", c)]
    with progress.step(what):
        if not progress.enabled():
            return _call(runner, [*pre, args[0], "-q", *args[1:]], check=check, timeout=network_timeout())
        return _call_showing_progress(runner, [*pre, args[0], "--progress", *args[1:]], check)


def network_timeout() -> float:
    """Seconds a clone or fetch may take (PATCHKIT_NETWORK_TIMEOUT, default 30 minutes):
    a URL that never answers (fd::17, a dead host) must end in an error, not a hang."""
    try:
        return max(1.0, float(os.environ.get("PATCHKIT_NETWORK_TIMEOUT", "1800")))
    except ValueError:
        return 1800.0


def _kill_tree(pid: int) -> None:
    """SIGKILL pid and its descendants (a transport helper would keep git's stderr open)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    for child in children:
        _kill_tree(int(child))
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _call_showing_progress(runner: _Git, args: Sequence[str], check: bool) -> Result:
    cmd = ["git", *[str(a) for a in args]]
    try:
        with _without_redirects():
            child = runner.execute(cmd, as_process=True, with_stdout=False)
    except GitCommandNotFound as exc:
        raise ToolMissing("git is not installed or not on PATH") from exc
    kept = bytearray()
    timer = threading.Timer(network_timeout(), _kill_tree, (child.proc.pid,))
    timer.daemon = True
    timer.start()
    while chunk := child.proc.stderr.read1(65536):
        sys.stderr.buffer.write(chunk)
        sys.stderr.flush()
        kept += chunk
        del kept[:-65536]
    status = child.proc.wait()
    timer.cancel()
    # Progress lines end in CR; keep git's messages for an error, its complaints first, as
    # git says them without --progress (no "Cloning into", no counters).
    lines = [part for line in kept.decode("utf-8", "replace").splitlines()
             for part in [line.rsplit("\r", 1)[-1].strip()] if part and "%" not in part]
    said = [ln for ln in lines if ln.startswith(("fatal:", "error:", "warning:", "hint:"))]
    err = "\n".join(said or [ln for ln in lines if not ln.startswith(("Cloning into", "remote: "))])
    result = Result(tuple(cmd), status, b"", err)
    if check and status != 0:
        raise GitError(cmd, status, "", err, None if runner._working_dir is None else str(runner._working_dir))
    return result


def _as_url(url: str) -> tuple[str, bool]:
    """(url, local): a local path becomes a file:// URL, so that git transfers it as it would
    from a server (a plain path is hard-linked whole, ignoring --depth and --filter)."""
    if "://" not in url and Path(url).exists():
        return Path(url).resolve().as_uri(), True
    return url, url.startswith("file://")


def clone(url: str, dest: Path) -> Repo:
    """A full clone (every object copied, even from a local path)."""
    _transfer(_Git(None), ["clone", "--no-local", url, str(dest)], f"cloning {url} (full)")
    return Repo(dest)


def partial_clone(url: str, dest: Path, ref: str, sparse_paths: Iterable[str], *, depth: int | None = 1,
                  filter: str = "blob:none") -> Repo:
    """One commit of ref (depth 1) with its trees, and only the blobs of sparse_paths.

    History comes later, on demand, and only as much as needed (Repo.fetch_commit, deepen).
    Measured on make bench's generated upstream (15,000 files, 5,000 commits): blob:none at
    depth 1 receives one commit's trees and nothing else, the limit for a checkout; tree:0
    receives no trees at first, but git's lazy fetch of the first missing tree asks for it
    with blob:none, i.e. for all trees below it, one round trip per tree, so it ends with the
    same trees, more slowly. depth=None, filter='blob:none' is the old clone with the ref's
    whole history (make bench compares them).

    A local upstream (a path or file://) is served by an upload-pack that reads only that
    repository's own config, which rarely allows filters: git then silently sends every
    blob. So for local URLs we name an upload-pack that allows them, for the clone and for
    the lazy fetches after it, as GitHub does for everyone.
    """
    url, local = _as_url(url)
    pack = ["--upload-pack", LOCAL_UPLOAD_PACK] if local else []
    shallow = ["--depth", str(depth)] if depth else []
    try:
        _transfer(_Git(None), ["clone", *pack, f"--filter={filter}", *shallow, "--no-checkout", "--single-branch",
                               "--branch", ref, "--", url, str(dest)], f"cloning {ref} from {url}")
    except GitError as exc:
        raise NotFound(f"cannot clone {ref} from {url}: {exc.first_line()}") from exc
    repo = Repo(dest)
    if local:
        repo.config_set("remote.origin.uploadpack", LOCAL_UPLOAD_PACK)
    # The index lists every path of the commit (skip-worktree outside the sparse paths), so it
    # is most of what the clone holds on disk; version 4 prefix-compresses its paths (-40 %).
    repo.config_set("index.version", "4")
    repo.sparse_checkout(sparse_paths)
    with progress.step(f"checking out {ref} (only the set's paths)"):
        repo.checkout(ref)
    return repo

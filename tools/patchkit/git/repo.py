"""Repo, the face of the git facade: a repository at a path, its two ways in (GitPython's
repository for objects, its command runner for commands) and its config. The rest of what a
Repo does lives in its rooms: refs.py (refs, the work tree, worktrees, history), objects.py
(the object reader, blobs, trees, the temporary Index, text operations git owns) and
transfer.py (fetching on demand, partial and sparse checkouts, what the store holds),
history.py (a set's paths through history, for make radar) and changes.py (changes taken
from upstream, for make backport).
"""
from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import identity
from ..errors import NotFound
from .changes import ChangesMixin
from .history import HistoryMixin
from .objects import ObjectsMixin
from .refs import RefsMixin
from .runner import GitError, Identity, Result, GitRunner, _call, gitpython_errors, gitpython_repo, run_git
from .transfer import TransferMixin


_COMMON = "\0common"  # the key of the common directory among the cached paths (no git path has a NUL)


class Repo(RefsMixin, ObjectsMixin, TransferMixin, HistoryMixin, ChangesMixin):
    """A repository (its work tree when it has one) at a path."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._runner = GitRunner(self.path)
        self._gitpython: Any = None  # GitPython's Repo, made (and GitPython imported) on first use
        # Where git keeps this worktree's files and the shared ones, as git said it: it does not
        # change while a command runs, and was asked again by each of them (#34 item 4).
        self._paths: dict[str, Path] = {}

    def user_command(self, *args: str) -> str:
        """A git command line for the user to run on this checkout, as a hint says it."""
        return shlex.join(["git", "-C", str(self.path), *args])

    @staticmethod
    def open(path: str | os.PathLike) -> "Repo":
        """A Repo for an existing work tree; NotFound when path is not one."""
        p = Path(path)
        if not p.is_dir():
            raise NotFound(f"{p} does not exist")
        res = run_git("rev-parse", "--show-toplevel", "--git-common-dir", cwd=p, check=False)
        if res.returncode != 0 and "not a git repository" in res.stderr:
            raise NotFound(f"{p} is not a git checkout")
        if res.returncode != 0:  # git itself died (a broken config, ...): its words, exit 3
            raise GitError(list(res.cmd), res.returncode, res.text, res.stderr, str(p))
        # Two paths, a line each, and a path may hold a newline: the top is p's own when the
        # answer starts with it; the rest, but git's last newline, is the common directory.
        real = str(p.resolve())
        if not res.text.startswith(real + "\n"):
            top = res.text.partition("\n")[0]
            raise NotFound(f"{p} is inside the checkout {top}; give its top directory")
        repo = Repo(p)
        repo._paths[_COMMON] = repo._under(res.text[len(real) + 1:].removesuffix("\n"))
        return repo

    # -- the two ways in: GitPython's repository (objects) and its command runner ----------
    @property
    def _repo(self) -> Any:
        if self._gitpython is None:
            try:
                self._gitpython = gitpython_repo(self.path)
            except gitpython_errors()[1:] as exc:
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
        """A path inside this worktree's git directory, as git itself places it (`--git-path`):
        what belongs to one checkout (index, an apply's record) is the worktree's own; what
        git shares (objects, refs) is in the common directory."""
        if name not in self._paths:
            self._paths[name] = self._under(self._out("rev-parse", "--git-path", name))
        return self._paths[name]

    def common_path(self, name: str) -> Path:
        """A path inside the git directory every worktree of the repository shares (the lock
        that guards the refs they share)."""
        if _COMMON not in self._paths:
            self._paths[_COMMON] = self._under(self._out("rev-parse", "--git-common-dir"))
        return self._paths[_COMMON] / name

    def _under(self, said: str) -> Path:
        """A path git said, relative to this work tree unless absolute."""
        p = Path(said)
        return p if p.is_absolute() else self.path / p

    def index_path(self) -> Path:
        return self.git_path("index")

    def push_command(self, url: str, branch: str) -> str:
        """The git command a user runs to push a branch of this checkout to url (said, not run)."""
        return shlex.join(["git", "-C", str(self.path), "push", url, branch])

    def remote_urls(self) -> list[str]:
        """Every remote's URL (make pr finds the user's fork among them)."""
        res = self._run("config", "--get-regexp", r"^remote\..*\.url$", check=False)
        if res.returncode not in (0, 1):
            raise GitError(list(res.cmd), res.returncode, res.text, res.stderr, str(self.path))
        return [line.split(None, 1)[1] for line in res.text.splitlines() if len(line.split(None, 1)) == 2]

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


def init(path: Path, branch: str = "main", bare: bool = False) -> Repo:
    """A new repository at path with branch as its unborn HEAD."""
    run_git("init", "-q", *(["--bare"] if bare else []), "-b", branch, str(path))
    return Repo(path)

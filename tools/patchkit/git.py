"""The git facade: named operations over a repository path, all through proc.run.

Never os.chdir, never a shell. Children get a non-interactive environment without the
inherited variables that would redirect git to another repository (GIT_DIR, GIT_INDEX_FILE,
... as set inside a hook); identity and date variables are the caller's intent and are kept.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NewType

from . import proc
from .errors import CommandError, NotFound

Sha = NewType("Sha", str)

_KEEP = ("GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_TRACE")
ZERO = Sha("0" * 40)
LOCAL_UPLOAD_PACK = "git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack"


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every git child gets."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith(_KEEP)}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_EDITOR"] = "false"
    env["GIT_PAGER"] = "cat"
    env["LC_ALL"] = "C"
    if extra:
        env.update(extra)
    return env


def git(*args: str, cwd: str | os.PathLike | None = None, env: Mapping[str, str] | None = None,
        input: str | None = None, check: bool = True) -> proc.Result:
    """Run one git command."""
    return proc.run(["git", *args], cwd=cwd, env=clean_env(env), input=input, check=check)


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


class Repo:
    """A repository (its work tree when it has one) at a path."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    # -- plumbing ------------------------------------------------------------------
    def run(self, *args: str, env: Mapping[str, str] | None = None, input: str | None = None,
            check: bool = True) -> proc.Result:
        return git("-C", str(self.path), *args, env=env, input=input, check=check)

    def out(self, *args: str, env: Mapping[str, str] | None = None, input: str | None = None) -> str:
        return self.run(*args, env=env, input=input).stdout.strip()

    @staticmethod
    def open(path: str | os.PathLike) -> "Repo":
        """A Repo for an existing work tree; NotFound when path is not one."""
        p = Path(path)
        if not p.is_dir():
            raise NotFound(f"{p} does not exist")
        res = git("-C", str(p), "rev-parse", "--show-toplevel", check=False)
        if res.returncode != 0:
            raise NotFound(f"{p} is not a git checkout")
        top = Path(res.stdout.strip())
        if top.resolve() != p.resolve():
            raise NotFound(f"{p} is inside the checkout {top}; give its top directory")
        return Repo(p)

    def git_path(self, name: str) -> Path:
        """A path inside the repository's git directory (shared across worktrees)."""
        common = Path(self.out("rev-parse", "--git-common-dir"))
        if not common.is_absolute():
            common = self.path / common
        return common / name

    def index_path(self) -> Path:
        p = Path(self.out("rev-parse", "--git-path", "index"))
        return p if p.is_absolute() else self.path / p

    def rev_parse(self, rev: str) -> Sha | None:
        res = self.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        return Sha(res.stdout.strip()) if res.returncode == 0 else None

    def symbolic_head(self) -> str | None:
        res = self.run("symbolic-ref", "-q", "HEAD", check=False)
        return res.stdout.strip() if res.returncode == 0 else None

    def head(self) -> Sha | None:
        return self.rev_parse("HEAD")

    def refs(self) -> dict[str, Sha]:
        text = self.out("for-each-ref", "--format=%(refname) %(objectname)")
        return {name: Sha(sha) for name, sha in (line.split(" ") for line in text.splitlines() if line)}

    def update_ref(self, ref: str, new: Sha, old: Sha | None, message: str = "patchkit") -> None:
        """Move ref to new only if it is still at old (None: must not exist yet)."""
        self.run("update-ref", "-m", message, ref, new, old if old is not None else ZERO)

    def delete_ref(self, ref: str, old: Sha) -> None:
        self.run("update-ref", "-d", ref, old)

    def is_dirty(self) -> list[str]:
        """Tracked changes (staged or not); untracked files are not dirt."""
        text = self.run("status", "--porcelain", "--untracked-files=no").stdout
        return [line[3:] for line in text.splitlines() if line.strip()]

    def identity(self) -> Identity | None:
        """The identity the user configured (GIT_COMMITTER_* or user.name/user.email), else None.

        Never git's guess from the host name: a sign-off or a commit must not carry an
        identity nobody chose.
        """
        def config(key: str) -> str:
            res = self.run("config", "--get", key, check=False)
            return res.stdout.strip() if res.returncode == 0 else ""
        name = os.environ.get("GIT_COMMITTER_NAME") or config("user.name")
        email = os.environ.get("GIT_COMMITTER_EMAIL") or config("user.email")
        return Identity(name, email) if name and email else None

    def commits(self, *rev_args: str) -> list[Sha]:
        """Commits of a range (e.g. 'base..branch', or 'tip --not --remotes'), oldest first."""
        return [Sha(s) for s in self.out("rev-list", "--reverse", "--topo-order", *rev_args).splitlines() if s]

    def ls_tree(self, rev: str, path: str = "", recursive: bool = True) -> list[tuple[str, str, str]]:
        """(mode, type, path) entries under path at rev, read from trees only (no blobs needed)."""
        args = ["ls-tree", "--full-tree", "-z"]
        if recursive:
            args.append("-r")
        args.append(rev)
        if path:
            args += ["--", path]
        out = self.run(*args).stdout
        rows = []
        for rec in out.split("\0"):
            if not rec:
                continue
            meta, name = rec.split("\t", 1)
            mode, typ, _ = meta.split(" ")
            rows.append((mode, typ, name))
        return rows

    def show_file(self, rev: str, path: str) -> str | None:
        res = self.run("show", f"{rev}:{path}", check=False)
        return res.stdout if res.returncode == 0 else None

    def checkout(self, rev: str) -> None:
        self.run("checkout", "-q", rev)

    def commit_tree(self, tree: str, parent: Sha, message: str, env: Mapping[str, str]) -> Sha:
        return Sha(self.out("commit-tree", tree, "-p", parent, env=env, input=message))

    def log_paths(self, rev: str, paths: Iterable[str], limit: int) -> list[Sha]:
        out = self.out("log", f"-n{limit}", "--format=%H", rev, "--", *paths)
        return [Sha(s) for s in out.splitlines() if s]

    def is_shallow(self) -> bool:
        return self.out("rev-parse", "--is-shallow-repository") == "true"


def ref_candidates(ref: str) -> list[str]:
    """Where a target's ref may live in a checkout: tag, remote-tracking branch, local branch."""
    if ref.startswith("refs/"):
        return [ref]
    return [f"refs/tags/{ref}", f"refs/remotes/origin/{ref}", f"refs/heads/{ref}"]


def resolve_target_ref(repo: Repo, ref: str) -> tuple[str, Sha]:
    for cand in ref_candidates(ref):
        sha = repo.rev_parse(cand)
        if sha:
            return cand, sha
    raise NotFound(f"{ref} is not in {repo.path}; run: git -C {repo.path} fetch origin {ref}")


def partial_clone(url: str, dest: Path, ref: str, sparse_paths: Iterable[str]) -> Repo:
    """A blobless, single-ref clone with only sparse_paths checked out.

    A local upstream (a path or file://) is served by an upload-pack that reads only that
    repository's own config, which rarely allows filters: git then silently sends every
    blob. So for local URLs we name an upload-pack that allows them, for the clone and for
    the lazy blob fetches after it, as GitHub does for everyone.
    """
    local = "://" not in url or url.startswith("file://")
    pack = ["--upload-pack", LOCAL_UPLOAD_PACK] if local else []
    try:
        git("clone", *pack, "-q", "--filter=blob:none", "--no-checkout", "--single-branch",
            "--branch", ref, url, str(dest))
    except CommandError as exc:
        raise NotFound(f"cannot clone {ref} from {url}: {exc.first_line()}") from exc
    repo = Repo(dest)
    if local:
        repo.run("config", "remote.origin.uploadpack", LOCAL_UPLOAD_PACK)
    repo.run("sparse-checkout", "set", "--no-cone", "--stdin",
             input="".join(f"/{p}\n" for p in sorted(set(sparse_paths))))
    repo.run("checkout", "-q", ref)
    return repo

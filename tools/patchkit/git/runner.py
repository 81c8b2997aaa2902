"""The runner core of the git facade: every git command runs here, through the one subprocess
chokepoint (proc.py), with our environment policy, and every exit code is checked. GitPython
is the object database (objects.py: one persistent cat-file --batch), imported when a command
first reads an object: `check` and most commands never do, and importing GitPython cost a
third of their start (it runs `git version` twice as it is imported, #34 item 4).

- Policy: no prompts, no editor, no pager, LC_ALL=C; the inherited variables that would point
  git at another repository (GIT_DIR, GIT_INDEX_FILE, ... as set inside a hook) are removed,
  while transport and identity settings (GIT_SSH_COMMAND, GIT_ASKPASS, GIT_SSL_CAINFO,
  GIT_CONFIG_*, GIT_AUTHOR_*, ...) are the user's and are kept.
- A failing command raises GitError (command, exit code, git's own message); git missing
  raises ToolMissing. Content is bytes, so that files that are not UTF-8 survive a 3-way merge.
- A command with a deadline has its process tree killed when the deadline passes.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NewType

from .. import proc
from ..errors import CommandError

# Without git on PATH, GitPython's import would fail; we say "git is missing" at the first call.
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")

Sha = NewType("Sha", str)

ZERO = Sha("0" * 40)

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


# The user's git config and hooks never reach our results (issue #17). Every git command we
# run gets these `-c` overrides: each setting that shapes what we write or how we read git's
# output, back at git's default; and core.hooksPath at /dev/null, a path under which no hook
# is ever found (nothing to create, nothing a kill could leave behind), so no hook of the
# user's (post-checkout, reference-transaction, post-index-change, ...) runs inside our steps.
# What cannot be reset with -c has its own guard: format.headers/to/cc and format.attach (flags
# of format_series), trailer.* (interpret-trailers runs without any config, objects.py).
# The user's transport, identity, filter (git-lfs), safety and gc settings are theirs.
OVERRIDES = (
    "core.hooksPath=/dev/null", "core.quotePath=true", "core.commentChar=#",
    # the user's own attributes file (~/.config/git/attributes): a diff driver named there, with
    # its diff.<driver>.xfuncname, would rewrite every hunk header we export; the repository's
    # .gitattributes (git-lfs's filters) still apply
    "core.attributesFile=/dev/null",
    # the commits and tags we make (the miniature) are never signed: a gpg that asks or fails
    # must not stop them, and a signature would change their ids
    "commit.gpgSign=false", "tag.gpgSign=false", "tag.forceSignAnnotated=false",
    # what a diff or a patch file looks like
    "diff.context=3", "diff.interHunkContext=0", "diff.suppressBlankEmpty=false", "diff.noprefix=false",
    "diff.mnemonicPrefix=false", "diff.relative=false", "diff.algorithm=myers", "diff.indentHeuristic=true",
    "diff.renames=true", "diff.orderFile=/dev/null",
    "format.signoff=false", "format.subjectPrefix=PATCH", "format.from=false", "format.thread=false",
    "format.suffix=.patch", "format.coverLetter=false", "format.numbered=auto", "format.notes=false",
    "format.useAutoBase=false", "format.encodeEmailHeaders=true", "format.filenameMaxLength=64",
    "format.forceInBodyFrom=false", "format.mboxrd=false",
    "log.showSignature=false", "log.mailmap=false",
    "i18n.commitEncoding=UTF-8", "i18n.logOutputEncoding=UTF-8",
    # how patches apply and files merge
    "apply.ignoreWhitespace=no", "merge.conflictStyle=merge",
    # which refs a fetch or clone writes, and where
    "fetch.prune=false", "fetch.pruneTags=false", "clone.defaultRemoteName=origin", "clone.rejectShallow=false",
    "submodule.recurse=false",
)
_OVERRIDE_ARGS = tuple(a for kv in OVERRIDES for a in ("-c", kv))


def argv(args: Sequence[str]) -> list[str]:
    """The git command line we run for `git args`: the overrides first."""
    return ["git", *_OVERRIDE_ARGS, *[str(a) for a in args]]


class GitError(CommandError):
    """A git command failed: its command line, exit code and git's own message."""


@contextlib.contextmanager
def _without_redirects() -> Iterator[None]:
    # GitPython builds each child's environment from os.environ and can add variables but
    # not remove them; so the redirecting ones are out of os.environ while its cat-file starts.
    # Git commands run on one thread here, so the window is not shared.
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k in _REDIRECTS}
    try:
        yield
    finally:
        os.environ.update(saved)


class GitRunner:
    """Where git commands run (a repository's work tree; None: anywhere), with our policy."""

    def __init__(self, working_dir: str | os.PathLike | None = None) -> None:
        self._working_dir = None if working_dir is None else str(working_dir)

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A git child's environment: the user's without the redirecting variables, our policy
        over it, then extra (a private GIT_INDEX_FILE, an identity)."""
        env = {k: v for k, v in os.environ.items() if k not in _REDIRECTS}
        env.update(POLICY)
        env.update(extra or {})
        return env

    def start(self, args: Sequence[str], env: Mapping[str, str] | None = None, input: bytes | None = None):
        """`git args` started (the overrides first), its output as pipes; ToolMissing without git."""
        return proc.spawn(argv(args), cwd=self._working_dir, env=self.environment(env), input=input)


_GITPYTHON: dict[str, Any] = {}


def gitpython_repo(path: Path) -> Any:
    """GitPython's repository at path, its command runner (and so its cat-file process)
    following our policy. GitPython is imported here, on first use."""
    if "repo" not in _GITPYTHON:
        import git as gitpy

        class _Git(gitpy.Git):
            """GitPython's command runner with our environment policy."""

            def __init__(self, working_dir: str | os.PathLike | None = None) -> None:
                super().__init__(working_dir)
                self.update_environment(**POLICY)

            def execute(self, command, *args, **kwargs):  # type: ignore[override]
                with _without_redirects():
                    return super().execute(command, *args, **kwargs)

        class _GitPythonRepo(gitpy.Repo):
            GitCommandWrapperType = _Git

        _GITPYTHON["repo"] = _GitPythonRepo
    return _GITPYTHON["repo"](path)


def gitpython_errors() -> tuple[type[BaseException], ...]:
    """What GitPython raises when its git process fails or cannot start, or its repository is
    none: (GitCommandError, InvalidGitRepositoryError, NoSuchPathError)."""
    from git.exc import GitCommandError, InvalidGitRepositoryError, NoSuchPathError
    return GitCommandError, InvalidGitRepositoryError, NoSuchPathError


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


def _call(runner: GitRunner, args: Sequence[str], *, env: Mapping[str, str] | None = None,
          input: str | bytes | None = None, check: bool = True, timeout: float | None = None) -> Result:
    """Run `git args`; GitError when it fails and check is set."""
    cmd = ["git", *[str(a) for a in args]]  # as errors name it; argv(args) is what runs
    data = input.encode("utf-8", "surrogateescape") if isinstance(input, str) else input
    child = runner.start(args, env, data)
    if timeout is None:
        out, err = child.communicate()
        said = err.decode("utf-8", "surrogateescape")
    else:
        out, said = _communicate_with_deadline(child, timeout)
    status = child.returncode
    result = Result(tuple(cmd), status, out or b"", said.removesuffix("\n"))
    if check and status != 0:
        raise GitError(cmd, status, result.stdout.decode("utf-8", "replace"), result.stderr, runner._working_dir)
    return result


def _communicate_with_deadline(child: Any, timeout: float) -> tuple[bytes, str]:
    """child's output, with its process tree killed after timeout seconds.

    Not GitPython's kill_after_timeout: its watchdog is a non-daemon Timer that nothing
    cancels when the wait is interrupted, so after Ctrl-C during a clone the process said
    'interrupted' and then hung for the whole timeout (30 minutes) before it could exit."""
    expired = threading.Event()
    timer = threading.Timer(timeout, lambda: (expired.set(), _kill_tree(child.pid)))
    timer.daemon = True
    timer.start()
    try:
        out, err = child.communicate()
    except BaseException:
        _kill_tree(child.pid)
        child.wait()
        raise
    finally:
        timer.cancel()
    if expired.is_set():
        return out or b"", f"git did not complete in {timeout:g} s (PATCHKIT_NETWORK_TIMEOUT)"
    return out or b"", (err or b"").decode("utf-8", "replace").rstrip("\n")


def run_git(*args: str, cwd: str | os.PathLike | None = None, input: str | bytes | None = None,
            check: bool = True, timeout: float | None = None) -> Result:
    """A git command outside any repository (clone, init, ls-remote)."""
    return _call(GitRunner(cwd), args, input=input, check=check, timeout=timeout)


def check_ref_format(ref: str) -> bool:
    """Whether git accepts ref as a full ref name, and it cannot be read as an option.

    Only git's verdict on a name it ran cleanly (exit 1, nothing said) calls the name
    invalid; a git that dies (exit 128, a broken config) raises GitError with its message."""
    if not ref or ref.startswith("-") or len(ref) > 1000 or any(ord(c) < 32 for c in ref):
        return False
    res = run_git("check-ref-format", ref, check=False)
    if res.returncode == 1 and not res.stderr.strip():
        return False
    if res.returncode != 0:
        raise GitError(list(res.cmd), res.returncode, res.text, res.stderr)
    return True


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


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"



def identity_env(author: Identity, committer: Identity, author_date: str | None = None,
                 committer_date: str | None = None) -> dict[str, str]:
    env = {"GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
           "GIT_COMMITTER_NAME": committer.name, "GIT_COMMITTER_EMAIL": committer.email}
    if author_date:
        env["GIT_AUTHOR_DATE"] = author_date
    if committer_date:
        env["GIT_COMMITTER_DATE"] = committer_date
    return env


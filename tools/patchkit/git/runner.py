"""The runner core of the git facade: every git command goes through GitPython's command
runner here, with our environment policy, and every exit code is checked.

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
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NewType

# Without git on PATH, GitPython's import would fail; we say "git is missing" at the first call.
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")

import git as gitpy  # noqa: E402  (GitPython)
from git.exc import GitCommandError, GitCommandNotFound  # noqa: E402

from ..errors import CommandError, ToolMissing  # noqa: E402

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
    cmd = ["git", *[str(a) for a in args]]  # as errors name it; argv(args) is what runs
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
                status, out, err = runner.execute(argv(args), **kwargs)
            else:
                status, out, err = _execute_with_deadline(runner, argv(args), kwargs, timeout)
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


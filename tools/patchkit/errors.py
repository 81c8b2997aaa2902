"""The two error tiers: a UserError is expected and printed as one line; anything else is a bug."""
from __future__ import annotations

import enum
import sys
import tempfile
import traceback
from dataclasses import dataclass


class ExitCode(enum.IntEnum):
    """Named process exit codes (pipx-style), so scripts can tell failures apart."""

    OK = 0
    MISMATCH = 1  # the command ran, and what it measured differs from what was declared
    USAGE = 2  # bad arguments or bad input data
    CONFLICT = 3  # a patch does not apply, or the checkout is not in a state we can change
    NOT_FOUND = 4  # unknown target, missing checkout, unreachable URL
    TOOL_MISSING = 5  # a required external tool (builder, git feature) is not available
    INTERNAL = 70  # an unexpected exception; traceback goes to the log
    INTERRUPTED = 130


@dataclass(frozen=True)
class Ask:
    """A value only the user knows, in a command a hint prints: their own when they gave the
    setting, else `<what>` for them to fill in (BASE=<an image built from main>)."""

    what: str


@dataclass(frozen=True)
class Hint:
    """What the user can do next, as data; the CLI says it in the user's own words.

    command: a subcommand to run (its make target has the same name), with `settings`
    changed and every other setting the user gave kept; None means the same command again.
    settings: (name, value) pairs, named as the commands' parameters (`src`, `threeway`,
    `report`, ...); True turns a switch on; False leaves the setting out (its default);
    None means "the user chooses another value".
    also: another way out that is not a setting (e.g. git config), said as is.
    first: what must run before it, in order, chained with && so that the line runs as printed
    (make delta before make pr): another Hint, or a command said as is (git -C <checkout> ...).
    """

    command: str | None = None
    settings: tuple[tuple[str, object], ...] = ()
    also: str = ""
    first: tuple["Hint | str", ...] = ()

    @staticmethod
    def run(command: str | None, **settings: object) -> "Hint":
        return Hint(command, tuple(settings.items()))

    @staticmethod
    def radar(target: str) -> "Hint":
        """Since which upstream commit the set's status changed (make radar, issue #18)."""
        return Hint("radar", (("target", target),), "since which upstream commit the set changed")

    @staticmethod
    def choose(*names: str, also: str = "") -> "Hint":
        """Another value of these settings is needed (the user knows which)."""
        return Hint(None, tuple((n, None) for n in names), also)


class UserError(Exception):
    """An expected failure: one line of facts for the user, and what to do next as a Hint.

    `setting` names the setting whose value was wrong, when one was (the CLI names it as the
    user gave it: a make variable or a flag).
    """

    code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, code: ExitCode | None = None, details: str = "", *,
                 hint: Hint | None = None, setting: str | None = None, more: tuple[Hint, ...] = ()) -> None:
        super().__init__(message)
        self.more = more  # further ways on, said on stdout after the details (e.g. make radar)
        self.details = details  # a longer report for stdout (e.g. drift), printed before the line
        self.hint = hint
        self.setting = setting
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0])


class BadInput(UserError):
    code = ExitCode.USAGE


class NotFound(UserError):
    code = ExitCode.NOT_FOUND


class Conflict(UserError):
    code = ExitCode.CONFLICT


class ToolMissing(UserError):
    code = ExitCode.TOOL_MISSING


class CommandError(Exception):
    """A subprocess failed. Carries everything needed to understand why."""

    def __init__(self, cmd: list[str], returncode: int, stdout: str, stderr: str, cwd: str | None = None) -> None:
        self.cmd = cmd
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.cwd = cwd
        super().__init__(f"command failed (exit {returncode}): {' '.join(cmd)}\n{stderr.strip() or stdout.strip()}")

    def first_line(self) -> str:
        """The most telling line of the command's output, for one-line user messages."""
        for text in (self.stderr, self.stdout):
            for line in text.splitlines():
                line = line.strip()
                if line and not line.startswith("hint:"):
                    return line
        return f"exit {self.returncode}"


def crashed() -> ExitCode:
    """A bug of ours: the traceback of the exception being handled goes to a log file, its path to stderr."""
    fd, path = tempfile.mkstemp(prefix="patchkit-crash-", suffix=".log")
    with open(fd, "w") as fh:
        traceback.print_exc(file=fh)
    print(f"patchkit: internal error; the traceback is in {path}", file=sys.stderr)
    return ExitCode.INTERNAL


def is_git_error(exc: CommandError) -> bool:
    """Whether a tool failure is git's. The facade is imported only by the commands that use
    git; when it was never imported, no git command ran, so the failure is not git's."""
    runner = sys.modules.get(f"{__package__}.git.runner")
    return runner is not None and isinstance(exc, runner.GitError)

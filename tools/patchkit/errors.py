"""The two error tiers: a UserError is expected and printed as one line; anything else is a bug."""
from __future__ import annotations

import enum


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


class UserError(Exception):
    """An expected failure: one line for the user, ideally ending with what to run next."""

    code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, code: ExitCode | None = None, details: str = "") -> None:
        super().__init__(message)
        self.details = details  # a longer report for stdout (e.g. drift), printed before the line
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

"""The one subprocess chokepoint: every external command in this package runs through run()."""
from __future__ import annotations

import collections
import contextlib
import logging
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import CommandError, ToolMissing

log = logging.getLogger("patchkit.proc")
# What a wait with a timeout raises, for code that waits on a process git's runner started.
TimeoutExpired = subprocess.TimeoutExpired


@dataclass(frozen=True)
class Result:
    cmd: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run(
    cmd: Sequence[str],
    *,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    check: bool = True,
    stream: bool = False,
    timeout: float | None = None,
) -> Result:
    """Run cmd (never through a shell); raise CommandError on failure when check is set.

    stream=True lets long-running commands (builds, test runs) print as they go; their
    output is then not captured.
    """
    argv = [str(c) for c in cmd]
    log.debug("run: %s (cwd=%s)", " ".join(argv), cwd)
    try:
        proc = subprocess.run(
            argv,
            cwd=None if cwd is None else str(cwd),
            env=None if env is None else dict(env),
            input=input,
            text=True,
            encoding="utf-8",
            errors="surrogateescape",
            stdout=None if stream else subprocess.PIPE,
            stderr=None if stream else subprocess.PIPE,
            timeout=timeout,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except FileNotFoundError as exc:
        raise ToolMissing(f"{argv[0]} is not installed or not on PATH") from exc
    result = Result(tuple(argv), proc.returncode, proc.stdout or "", proc.stderr or "")
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, result.stdout, result.stderr, None if cwd is None else str(cwd))
    return result


def spawn(cmd: Sequence[str], *, cwd: str | os.PathLike | None = None, env: Mapping[str, str] | None = None,
          input: bytes | None = None) -> subprocess.Popen:
    """Start cmd (never through a shell) with its stdout and stderr as pipes of bytes and input
    (from a temporary file: no pipe to deadlock on) as its stdin, for a caller that waits on it
    itself (the git facade: its deadline, a transfer's progress). ToolMissing when cmd[0] is
    not there."""
    argv = [str(c) for c in cmd]
    log.debug("run (spawned): %s (cwd=%s)", " ".join(argv), cwd)
    with contextlib.ExitStack() as stack:
        stdin = subprocess.DEVNULL
        if input is not None:
            stdin = stack.enter_context(tempfile.TemporaryFile())
            stdin.write(input)
            stdin.seek(0)
        try:
            return subprocess.Popen(argv, cwd=None if cwd is None else str(cwd), env=None if env is None else dict(env),
                                    stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError as exc:
            raise ToolMissing(f"{argv[0]} is not installed or not on PATH") from exc


def run_lines(cmd: Sequence[str], on_line: Callable[[str], None], *, cwd: str | os.PathLike | None = None,
              env: Mapping[str, str] | None = None, keep: int = 400,
              started: Callable[[int], None] | None = None) -> Result:
    """Run cmd (never through a shell), its stdout and stderr merged and handed to on_line a line
    at a time as it comes (a build's progress); the last `keep` lines are the Result's stdout.
    Never raises on cmd's exit code. An exception here (Ctrl-C) kills cmd before it goes on: a
    build left running would go on writing into the tree the next run builds in.
    started: cmd runs in a session of its own, whose id started() is given as it starts, for
    the caller to keep: a SIGKILL of ours leaves it running, and the next run stops what is
    left of it by that id (stop_session)."""
    argv = [str(c) for c in cmd]
    log.debug("run (lines): %s (cwd=%s)", " ".join(argv), cwd)
    try:
        p = subprocess.Popen(argv, cwd=None if cwd is None else str(cwd), env=None if env is None else dict(env),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             encoding="utf-8", errors="replace", bufsize=1, start_new_session=started is not None)
    except FileNotFoundError as exc:
        raise ToolMissing(f"{argv[0]} is not installed or not on PATH") from exc
    tail: collections.deque[str] = collections.deque(maxlen=keep)
    try:
        if started is not None:
            started(p.pid)
        assert p.stdout is not None
        for line in p.stdout:
            tail.append(line)
            on_line(line)
        code = p.wait()
    except BaseException:
        if started is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)  # its session's first group: what it started too
        p.kill()
        p.wait()
        raise
    return Result(tuple(argv), code, "".join(tail), "")


def stop_session(session: int, within: Path, wait: float = 10.0) -> int:
    """SIGKILL what still runs of a session run_lines started (its id, as started() was given
    it) in a folder within `within` (a session's id is its first process's pid, which another
    may have since: the folder tells them apart); how many were. Waits up to `wait` seconds for
    them to go. Linux's /proc: elsewhere none is found."""
    within = within.resolve()
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _ppid, _group, sid = stat.read_text().rsplit(")", 1)[1].split()[:4]
            where = Path(os.readlink(stat.parent / "cwd"))
        except (OSError, ValueError, IndexError):
            continue
        pid = int(stat.parent.name)
        if int(sid) == session and state != "Z" and pid != os.getpid() and where.is_relative_to(within):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                found.append(pid)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(_alive(pid) for pid in found):
        time.sleep(0.05)
    return len(found)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def run_many(cmds: Sequence[tuple[Sequence[str], str | os.PathLike | None]],
             env: Mapping[str, str] | None = None) -> list[Result]:
    """Run independent commands at once (e.g. the delta's two trees), never raising on exit codes."""
    procs = []
    for cmd, cwd in cmds:
        argv = [str(c) for c in cmd]
        log.debug("run (parallel): %s (cwd=%s)", " ".join(argv), cwd)
        try:
            procs.append((argv, subprocess.Popen(argv, cwd=None if cwd is None else str(cwd),
                                                 env=None if env is None else dict(env), text=True,
                                                 encoding="utf-8", errors="surrogateescape",
                                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                 stderr=subprocess.PIPE)))
        except FileNotFoundError as exc:
            for _, p in procs:
                p.kill()
            raise ToolMissing(f"{argv[0]} is not installed or not on PATH") from exc
    results = []
    for argv, p in procs:
        out, err = p.communicate()
        results.append(Result(tuple(argv), p.returncode, out, err))
    return results


@contextlib.contextmanager
def background(cmd: Sequence[str], *, env: Mapping[str, str] | None = None) -> Iterator[Callable[[], Result]]:
    """cmd started now, running while the body runs (make setup fetches the hook tools' wheels
    while uv builds .venv); the body calls what it yields to wait for its Result (never raising
    on its exit code). Killed when the body leaves without having waited (an error, Ctrl-C).
    Its output goes to temporary files, so a chatty command never blocks on a full pipe."""
    argv = [str(c) for c in cmd]
    log.debug("run (background): %s", " ".join(argv))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            p = subprocess.Popen(argv, env=None if env is None else dict(env), stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=err)
        except FileNotFoundError as exc:
            raise ToolMissing(f"{argv[0]} is not installed or not on PATH") from exc
        done: list[Result] = []

        def result() -> Result:
            if not done:
                p.wait()
                said = [f.seek(0) or f.read().decode("utf-8", "surrogateescape") for f in (out, err)]
                done.append(Result(tuple(argv), p.returncode, *said))
            return done[0]
        try:
            yield result
        finally:
            if not done:
                p.kill()
                p.wait()

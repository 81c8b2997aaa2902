"""Progress: one line on stderr per step that may take a while, for a person at a terminal.

Silent when stderr is not a terminal (a pipe, a log, a test) and under --quiet; it never
writes to stdout, so --json output stays JSON. git's own progress for clone and fetch is
shown through the same switch (the git facade asks enabled()).

Why not tqdm, rich or enlighten (all on PyPI): they draw bars and spinners over a known total,
and manage the terminal for it. Our steps are few and of unknown length (a clone, a patch, a
pytest run), and git draws its own progress: a line per step over isatty is all it takes,
and it needs no dependency. The same steps are timed, so make bench reports per-step times
from exactly what a user sees.
"""
from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator

from .text.words import visible

_quiet = False
_timings: list[tuple[str, float]] | None = None


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def enabled() -> bool:
    """Whether progress is shown: stderr is a terminal and --quiet was not given."""
    try:
        return not _quiet and sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def say(message: str) -> None:
    """One progress line, when progress is shown."""
    if enabled():  # a step may name what a pull request named: never sent raw (#31 item 9)
        sys.stderr.write(f"patchkit: {visible(message)}\n")
        sys.stderr.flush()


@contextlib.contextmanager
def step(message: str) -> Iterator[None]:
    """A step: said when it starts; its wall time is kept while timings() records."""
    say(message)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        if _timings is not None:
            _timings.append((message, time.perf_counter() - t0))


@contextlib.contextmanager
def timings() -> Iterator[list[tuple[str, float]]]:
    """Record (step, seconds) of every step run inside, in the order they ended."""
    global _timings
    saved, _timings = _timings, []
    try:
        yield _timings
    finally:
        _timings = saved

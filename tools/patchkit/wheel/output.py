"""Reading a wheel build as it runs: its compile steps (done of total) for the progress line,
the translation units it compiled, the compiler's first error, and ccache's statistics.

CMake's Ninja generator says `[3/12] Building CXX object <object>`; its Makefile generator says
`[ 25%] Building CXX object <object>` (no total: the percent is said instead). A compiler's
error reads `<file>:<line>:<column>: error: <what>` (gcc, clang, nvcc's host compiler), or
`<file>(<line>): error: <what>` (nvcc for CUDA); the file is named relative to the checkout.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import progress

_NINJA = re.compile(r"^\[(\d+)/(\d+)\] (.*)$")
_MAKE = re.compile(r"^\[\s*(\d+)%\] (.*)$")
_COMPILE = re.compile(r"^Building (?:C|CXX|CUDA) object (\S+)")
_ERROR = re.compile(r"^(?P<file>[^\s:()][^:()]*?)(?::(?P<line>\d+)(?::(?P<col>\d+))?:|\((?P<nline>\d+)\):)"
                    r" (?:fatal )?error:? (?P<what>.*)$")
KEEP = 200  # lines of the output kept for the error message: the end of a failed build


@dataclass
class Watch:
    """What a build said so far, fed line by line (feed); the progress line on stderr."""

    roots: tuple[str, ...]  # the checkout's folder, as the build names it (image and host)
    tree: Path | None = None  # the checkout here: a file the compiler names relative to its build folder is found in it
    started: float = field(default_factory=time.monotonic)
    compiled: list[str] = field(default_factory=list)  # objects built, in order
    done: int = 0
    total: int = 0
    percent: int | None = None
    first_error: str = ""
    tail: list[str] = field(default_factory=list)
    _said: float = 0.0

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        self.tail = (self.tail + [line])[-KEEP:]
        step = line
        m = _NINJA.match(line)
        if m:
            self.done, self.total, step = int(m[1]), int(m[2]), m[3]
        elif (m := _MAKE.match(line)) is not None:
            self.percent, step = int(m[1]), m[2]
        c = _COMPILE.match(step)
        if c:
            self.compiled.append(c[1])
            self._say()
        if not self.first_error and (e := _ERROR.match(line)) is not None:
            self.first_error = self._error(e)

    def _say(self) -> None:
        now = time.monotonic()
        if now - self._said < 1.0:  # a line a second at most
            return
        self._said = now
        elapsed = now - self.started
        if self.total:
            progress.say(f"compiling: step {self.done} of {self.total}, {len(self.compiled)} compiled, "
                         f"{elapsed:.0f} s")
        else:
            done = f" ({self.percent}%)" if self.percent is not None else ""
            progress.say(f"compiling: {len(self.compiled)} compiled{done}, {elapsed:.0f} s")

    def _error(self, m: re.Match) -> str:
        path = self._relative(m["file"])
        line = m["line"] or m["nline"]
        where = f"{path}:{line}" + (f":{m['col']}" if m["col"] else "")
        return f"{where}: error: {m['what'].strip()}"

    def _relative(self, path: str) -> str:
        """The file as the checkout names it: under one of the roots, or relative to the folder the
        compiler ran in (CMake's build folder, cpp/build: '../tensorrt_llm/x.cpp')."""
        for root in self.roots:
            if path.startswith(root.rstrip("/") + "/"):
                return path[len(root.rstrip("/")) + 1:]
        if self.tree is not None and not path.startswith("/"):
            for base in (self.tree / "cpp" / "build", self.tree / "cpp", self.tree):
                found = Path(os.path.normpath(base / path))
                if found.is_file() and found.is_relative_to(self.tree):
                    return found.relative_to(self.tree).as_posix()
        return path

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started


def ccache_stats(text: str) -> dict[str, int]:
    """`ccache --print-stats` (tab-separated): hits and misses of this build (the stats were
    zeroed before it)."""
    values = {}
    for line in text.splitlines():
        key, _, value = line.partition("\t")
        if value.strip().isdigit():
            values[key.strip()] = int(value)
    hits = values.get("direct_cache_hit", 0) + values.get("preprocessed_cache_hit", 0)
    return {"hits": hits, "misses": values.get("cache_miss", 0)}

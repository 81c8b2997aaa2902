"""A pull request's code runs fenced (DESIGN: untrusted code runs fenced): its tests run inside
bubblewrap (bwrap, the user-namespace sandbox Flatpak uses; Debian's package `bubblewrap`).

Inside the fence: no network (a network namespace of its own: even 127.0.0.1 is its own
loopback), the filesystem read-only, the user's home, /home, /root, /tmp, /var/tmp, /run and
$TMPDIR hidden under empty tmpfs (no ssh-agent or docker socket, no keys, nothing another run
left), a fresh HOME and /tmp, and only the throwaway measuring folders (the trees, the outcome
files) writable; what the test run needs to read (the interpreter, its sys.path, our plugins)
is bound back read-only. No capabilities, a pid namespace of its own (nothing outlives the
run), a session of its own (no TIOCSTI into the user's terminal), an environment of a few
variables (no token of the user's). Where bwrap is missing or cannot make its namespaces (a
kernel or a container that refuses user namespaces), find() says why and the callers decide:
make backport then does not run the PR's code at all; make delta, which the user asks for,
runs it unfenced and says so.
"""
from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import proc

NAME = "bubblewrap"
WORDS = "no network, the filesystem read-only but the measuring folder, a fresh HOME and /tmp"
# The namespaces and the session; --unshare-user is explicit: as root, --unshare-all alone
# would go on without a user namespace where none can be made, and root could remount.
_ISOLATE = ("--unshare-all", "--unshare-user", "--cap-drop", "ALL", "--die-with-parent", "--new-session")
_HIDDEN = ("/home", "/root", "/tmp", "/var/tmp", "/run")
_PASSED_ON = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")  # what a test run needs of the user's environment


@dataclass(frozen=True)
class Fence:
    """bubblewrap, found working here."""

    bwrap: str

    @property
    def said(self) -> str:
        return f"fenced by {NAME} ({WORDS})"

    def command(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path],
                env: Mapping[str, str] = {}, readable: Sequence[Path] = ()) -> list[str]:
        """argv run in cwd inside the fence: writable, the only folders it may change; env, the
        variables it gets besides PATH and the locale (HOME and TMPDIR are the fence's own);
        readable, more folders bound back read-only where they are hidden (the python3 a build
        runs with, under a hidden home)."""
        hidden = _hidden()
        home = _real(os.environ.get("HOME", ""))
        home = home if home in hidden else "/tmp"  # the user's home, hidden and empty; else the fresh /tmp
        out = [self.bwrap, *_ISOLATE, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for h in hidden:
            out += ["--tmpfs", h]
        for p in [*_readable(hidden), *(r for r in map(_real, map(str, readable))
                                          if r and any(r == h or r.startswith(h + "/") for h in hidden))]:
            out += ["--ro-bind-try", p, p]
        for w in writable:
            real = str(Path(w).resolve())
            out += ["--bind", real, real]
        out += ["--chdir", str(Path(cwd).resolve()), "--clearenv"]
        values = {k: os.environ[k] for k in _PASSED_ON if k in os.environ}
        values.update(env, HOME=home, TMPDIR="/tmp", PYTHONDONTWRITEBYTECODE="1")
        for k, v in values.items():
            out += ["--setenv", k, v]
        return [*out, "--", *argv]


def find() -> tuple[Fence | None, str]:
    """The fence, or None and why there is none here (said to the user as is)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, f"{NAME} (bwrap) is not installed"
    res = proc.run([bwrap, *_ISOLATE, "--ro-bind", "/", "/", "--", "true"], check=False)
    if res.returncode != 0:
        said = next((ln.strip() for ln in (res.stderr + res.stdout).splitlines() if ln.strip()), f"exit {res.returncode}")
        return None, f"{NAME} cannot make its namespaces here ({said[:200]})"
    return Fence(bwrap), ""


def _real(path: str) -> str:
    return str(Path(path).resolve()) if path and os.path.isabs(path) else ""


def _hidden() -> list[str]:
    """The places hidden under an empty tmpfs: those that exist, each once, a folder before
    the folders in it (a tmpfs over a place must not cover one laid over a place inside it)."""
    places = [*_HIDDEN, *(os.environ.get(k, "") for k in ("HOME", "TMPDIR", "XDG_RUNTIME_DIR"))]
    return sorted({_real(p) for p in places if _real(p) and os.path.isdir(p)} - {"/"})


def _readable(hidden: Sequence[str]) -> list[str]:
    """What the test run reads, bound back where it is hidden: the interpreter and the folders
    of its sys.path (the package's plugins among them) but the one python -m puts first, the
    folder it was started in (a project under your home is not the test run's business); never a
    place that holds a hidden one."""
    started_in = sys.path[:1] if sys.path and sys.path[0] in ("", os.getcwd()) else []
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             str(Path(__file__).resolve().parents[1]), *(p for p in sys.path if p not in started_in)]
    out: list[str] = []
    for p in paths:
        real = _real(p)
        if not real or real in out or any(h == real or h.startswith(real.rstrip("/") + "/") for h in hidden):
            continue
        if any(real == h or real.startswith(h + "/") for h in hidden):
            out.append(real)
    return out

"""What upstream's build accepts at the ref, and what make wheel passes to it (with why).

The flags are read from the tree at the ref, never from a list kept here: scripts/build_wheel.py's
argparse options, found with ast in the script's text (the PR's code is never run to learn
them: an add_argument call anywhere in the module, its option strings and its action), and
where docker/Makefile is present, how it composes BUILD_WHEEL_ARGS (the Dockerfile's ARG
default, then what the Makefile adds: NVRTC_DYNAMIC_LINKING, the architectures). Then plan()
decides each flag and says why; a setting the ref's script does not accept is never passed,
and is named with the reason.
"""
from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field

from ..errors import Conflict

SCRIPT = "scripts/build_wheel.py"
MAKEFILE = "docker/Makefile"
DOCKERFILE = "docker/Dockerfile.multi"
# argparse actions that take no value on the command line.
_NO_VALUE = {"store_true", "store_false", "store_const", "count", "append_const", "help", "version"}


@dataclass(frozen=True)
class Option:
    names: tuple[str, ...]  # as add_argument names them: ("--job_count", "-j")
    takes_value: bool
    optional_value: bool = False  # nargs="?": the value may be left out

    @property
    def long(self) -> str:
        return next((n for n in self.names if n.startswith("--")), self.names[0])


@dataclass(frozen=True)
class Script:
    path: str
    options: tuple[Option, ...]

    def option(self, *names: str) -> Option | None:
        """The option any of names is a spelling of; None when the script accepts none of them."""
        for o in self.options:
            if set(names) & set(o.names):
                return o
        return None

    @property
    def names(self) -> list[str]:
        return sorted(n for o in self.options for n in o.names)


def read_script(text: str, path: str = SCRIPT) -> Script:
    """The script's argparse options, from its text (Conflict when it cannot be read as Python
    or declares none)."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise Conflict(f"{path} at the ref is not Python make wheel can read (line {exc.lineno}: {exc.msg})") from None
    options = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        names = tuple(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                      and a.value.startswith("-"))
        if not names:
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        action = kw.get("action")
        action = action.value if isinstance(action, ast.Constant) else None
        nargs = kw.get("nargs")
        nargs = nargs.value if isinstance(nargs, ast.Constant) else None
        options.append(Option(names, action not in _NO_VALUE, nargs == "?"))
    if not options:
        raise Conflict(f"{path} at the ref declares no option make wheel can read (no add_argument call)")
    return Script(path, tuple(options))


@dataclass(frozen=True)
class Composed:
    """docker/Makefile's BUILD_WHEEL_ARGS, as tokens, each with where it came from."""

    tokens: tuple[tuple[str, str], ...] = ()  # (token, "the Dockerfile's default" | "docker/Makefile")
    note: str = ""  # why it could not be read, when it could not


_CALL = re.compile(r"\$\(")


def compose(makefile: str | None, dockerfile: str | None, cuda_archs: str) -> Composed:
    """How the ref's docker/Makefile composes BUILD_WHEEL_ARGS for `make -C docker release_build
    CUDA_ARCHS=<archs>`: a small reading of make's $(shell grep ARG ...), $(if $(VAR),...) and
    $(VAR) (BUILD_WHEEL_OPTS empty); anything else is said in note and nothing is taken."""
    if makefile is None:
        return Composed(note=f"the ref has no {MAKEFILE}")
    line = next((ln for ln in _logical_lines(makefile) if re.match(r"\s*BUILD_WHEEL_ARGS\s*[?:]?=", ln)), None)
    if line is None:
        return Composed(note=f"{MAKEFILE} does not set BUILD_WHEEL_ARGS")
    value = line.split("=", 1)[1].strip()
    default = _dockerfile_default(dockerfile)
    try:
        parts = _expand(value, {"CUDA_ARCHS": cuda_archs, "BUILD_WHEEL_OPTS": ""}, default)
    except ValueError as exc:
        return Composed(note=f"{MAKEFILE}'s BUILD_WHEEL_ARGS was not read ({exc})")
    tokens: list[tuple[str, str]] = []
    for text, origin in parts:
        try:
            tokens += [(t, origin) for t in shlex.split(text)]
        except ValueError as exc:
            return Composed(note=f"{MAKEFILE}'s BUILD_WHEEL_ARGS was not read ({exc})")
    return Composed(tuple(tokens))


def _logical_lines(text: str) -> list[str]:
    return text.replace("\\\n", " ").splitlines()


def _dockerfile_default(dockerfile: str | None) -> str | None:
    if dockerfile is None:
        return None
    m = re.search(r"(?m)^ARG BUILD_WHEEL_ARGS=(.*)$", dockerfile)
    if m is None:
        return None
    value = m.group(1).strip()
    return value[1:-1].replace('\\"', '"') if len(value) > 1 and value[0] == value[-1] == '"' else value


def _expand(text: str, variables: dict[str, str], default: str | None) -> list[tuple[str, str]]:
    """text with its $(...) calls replaced: [(piece, where it came from)]."""
    out: list[tuple[str, str]] = []
    at = 0
    for start, end in _calls(text):
        out.append((text[at:start], "docker/Makefile"))
        out += _call(text[start + 2:end], variables, default)
        at = end + 1
    out.append((text[at:], "docker/Makefile"))
    return [(t, o) for t, o in out if t.strip()]


def _calls(text: str) -> list[tuple[int, int]]:
    """(start of '$(', index of its closing ')') of each top-level call."""
    spans, i = [], 0
    while (m := _CALL.search(text, i)) is not None:
        depth, j = 0, m.start() + 1
        while j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        if depth:
            raise ValueError("an unbalanced $(")
        spans.append((m.start(), j))
        i = j + 1
    return spans


def _call(inner: str, variables: dict[str, str], default: str | None) -> list[tuple[str, str]]:
    if inner.startswith("shell ") and "ARG BUILD_WHEEL_ARGS=" in inner:
        if default is None:
            raise ValueError(f"it reads {DOCKERFILE}'s ARG BUILD_WHEEL_ARGS, which the ref does not have")
        return [(default, "the Dockerfile's default")]
    if inner.startswith("if "):
        cond, _, then = inner[3:].partition(",")
        if not _expand(cond, variables, default):
            return []
        return _expand(then, variables, default)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", inner):
        if inner not in variables:
            raise ValueError(f"$({inner}) is not a setting make wheel knows")
        return [(variables[inner], "docker/Makefile")] if variables[inner] else []
    raise ValueError(f"$({inner.split()[0] if inner.split() else inner}...) is more make than make wheel reads")


@dataclass(frozen=True)
class Flag:
    args: tuple[str, ...]  # as passed: ("--job_count", "2")
    why: str


@dataclass(frozen=True)
class Skipped:
    setting: str  # the flag (or setting) not passed
    why: str


@dataclass
class Plan:
    passed: list[Flag] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    note: str = ""  # what of docker/Makefile could not be read

    @property
    def argv(self) -> list[str]:
        return [a for f in self.passed for a in f.args]


NOT_ACCEPTED = "the ref's scripts/build_wheel.py does not accept it"


def plan(script: Script, composed: Composed, *, archs: str, archs_from: str, jobs: int, jobs_why: str,
         ccache: str | None, ninja: bool, reconfigure: str) -> Plan:
    """The flags make wheel passes, each with why, and the settings it does not pass, each with why.

    ccache: the cache's folder as the build sees it (None: no ccache in the build's environment);
    reconfigure: why CMake must be configured again ('' when the build tree's configuration holds)."""
    out = Plan(note=composed.note)
    ours = {"--cuda_architectures", "-a", "--job_count", "-j", "--use_ccache", "--generator", "-G"}

    def want(names: tuple[str, ...], value: str | None, why: str, setting: str = "") -> bool:
        option = script.option(*names)
        if option is None:
            out.skipped.append(Skipped(setting or names[0], NOT_ACCEPTED))
            return False
        out.passed.append(Flag((option.long,) + ((value,) if value is not None else ()), why))
        return True

    tokens = list(composed.tokens)
    while tokens:
        token, origin = tokens.pop(0)
        why = f"{MAKEFILE}'s BUILD_WHEEL_ARGS ({origin})" if origin != MAKEFILE else f"{MAKEFILE}'s BUILD_WHEEL_ARGS"
        name, eq, inline = token.partition("=")
        if not token.startswith("-"):
            out.skipped.append(Skipped(token, f"a word of {MAKEFILE}'s BUILD_WHEEL_ARGS that is no flag"))
            continue
        option = script.option(name)
        value = inline if eq else None
        if option is not None and option.takes_value and not eq and tokens and not tokens[0][0].startswith("-"):
            value = tokens.pop(0)[0]
        if name in ("--clean", "-c"):
            out.skipped.append(Skipped(token, "the build tree is kept between builds: a second build recompiles "
                                              "what changed (upstream's Dockerfile starts from nothing each time)"))
        elif name in ours:
            continue  # said below, with make wheel's own value
        elif option is None:
            out.skipped.append(Skipped(token, NOT_ACCEPTED))
        else:
            out.passed.append(Flag((option.long,) + ((value,) if value is not None else ()), why))
    want(("--cuda_architectures", "-a"), archs, archs_from)
    want(("--job_count", "-j"), str(jobs), jobs_why)
    if ccache is None:
        out.skipped.append(Skipped("--use_ccache", "the build's environment has no ccache"))
    else:
        want(("--use_ccache",), None, f"one cache per devel image, kept between builds ({ccache})")
    fenced = "the build runs without network: it makes no virtual environment and installs nothing"
    want(("--no-venv",), None, fenced + "; the environment's own Python builds")
    want(("--skip_requirements",), None, fenced + "; the environment's packages are used as they are")
    if ninja:
        want(("--generator", "-G"), "Ninja", "Ninja names each compile step (n of total) and rebuilds only "
                                             "what changed")
    else:
        out.skipped.append(Skipped("--generator Ninja", "the build's environment has no ninja: CMake's default"))
    if reconfigure:
        if not want(("--configure_cmake",), None, reconfigure):
            want(("--clean", "-c"), None, reconfigure + " (the ref's script cannot configure again without it)")
    return out

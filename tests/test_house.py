"""The rules of the house, enforced: one git facade (the git/ package), one subprocess chokepoint
(proc.py), the model free of git, no import circles, no module over 500 lines, and the floors:
the CLI on top, imported by no command; the ground floor (errors, proc, the text helpers, ...)
importing nothing above it.

Issue #10: 41 git command lines in 10 modules bypassed the facade; issue #19: two import
circles and the model importing git; #31 item 14: commands' text modules imported the table
helpers from render.py, the CLI's floor, and render.py imported check.py. These tests read every module of the package (its syntax
tree, so comments and docstrings do not count) and fail on the line or the import that breaks a rule.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

from helpers import ROOT

PACKAGE = ROOT / "tools" / "patchkit"
GIT_FACADE, CHOKEPOINT = "git/", "proc.py"
GITPYTHON = ("git", "gitdb", "smmap")
PROCESS_MODULES = ("subprocess", "pty", "multiprocessing", "pexpect", "sh", "plumbum")
PROCESS_CALLS = {("os", n) for n in ("system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp",
                                     "execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp",
                                     "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl",
                                     "spawnle", "spawnlp", "spawnlpe")}
PROCESS_CALLS |= {("asyncio", "create_subprocess_exec"), ("asyncio", "create_subprocess_shell")}


def violations(source: str, name: str) -> list[str]:
    """What in this module's source breaks a rule: 'line: why'."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            mods = []
        for mod in mods:
            top = mod.split(".")[0]
            if top in GITPYTHON and not name.startswith(GIT_FACADE):
                found.append(f"{node.lineno}: imports GitPython ({mod}); only {GIT_FACADE} talks to git")
            if (top in PROCESS_MODULES or mod in {f"os.{f}" for _, f in PROCESS_CALLS}) and name != CHOKEPOINT:
                found.append(f"{node.lineno}: imports {mod}; only {CHOKEPOINT} starts processes")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in PROCESS_CALLS and name != CHOKEPOINT:
                found.append(f"{node.lineno}: {node.value.id}.{node.attr} starts a process; use {CHOKEPOINT}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and not name.startswith(GIT_FACADE):
            if node.value == "git" or node.value.startswith("git "):
                found.append(f"{node.lineno}: names the git command ({node.value!r}); use the facade in {GIT_FACADE}")
    return found


def test_only_the_facade_runs_git_and_only_proc_starts_processes():
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 20, f"the package is not where this test looks: {PACKAGE}"
    problems = []
    for path in modules:
        rel = path.relative_to(PACKAGE).as_posix()
        problems += [f"{rel}:{v}" for v in violations(path.read_text(), rel)]
    assert problems == []


def test_the_checker_sees_each_kind_of_breach():
    """The rule above can fail: each kind of breach in a made-up module is reported."""
    breaches = {
        "import git\n": "imports GitPython",
        "from git.objects import Commit\n": "imports GitPython",
        "import subprocess\n": "only proc.py starts processes",
        "from subprocess import Popen\n": "only proc.py starts processes",
        "import os\nos.system('ls')\n": "os.system starts a process",
        "import os\nos.execvp('ls', ['ls'])\n": "os.execvp starts a process",
        "from . import proc\nproc.run(['git', 'status'])\n": "names the git command",
        "from . import proc\nproc.run(['git status'])\n": "names the git command",
    }
    for source, why in breaches.items():
        found = violations(source, "somewhere.py")
        assert any(why in v for v in found), (source, found)
    assert violations("import subprocess\n", CHOKEPOINT) == []
    assert violations("import git\n", GIT_FACADE + "runner.py") == []
    assert violations('"""Talks to git through the facade."""\nfrom .git import Repo\n', "x.py") == []


# -- the package's import graph: the model free of git, no circles, no module over 500 lines --------
MODEL = ("model", "patchset", "patchcheck", "schema", "identity", "names")  # the domain types and loading a set
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = ("patchkit",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules that this module imports (anywhere in it, lazy imports too). A name
    imported from a package counts as its submodule when there is one, else as the package."""
    found = set()
    here = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "patchkit"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                target = f"{base}.{node.module}" if node.module else base
            elif node.module and node.module.split(".")[0] == "patchkit":
                target = node.module
            else:
                continue
            for a in node.names:
                found.add(f"{target}.{a.name}" if f"{target}.{a.name}" in known else target)
    return found & known


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    known = set(sources)
    return {name: imports(src, name, pkg, known) - {name} for name, (src, pkg) in sources.items()}


def package_sources() -> dict[str, tuple[str, bool]]:
    return {module_name(p): (p.read_text(), p.name == "__init__.py") for p in sorted(PACKAGE.rglob("*.py"))}


@functools.cache
def package_graph() -> dict[str, set[str]]:
    """The package's import graph, read once for the three checks of it (each read and parsed
    every module: 0.5-0.7 CPU-s a test, #34 item 2). Its users only read it."""
    return import_graph(package_sources())


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import circle once, as the modules around it (a -> b -> a)."""
    found = []
    for start in sorted(graph):
        path: list[str] = []

        def walk(node: str) -> None:
            path.append(node)
            for nxt in sorted(graph[node]):
                if nxt == start:
                    found.append(path + [start])
                elif nxt > start and nxt not in path:  # each circle from its smallest module only
                    walk(nxt)
            path.pop()
        walk(start)
    return found


def test_the_model_imports_nothing_from_git():
    graph = package_graph()
    model = [f"patchkit.{m}" for m in MODEL]
    assert set(model) <= set(graph), "a model module moved: update MODEL"
    assert {m: sorted(n for n in reachable(graph, m) if n == "patchkit.git" or n.startswith("patchkit.git."))
            for m in model} == {m: [] for m in model}


def test_no_import_circles():
    assert [" -> ".join(c) for c in cycles(package_graph())] == []


# The CLI's floor: argparse, the user's vocabulary, exit codes; nothing below it imports it.
CLI = ("patchkit.cli", "patchkit.__main__", "patchkit.render")
# The ground floor: used by every room, using none of them.
GROUND = ("patchkit.errors", "patchkit.proc", "patchkit.schema", "patchkit.lock", "patchkit.progress",
          "patchkit.atomic", "patchkit.scratch", "patchkit.text", "patchkit.pyimports")


def on_floor(module: str, floor: tuple[str, ...]) -> bool:
    return any(module == f or module.startswith(f + ".") for f in floor)


def floor_breaches(graph: dict[str, set[str]]) -> list[str]:
    """Each import that runs back up: a command (any module not the CLI's) importing the CLI, a
    ground-floor module importing anything above the ground floor."""
    found = []
    for name, deps in sorted(graph.items()):
        if not on_floor(name, CLI):
            found += [f"{name} imports the CLI's {d}" for d in sorted(deps) if on_floor(d, CLI)]
        if on_floor(name, GROUND):
            found += [f"{name} (ground floor) imports {d}" for d in sorted(deps) if not on_floor(d, GROUND)]
    return found


def test_no_command_reaches_up_to_the_cli_and_the_ground_floor_imports_nothing_above_it():
    """#31 item 14: delta/text.py, radar/report.py and backport/command.py imported table/RESULTS
    from render.py, the CLI's floor, and render.py imported check.py."""
    graph = package_graph()
    assert {m for m in graph if on_floor(m, GROUND)} >= {"patchkit.errors", "patchkit.text.table",
                                                          "patchkit.text.words", "patchkit.text.voice"}, \
        "a ground-floor module moved: update GROUND"
    assert floor_breaches(graph) == []


def test_the_floor_check_sees_a_command_that_imports_the_cli_and_a_ground_module_that_imports_up():
    """The rule above can fail: a command importing the CLI (lazily too), the ground floor importing a command."""
    made_up = {
        "patchkit.cli": ("from .table import voice\nfrom .. import check\n", True),
        "patchkit.cli.table": ("from ..text.voice import Voice\n", False),
        "patchkit.check": ("def f():\n    from .cli.table import voice\n", False),
        "patchkit.text": ("", True),
        "patchkit.text.voice": ("from ..errors import Hint\nfrom .. import check\n", False),
        "patchkit.errors": ("", False),
    }
    assert floor_breaches(import_graph(made_up)) == [
        "patchkit.check imports the CLI's patchkit.cli.table",
        "patchkit.text.voice (ground floor) imports patchkit.check"]


def test_no_module_over_500_lines():
    long = {p.relative_to(PACKAGE).as_posix(): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_graph_checks_see_circles_and_a_model_that_reaches_git():
    """The rules above can fail: made-up modules with a circle (also through a lazy import and a
    package's __init__), and a model module that reaches git through another module."""
    made_up = {
        "patchkit.a": ("from . import b\n", False),
        "patchkit.b": ("def f():\n    from .a import x\n", False),
        "patchkit.p": ("from .q import y\n", True),
        "patchkit.p.q": ("from .. import p\n", False),
        "patchkit.model": ("from .helper import z\n", False),
        "patchkit.helper": ("from .git import Repo\n", False),
        "patchkit.git": ("", True),
        "patchkit.c": ("from .d import x\nimport patchkit.e\n", False),
        "patchkit.d": ("", False),
        "patchkit.e": ("from patchkit.c import y\n", False),
    }
    graph = import_graph(made_up)
    assert cycles(graph) == [["patchkit.a", "patchkit.b", "patchkit.a"], ["patchkit.c", "patchkit.e", "patchkit.c"],
                             ["patchkit.p", "patchkit.p.q", "patchkit.p"]]
    assert "patchkit.git" in reachable(graph, "patchkit.model")

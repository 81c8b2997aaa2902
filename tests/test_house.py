"""The rules of the house, enforced: one git facade (the git/ package), one subprocess chokepoint (proc.py).

Issue #10: 41 git command lines in 10 modules bypassed the facade. These tests read every
module of the package (its syntax tree, so comments and docstrings do not count) and fail on
the line that breaks a rule.
"""
from __future__ import annotations

import ast
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

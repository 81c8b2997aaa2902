"""Run the selected tests in one tree, locally (source mode) or in an image (container mode)."""
from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .. import proc
from ..errors import BadInput

PLUGIN_DIR = Path(__file__).resolve().parent
CONTAINER_TREE, CONTAINER_PLUGIN, CONTAINER_OUT = "/patchkit/tree", "/patchkit/plugin", "/patchkit/out"


@dataclass
class TreeRun:
    """What pytest said about one tree: its exit status and every test's outcome."""

    name: str
    exitstatus: int
    collected: int
    tests: dict[str, dict] = field(default_factory=dict)  # node id -> {"outcome", "reason"}
    junit: str = ""
    stderr: str = ""  # the runner's complaint, when pytest could not report


@dataclass(frozen=True)
class Job:
    name: str  # "unpatched" or "patched"
    tree: Path
    out: Path  # where the outcome JSON and JUnit XML go
    image: str | None = None  # container mode


class Runner(Protocol):
    def run(self, jobs: list[Job], tests: list[str], source_modules: list[str]) -> list[TreeRun]: ...


def _pytest_args(tests: list[str], outcomes: str, junit: str) -> list[str]:
    return ["-q", "-p", "no:cacheprovider", "--continue-on-collection-errors",
            f"--outcomes-json={outcomes}", f"--junitxml={junit}", *tests]


class SourceRunner:
    """Runs the trees' tests here, loading the set's modules from each tree (sourcemode.py).

    conftest.py files are not loaded: upstream's import the whole runtime (torch, the
    bindings), which is what source mode exists to do without.
    """

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python

    def command(self, job: Job, tests: list[str], source_modules: list[str]) -> list[str]:
        mods = [a for m in source_modules for a in ("--source-module", m)]
        return [self.python, "-m", "pytest", "-p", "patchkit.delta.reportplugin", "-p", "patchkit.delta.sourcemode",
                "--noconftest", "--rootdir", str(job.tree), "--source-root", str(job.tree), *mods,
                *_pytest_args(tests, str(job.out / f"{job.name}.json"), str(job.out / f"{job.name}.xml"))]

    def run(self, jobs: list[Job], tests: list[str], source_modules: list[str]) -> list[TreeRun]:
        cmds = [(self.command(j, tests, source_modules), j.tree) for j in jobs]
        # The plugins live in this package: make it importable whatever the interpreter.
        pkg_parent = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [pkg_parent, os.environ.get("PYTHONPATH")])))
        # Only our two plugins: whatever else is installed here is not part of the test,
        # and loading every entry point costs more than the run itself.
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        results = proc.run_many(cmds, env=env)
        return [_read(j, r.returncode, r.stderr or r.stdout) for j, r in zip(jobs, results)]


class ContainerRunner:
    """Runs the trees' tests inside images with docker or podman: the installed package is
    the one under test, the tree only provides the test files."""

    def __init__(self, engine: str | None = None, python: str = "python3") -> None:
        self.engine, self.python = engine, python

    def command(self, job: Job, tests: list[str]) -> list[str]:
        if not job.image:
            raise BadInput("container mode needs an image for every tree")
        return [self.engine or "docker", "run", "--rm", "--network=none",
                "-v", f"{job.tree}:{CONTAINER_TREE}:ro", "-v", f"{PLUGIN_DIR}:{CONTAINER_PLUGIN}:ro",
                "-v", f"{job.out}:{CONTAINER_OUT}", "-w", CONTAINER_TREE, "-e", f"PYTHONPATH={CONTAINER_PLUGIN}",
                job.image, self.python, "-m", "pytest", "-p", "reportplugin", "--rootdir", CONTAINER_TREE,
                *_pytest_args(tests, f"{CONTAINER_OUT}/{job.name}.json", f"{CONTAINER_OUT}/{job.name}.xml")]

    def run(self, jobs: list[Job], tests: list[str], source_modules: list[str]) -> list[TreeRun]:
        from ..container.builders import BUILDERS
        engines = [self.engine] if self.engine else ["docker", "podman"]
        working = [e for e in engines if shutil.which(e) and BUILDERS[e].available()]
        if not working:
            raise BadInput(f"MODE=container needs {' or '.join(engines)} working here (a client and, for docker, "
                           "a daemon); use MODE=source")
        self.engine = working[0]
        results = [proc.run(self.command(j, tests), check=False) for j in jobs]
        return [_read(j, r.returncode, r.stderr or r.stdout) for j, r in zip(jobs, results)]


def _read(job: Job, returncode: int, output: str = "") -> TreeRun:
    path = job.out / f"{job.name}.json"
    if not path.is_file():
        last = next((ln for ln in reversed(output.strip().splitlines()) if ln.strip()), "")
        return TreeRun(job.name, returncode, 0, stderr=last)
    data = json.loads(path.read_text())
    tests = dict(data["tests"])
    tests.update(data["collect_errors"])
    junit = job.out / f"{job.name}.xml"
    return TreeRun(job.name, data["exitstatus"], data["collected"], tests, str(junit) if junit.exists() else "")

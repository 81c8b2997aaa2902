"""Run the selected tests in one tree, locally (source mode) or in an image (container mode)."""
from __future__ import annotations

import fnmatch
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol

from .. import fence, proc
from ..errors import BadInput

if TYPE_CHECKING:
    from ..container.builders import Builder, Mount

PLUGIN_DIR = Path(__file__).resolve().parent
# pytest's default python_files (upstream keeps the default): the test files it collects. A
# fix's C++ test (cpp/tests/...) is not one: make delta records it as not run, never passes it.
PYTEST_FILES = ("test_*.py", "*_test.py")
OUTCOMES = ("passed", "failed", "error", "skipped", "not_run")  # what reportplugin records of a test


def collects(path: str) -> bool:
    """Whether pytest collects this test file."""
    return any(fnmatch.fnmatchcase(PurePosixPath(path).name, p) for p in PYTEST_FILES)

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
    tests: tuple[str, ...] = ()  # this tree's own selection (default: the run's)


def only(run: TreeRun, files: list[str]) -> TreeRun:
    """A run of several fixes' tests cut to these test files: what pytest would have said of
    them alone (its exit status from their outcomes; a usage or internal error stays)."""
    wanted = set(files)
    tests = {t: v for t, v in run.tests.items() if t.split("::", 1)[0] in wanted}
    status = run.exitstatus
    if status in (0, 1, 5):
        bad = any(v["outcome"] in ("failed", "error") for v in tests.values())
        status = 1 if bad else 0 if tests else 5
    return TreeRun(run.name, status, len(tests), tests, run.junit, run.stderr)


class Runner(Protocol):
    said: str  # where the tests run, as said on screen

    def run(self, jobs: list[Job], tests: list[str], source_modules: list[str]) -> list[TreeRun]: ...


def _pytest_args(tests: list[str], outcomes: str, junit: str) -> list[str]:
    return ["-q", "-p", "no:cacheprovider", "--continue-on-collection-errors",
            f"--outcomes-json={outcomes}", f"--junitxml={junit}", *tests]


class SourceRunner:
    """Runs the trees' tests here, loading the set's modules from each tree (sourcemode.py),
    fenced (fence.py) wherever bubblewrap runs: a stack's tests are a pull request's code.

    conftest.py files are not loaded: upstream's import the whole runtime (torch, the
    bindings), which is what source mode exists to do without.
    """

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python
        self.fence, self.unfenced = fence.find()  # unfenced: why there is no fence here ('' when there is one)

    @property
    def said(self) -> str:
        return f"here, {self.fence.said}" if self.fence else f"here, NOT fenced ({self.unfenced}): with your network and home"

    def command(self, job: Job, tests: list[str], source_modules: list[str]) -> list[str]:
        mods = [a for m in source_modules for a in ("--source-module", m)]
        return [self.python, "-m", "pytest", "-p", "patchkit.delta.reportplugin", "-p", "patchkit.delta.sourcemode",
                "--noconftest", "--rootdir", str(job.tree), "--source-root", str(job.tree), *mods,
                *_pytest_args(list(job.tests or tests), str(job.out / f"{job.name}.json"), str(job.out / f"{job.name}.xml"))]

    def run(self, jobs: list[Job], tests: list[str], source_modules: list[str]) -> list[TreeRun]:
        cmds = [(self.command(j, tests, source_modules), j.tree) for j in jobs]
        # The plugins live in this package: make it importable whatever the interpreter.
        pkg_parent = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [pkg_parent, os.environ.get("PYTHONPATH")])))
        # Only our two plugins: whatever else is installed here is not part of the test,
        # and loading every entry point costs more than the run itself.
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        if self.fence:
            mine = {k: env[k] for k in ("PYTHONPATH", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
            cmds = [(self.fence.command(cmd, cwd=j.tree, writable=[j.tree, j.out], env=mine), j.tree)
                    for (cmd, _cwd), j in zip(cmds, jobs)]
        results = proc.run_many(cmds, env=env)
        return [_read(j, r.returncode, r.stderr or r.stdout) for j, r in zip(jobs, results)]


class ContainerRunner:
    """Runs the trees' tests inside images with a builder (buildah, podman or docker): the
    installed package is the one under test; the tree, mounted read-only, gives only the test
    files and their conftest.py; outcomes and JUnit come back through a mounted directory."""

    said = "in the images"

    def __init__(self, builder: "Builder", python: str = "python3") -> None:
        self.builder, self.python = builder, python

    def argv(self, job: Job, tests: list[str]) -> list[str]:
        return [self.python, "-m", "pytest", "-p", "reportplugin", "--rootdir", CONTAINER_TREE,
                *_pytest_args(list(job.tests or tests), f"{CONTAINER_OUT}/{job.name}.json", f"{CONTAINER_OUT}/{job.name}.xml")]

    def env(self, image: str) -> dict[str, str]:
        """What the run adds to the image's own environment: our plugin's folder after the
        image's PYTHONPATH, never instead of it (a base whose Python finds pytest through
        PYTHONPATH found nothing: 0 outcomes in both trees, issue #17 item 14)."""
        found = self.builder.inspect(image)
        theirs = found.env.get("PYTHONPATH", "") if found else ""
        return {"PYTHONPATH": ":".join(filter(None, [theirs, CONTAINER_PLUGIN]))}

    @staticmethod
    def mounts(job: Job) -> list["Mount"]:
        from ..container.builders import Mount
        return [Mount(job.tree, CONTAINER_TREE), Mount(PLUGIN_DIR, CONTAINER_PLUGIN), Mount(job.out, CONTAINER_OUT, False)]

    def run(self, jobs: list[Job], tests: list[str], source_modules: list[str]) -> list[TreeRun]:
        for j in jobs:
            if not j.image:
                raise BadInput("container mode needs an image for every tree")
        # One after the other: each run starts a container from a whole image, and two at once
        # only compete for the same disk.
        results = [self.builder.run(j.image, self.argv(j, tests), mounts=self.mounts(j), workdir=CONTAINER_TREE,
                                    env=self.env(j.image)) for j in jobs]
        runs = [_read(j, r.returncode, r.stdout + "\n" + r.stderr) for j, r in zip(jobs, results)]
        for j, run in zip(jobs, runs):
            if run.stderr:
                run.stderr = f"in {j.image}: {run.stderr}"
        return runs


def _read(job: Job, returncode: int, output: str = "") -> TreeRun:
    """The run's outcomes, from the files the run wrote. The run may be a pull request's code: a
    file it made a symlink (to the user's ssh key, say) is not read, and its JUnit XML not kept."""
    path = job.out / f"{job.name}.json"
    if path.is_symlink() or not path.is_file():
        last = next((ln for ln in reversed(output.strip().splitlines()) if ln.strip()), "")
        return TreeRun(job.name, returncode, 0, stderr=last)
    try:
        data = json.loads(path.read_text())
        tests = {str(k): {"outcome": v["outcome"] if v["outcome"] in OUTCOMES else "error",
                          "reason": str(v.get("reason", ""))}
                 for k, v in [*data["tests"].items(), *data["collect_errors"].items()]}
        status, collected = int(data["exitstatus"]), int(data["collected"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return TreeRun(job.name, returncode, 0, stderr=f"{path.name} is not what our report plugin writes")
    junit = job.out / f"{job.name}.xml"
    kept = junit.is_file() and not junit.is_symlink()
    return TreeRun(job.name, status, collected, tests, str(junit) if kept else "")

"""A walkthrough of the docs as a reader types it: the `$ ` lines of a console block, run in one
shell in the project (make's cwd) on a private copy of the sets, each judged by what the page
shows under it: exit 0, unless the page shows make's `*** [...] Error N` (the CLI's exit N,
a verdict or a refusal the page teaches), which the run must then show too."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from helpers import ROOT, copy_root

_ERROR = re.compile(r"^make: \*\*\* \[[^\]]*\] Error (\d+)$")


@dataclass
class Step:
    command: str
    shown: list[str] = field(default_factory=list)  # the output the page shows under it

    @property
    def exit(self) -> int:
        """The CLI's exit code the page shows (make's `Error N`), 0 when it shows none."""
        return next((int(m.group(1)) for line in self.shown if (m := _ERROR.match(line))), 0)


def steps(text: str, after: str = "") -> list[Step]:
    """The console block (the first after the heading `after`, when given) as steps."""
    if after:
        text = text.split(after, 1)[1]
    block = re.search(r"^```console\n(.*?)^```", text, re.M | re.S)[1]
    out: list[Step] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            out.append(Step(line[2:]))
        elif out:
            out[-1].shown.append(line)
    return out


@dataclass
class Ran:
    step: Step
    code: int
    stdout: str
    stderr: str

    def as_shown(self) -> bool:
        """Exit 0 where the page shows none; where it shows make's Error N, make failed with it."""
        if self.step.exit == 0:
            return self.code == 0
        return self.code != 0 and re.search(rf"\] Error {self.step.exit}$", self.stderr, re.M) is not None


def run(walk: list[Step], tmp_path: Path, env: dict[str, str] | None = None) -> list[Ran]:
    """Every step in one bash (a variable set by one is the next one's), the first (`W=...`)
    pointed into tmp_path; each step's output and exit kept. Nothing is written in the project:
    its sets are a copy (PATCHKIT_ROOT), BUILD is the test's."""
    assert re.fullmatch(r"W=build/[\w-]+", walk[0].command), walk[0].command
    logs = tmp_path / "steps"
    logs.mkdir()
    script = [f"W={tmp_path / 'w'}"]
    for i, s in enumerate(walk[1:], 1):
        script.append(f"{{ {s.command}\n}} > {logs}/{i}.out 2> {logs}/{i}.err; echo $? > {logs}/{i}.code")
    base = dict(os.environ, PATCHKIT_ROOT=str(copy_root(tmp_path)), BUILD=str(tmp_path / "build"), SETUP="", HOOKS="",
                PATCHKIT=f"{sys.executable} -m patchkit",
                PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    subprocess.run(["bash", "-c", "\n".join(script)], cwd=ROOT, env={**base, **(env or {})}, text=True,
                   capture_output=True)
    ran = []
    for i, s in enumerate(walk[1:], 1):
        code = logs / f"{i}.code"
        ran.append(Ran(s, int(code.read_text()) if code.exists() else -1,
                       (logs / f"{i}.out").read_text() if (logs / f"{i}.out").exists() else "",
                       (logs / f"{i}.err").read_text() if (logs / f"{i}.err").exists() else ""))
    return ran


def report(ran: list[Ran]) -> str:
    """The steps that did not end as the page shows, with their output's end."""
    return "\n".join(f"step {r.step.command!r}: exit {r.code}, the page shows {r.step.exit or 'success'}\n"
                     f"{r.stdout[-1500:]}{r.stderr[-1500:]}" for r in ran if not r.as_shown())

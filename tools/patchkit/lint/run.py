"""One run of the real pre-commit (from PyPI) in a lint workspace, and what it said per hook."""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .. import proc
from ..errors import ToolMissing
from .config import NOT_RUN

STATUS = re.compile(r"^(?P<name>.*?)\.*(?P<nofiles>\(no files to check\))?(?P<status>Passed|Failed|Skipped)$")


@dataclass
class HookRun:
    id: str
    status: str  # passed, failed, not_selected, not_run
    modified: bool = False
    output: str = ""
    details: list[str] = field(default_factory=list)


def engine() -> str:
    """The pre-commit that runs the hooks (its version is part of what a verdict depends on)."""
    from importlib.metadata import version
    return f"pre-commit {version('pre-commit')}"


def env(home: Path, wheelhouse: Path, git_env: dict[str, str]) -> dict[str, str]:
    """pre-commit's environment: its own cache, pip from the wheelhouse only, the mirrors."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_CONFIG_", "PIP_", "PRE_COMMIT"))}
    # Your git and pip configuration never reach the verdict: pre-commit's git reads only the
    # mirrors' insteadOf, pip only the wheelhouse.
    return {**keep, **git_env, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
            "PIP_CONFIG_FILE": os.devnull, "PRE_COMMIT_HOME": str(home), "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(wheelhouse), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "VIRTUALENV_NO_DOWNLOAD": "1", "PRE_COMMIT_COLOR": "never", "NO_COLOR": "1",
            "PYTHONDONTWRITEBYTECODE": "1"}


def pre_commit(work: Path, config: Path, files: list[str], environ: dict[str, str],
               hook: str | None = None) -> list[HookRun]:
    """`pre-commit run --files` on files; the hooks' verdicts in config order."""
    cmd = [sys.executable, "-m", "pre_commit", "run", "--config", str(config), "--color", "never", "--verbose"]
    cmd += ([hook] if hook else []) + ["--files", *files]
    res = proc.run(cmd, cwd=work, env=environ, check=False)
    if res.returncode not in (0, 1) or ("An unexpected error has occurred" in res.stdout + res.stderr):
        raise ToolMissing("pre-commit could not run the hooks: " + _first_error(res.stdout + "\n" + res.stderr))
    if "No module named pre_commit" in res.stderr:
        raise ToolMissing("pre-commit is not installed in this environment (make setup installs it)")
    return parse(res.stdout)


def _first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i, ln in enumerate(lines):
        if ln.startswith(("An unexpected error", "[ERROR]", "ERROR:")) or "Error" in ln.split(":")[0]:
            return " ".join(lines[i:i + 3])[:400]
    return " ".join(lines[-3:])[:400]


def parse(stdout: str) -> list[HookRun]:
    """pre-commit's verbose report: a status line, '- hook id: X', details, then the output."""
    lines = stdout.splitlines()
    runs: list[HookRun] = []
    i = 0
    while i < len(lines):
        m = STATUS.match(lines[i])
        if m and i + 1 < len(lines) and lines[i + 1].startswith("- hook id: "):
            hid = lines[i + 1][len("- hook id: "):].strip()
            status = {"Passed": "passed", "Failed": "failed"}.get(m["status"], "not_selected")
            run = HookRun(hid, status)
            i += 2
            body: list[str] = []
            while i < len(lines) and not (STATUS.match(lines[i]) and i + 1 < len(lines)
                                          and lines[i + 1].startswith("- hook id: ")):
                ln = lines[i]
                if ln.startswith("- ") and not body:
                    run.details.append(ln[2:])
                    run.modified |= ln == "- files were modified by this hook"
                else:
                    body.append(ln)
                i += 1
            run.output = "\n".join(body).strip("\n")
            if run.status == "failed" and NOT_RUN in run.output:
                run.status = "not_run"
            runs.append(run)
        else:
            i += 1
    return runs


def wants(run: HookRun, work: Path) -> str:
    """What a failing hook wants, in its own words, in one line."""
    text = run.output.replace(str(work) + os.sep, "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("- duration")]
    if run.modified:
        said = f" ({lines[0]})" if lines else ""
        return f"rewrites the file{said}"
    if not lines:
        code = next((d for d in run.details if d.startswith("exit code")), "")
        return f"fails ({code})" if code else "fails"
    first = lines[0]
    more = f" (+{len(lines) - 1} more lines)" if len(lines) > 1 else ""
    return (first[:200] + more)

"""One run of the real pre-commit (from PyPI) in a lint workspace, and what it said per hook."""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .. import atomic, proc
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


def env(home: Path, wheelhouse: Path, git_env: dict[str, str], uv: Path) -> dict[str, str]:
    """pre-commit's environment: its own cache, pip and uv from the wheelhouse only, the mirrors.

    With pre-commit-uv beside pre-commit (make setup puts it there when it builds .venv with
    uv), pre-commit builds each hook environment with uv (`uv venv --seed`, `uv pip install .`),
    from uv's settings in the file at uv (uv_config) and its cache beside it; without it, with
    virtualenv and pip, from the PIP_ settings."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_CONFIG_", "PIP_", "PRE_COMMIT", "UV_"))}
    # Your git, pip and uv configuration never reach the verdict: pre-commit's git reads only
    # the mirrors' insteadOf, pip and uv only the wheelhouse.
    return {**keep, **git_env, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
            "PIP_CONFIG_FILE": os.devnull, "PRE_COMMIT_HOME": str(home), "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(wheelhouse), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "UV_CONFIG_FILE": str(uv), "UV_NO_CONFIG": "1", "UV_CACHE_DIR": str(uv.parent / "cache"),
            "UV_OFFLINE": "1", "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1",
            "VIRTUALENV_NO_DOWNLOAD": "1", "PRE_COMMIT_COLOR": "never", "NO_COLOR": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            # A cold cache (make demo on a fresh clone, #27 item 5): each mirror's one-line package
            # was built in an isolated environment of its own, most of the cold lint. Its backend
            # is its own and needs nothing installed (mirrors.py), so pip builds it in the hook
            # environment itself (pip reads "0" here as: no isolation).
            "PIP_NO_BUILD_ISOLATION": "0"}


def uv_config(cache: Path, wheelhouse: Path) -> Path:
    """uv's settings for the hook environments, in a file of ours under cache/uv (named by its
    content, so runs with other wheelhouses never share one): the wheelhouse alone (uv reads
    --no-index from no variable, only from such a file), offline, no interpreter downloads.
    Given as UV_CONFIG_FILE it is the only configuration uv reads: not yours, and not upstream's
    pyproject.toml [tool.uv], which pre-commit-uv's `uv --project <workspace>` would read."""
    text = (f"no-index = true\noffline = true\nfind-links = [{json.dumps(str(wheelhouse))}]\n"
            'python-downloads = "never"\n')
    path = cache / "uv" / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.toml"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path, text)
    return path


class Failed(Exception):
    """pre-commit itself failed (not a hook): its own reason, in one line, and whether the config
    is what it rejects (any pre-commit would) or something missing here (this one is too old, an
    interpreter or a tool it needs is absent)."""

    def __init__(self, reason: str, rejected: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.rejected = rejected


def validate(config: Path) -> None:
    """pre-commit's own judgement of upstream's config (what `pre-commit validate-config` runs, in
    this process: a second interpreter's start-up per lint is half a second): Failed with its reason."""
    import logging

    from pre_commit.clientlib import InvalidConfigError, load_config
    quiet = logging.getLogger("pre_commit")
    level, propagate = quiet.level, quiet.propagate
    quiet.setLevel(logging.ERROR)  # its warnings (a mutable rev) are not a verdict; keep them off our output
    quiet.propagate = False
    try:
        load_config(str(config))
    except InvalidConfigError as exc:
        text = str(exc)
        # Only a version floor above this pre-commit is ours to lack; upstream's CI runs a newer one.
        raise Failed(reason(text), rejected=not _TOO_OLD.search(text)) from None
    except Exception as exc:  # noqa: BLE001 - pre-commit's own crash on a value it cannot read is its reason
        raise Failed(reason(f"An unexpected error has occurred: {type(exc).__name__}: {exc}"), rejected=True) from None
    finally:
        quiet.setLevel(level)
        quiet.propagate = propagate


_TOO_OLD = re.compile(r"pre-commit version \S+ is required but version \S+ is installed")
_ERROR = re.compile(r"^An (unexpected )?error has occurred")


def pre_commit(work: Path, config: Path, files: list[str], environ: dict[str, str],
               hook: str | None = None) -> list[HookRun]:
    """`pre-commit run --files` on files; the hooks' verdicts in config order. Failed when
    pre-commit itself could not run them (no verdict is read from such a run)."""
    cmd = [sys.executable, "-m", "pre_commit", "run", "--config", str(config), "--color", "never", "--verbose"]
    cmd += ([hook] if hook else []) + ["--files", *files]
    res = proc.run(cmd, cwd=work, env=environ, check=False)
    if "No module named pre_commit" in res.stderr:
        raise ToolMissing("pre-commit is not installed in this environment (make setup installs it)")
    text = res.stdout + "\n" + res.stderr
    runs = parse(res.stdout)
    said_error = any(_ERROR.match(ln) for ln in text.splitlines())
    if res.returncode not in (0, 1) or (said_error and not runs) or (res.returncode != 0 and not runs):
        raise Failed(reason(text), rejected=False)
    return runs


def reason(text: str) -> str:
    """pre-commit's own account of a failure, whole, on one line: the error and what the failing
    command said (a CalledProcessError's stdout and stderr too), or a config's path and complaint."""
    lines = [ln.strip() for ln in text.splitlines()]
    start = next((i for i, ln in enumerate(lines) if _ERROR.match(ln) or ln.startswith("==> ")), None)
    if start is None:
        said = [ln for ln in lines if ln]
        return " ".join(said[-3:]) or "no output"
    where, said = [], []
    for ln in lines[start:]:
        if ln.startswith("Check the log at"):
            break
        if ln.startswith("==> File "):  # we name upstream's file ourselves
            continue
        if ln.startswith("==> "):
            where.append(ln[4:])
        elif ln:
            said.append(ln[6:].strip() if ln.startswith("=====>") else ln)
    return ((" > ".join(where) + ": ") if where else "") + " ".join(said)[:2000]


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

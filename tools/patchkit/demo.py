"""make demo: the main job end to end on the miniature upstream, with the real patch sets.

Each step is what a user runs by hand (#27 item 4): the command, with the demo's own paths and
the miniature's file:// URL, so that any one of them, copied, runs on the miniature and never
reaches GitHub. The CLI says each command in the user's vocabulary and prints one line per step;
every step's whole output, and the PR bodies, go to files the summary names.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import apply as apply_mod, check as check_mod, miniature, patchset
from .delta import command as delta_cmd
from .errors import BadInput
from .git import Repo
from .upstream import base_of
from .lint import command as lint_cmd
from .pr import branch as pr_branch
from .waives import report as waiver_report


@dataclass
class Step:
    """One step: the set it is for ('' for the miniature), what it is, the command a user runs
    for it (a subcommand and its settings, as a Hint has them), and what it returned."""

    target: str
    kind: str  # miniature, apply, apply-again, check, waivers, delta, lint, pr
    command: str
    settings: tuple[tuple[str, Any], ...]
    result: Any
    said: str = ""  # the command as the user runs it (the CLI fills it in, in their vocabulary)


@dataclass
class DemoResult:
    upstream: str
    workdir: str = ""
    ok: bool = True
    steps: list[Step] = field(default_factory=list)
    full: str = ""  # the file with every step's whole output (the CLI writes it)


def run(root: Path, workdir: Path, signoff: str | None = None) -> DemoResult:
    """On the miniature built under workdir, for each target: apply by partial clone, apply again,
    check, waivers, delta, lint and pr (pr is skipped, and says why, when no sign-off identity is set)."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    mini = miniature.build(root, workdir / "upstream")
    url = mini.path.as_uri()
    result = DemoResult(str(mini.path), str(workdir))
    result.steps.append(Step("", "miniature", "miniature", (("dest", str(mini.path)),), mini))
    sets = [patchset.load(root, t) for t in patchset.targets(root)]
    for ps in sets:
        src = workdir / f"trtllm-{ps.target}"
        on = (("target", ps.target), ("src", str(src)))

        def step(kind: str, command: str, res: Any, *more: tuple[str, Any], target: str = ps.target) -> Any:
            result.steps.append(Step(target, kind, command, (*on, *more) if command != "check" else more, res))
            return res

        step("apply", "apply", apply_mod.apply(ps, src=src, url=url), ("url", url))
        step("apply-again", "apply", apply_mod.apply(ps, src=src, url=url), ("url", url))
        step("check", "check", check_mod.check(sets, src=src), ("src", str(src)))
        ref, _ = base_of(Repo(src), ps)
        step("waivers", "waivers", waiver_report.report(ps, Repo(src), ref))
        report = workdir / f"delta-{ps.target}.json"
        d = step("delta", "delta", delta_cmd.delta(ps, repo=Repo(src), mode="source", report=report),
                 ("mode", "source"), ("report", str(report)))
        result.ok = result.ok and d.ok
        lint_report = workdir / f"lint-{ps.target}.json"
        linted = step("lint", "lint", lint_cmd.lint(ps, repo=Repo(src), report=lint_report,
                                                    cache=lint_cmd.default_cache(root)), ("report", str(lint_report)))
        out = workdir / "pr" / ps.target
        pr_settings = (("report", str(report)), *((("signoff", signoff),) if signoff else ()), ("out", str(out)))
        try:
            step("pr", "pr", pr_branch.pr(ps, repo=Repo(src), report=report, out_dir=out, signoff=signoff,
                                          lint=lint_cmd.as_dict(linted)), *pr_settings)
        except BadInput as exc:
            step("pr", "pr", f"skipped: {exc.message}", *pr_settings)
    return result

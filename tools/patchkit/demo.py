"""make demo: the main job end to end on the miniature upstream, with the real patch sets.

Each step is what a user runs by hand (#27 item 4): the command, with the demo's own paths and
the miniature's file:// URL, so that any one of them, copied, runs on the miniature and never
reaches GitHub. The CLI says each command in the user's vocabulary and prints one line per step;
every step's whole output, and the PR bodies, go to files the summary names.

Every step works on a copy of the project's patches/ and waivers/ in the workdir, never on the
project's own, and says so (PATCHKIT_ROOT, or --root). rc25 carries a stack (#26): make backport
carries the miniature's PR 19450 (the scheduler guard the #19514 fix was verified on top of)
into that copy.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import apply as apply_mod, check as check_mod, miniature, patchset
from .backport import command as backport_cmd
from .delta import command as delta_cmd
from .errors import BadInput
from .git import Repo
from .upstream import base_of
from .lint import command as lint_cmd
from .pr import command as pr_cmd
from .waives import report as waiver_report


@dataclass
class Step:
    """One step: the set it is for ('' for the miniature), what it is, the command a user runs
    for it (a subcommand and its settings, as a Hint has them), and what it returned."""

    target: str
    kind: str  # miniature, backport, apply, apply-again, check, waivers, delta, lint, pr
    command: str
    settings: tuple[tuple[str, Any], ...]
    result: Any
    said: str = ""  # the command as the user runs it (the CLI fills it in, in their vocabulary)
    root: str = ""  # the project whose patch sets it used, when not the user's: the demo's copy


@dataclass
class DemoResult:
    upstream: str
    workdir: str = ""
    project: str = ""  # the demo's copy of patches/ and waivers/, which every step works on
    fixes: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # target -> its stack: (fix id, kind)
    ok: bool = True
    steps: list[Step] = field(default_factory=list)
    # What to run next (result None): one table of the demo's reports (summary), the main job on
    # real upstream (upstream); said by the CLI in the user's words, as the steps are.
    next: list[Step] = field(default_factory=list)
    full: str = ""  # the file with every step's whole output (the CLI writes it)


# The upstream PR the demo carries as a backport, and the set that carries it: the miniature's
# 19450 (the C++ guard, open upstream), beneath our own fix.
BACKPORT = ("rc25", "19450")


def run(root: Path, workdir: Path, signoff: str | None = None) -> DemoResult:
    """On the miniature built under workdir, for each target: (rc25: make backport of PR 19450
    into the demo's copy of the sets) apply by partial clone, apply again, check, waivers, delta,
    lint and pr (pr is skipped, and says why, when no sign-off identity is set).

    Every step works on the demo's copy of the sets (workdir/project), and what it makes goes
    where the command itself puts it by default in that project (the checkout in
    build/trtllm-<target>, the reports in build/delta/ and build/lint/, the PR in build/pr/), so
    that each command says only what differs from its defaults: the project, the set, the
    miniature's URL (#31 item 13: with three paths each, the demo's lines were 300 characters wide)."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    mini = miniature.build(root, workdir / "upstream")
    url = mini.path.as_uri()
    project = workdir / "project"
    for folder in ("patches", "waivers"):
        if (root / folder).is_dir():
            shutil.copytree(root / folder, project / folder)
    build = project / "build"
    result = DemoResult(str(mini.path), str(workdir), str(project))
    result.steps.append(Step("", "miniature", "miniature", (("dest", str(mini.path)),), mini))
    for target in patchset.targets(project):
        src = build / f"trtllm-{target}"

        def step(kind: str, command: str, res: Any, *more: tuple[str, Any]) -> Any:
            on = (("target", target),) if command != "check" else ()
            result.steps.append(Step(target, kind, command, (*on, *more), res, root=str(project)))
            return res

        if target == BACKPORT[0]:
            step("backport", "backport", backport_cmd.backport(patchset.load(project, target), root=project, src=src,
                                                               url=url, pr=BACKPORT[1]), ("url", url), ("pr", BACKPORT[1]))
        ps = patchset.load(project, target)
        result.fixes[target] = [(f.id, f.kind) for f in ps.fixes]
        sets = [patchset.load(project, t) for t in patchset.targets(project)]
        step("apply", "apply", apply_mod.apply(ps, src=src, url=url), ("url", url))
        step("apply-again", "apply", apply_mod.apply(ps, src=src, url=url), ("url", url))
        step("check", "check", check_mod.check(sets, src=src), ("src", str(src)))
        ref, _ = base_of(Repo(src), ps)
        step("waivers", "waivers", waiver_report.report(ps, Repo(src), ref))
        report = build / "delta" / f"{ps.target}.json"
        d = step("delta", "delta", delta_cmd.delta(ps, repo=Repo(src), mode="source", report=report), ("mode", "source"))
        result.ok = result.ok and d.ok
        step("lint", "lint", lint_cmd.lint(ps, repo=Repo(src), report=build / "lint" / f"{ps.target}.json",
                                           cache=lint_cmd.default_cache(project)))
        pr_settings = (("signoff", signoff),) if signoff else ()
        try:
            step("pr", "pr", pr_cmd.run(project, ps, Repo(src), report=report, out=build / "pr" / ps.target,
                                        signoff=signoff), *pr_settings)
        except BadInput as exc:
            step("pr", "pr", f"skipped: {exc.message}", *pr_settings)
    result.next = next_steps(project)
    return result


def next_steps(project: Path) -> list[Step]:
    """What the demo suggests next: one table of its reports (on its copy of the sets, which they
    were made on), then the main job on real upstream (on the user's own sets)."""
    return [Step("", "summary", "summary", (("reports", str(project / "build")),), None, root=str(project)),
            *(Step("main", "upstream", c, (("target", "main"),), None) for c in ("apply", "delta", "pr"))]

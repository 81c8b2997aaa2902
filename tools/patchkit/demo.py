"""make demo: the main job end to end on the miniature upstream, with the real patch sets."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from . import apply as apply_mod, check as check_mod, miniature, patchset
from .delta import command as delta_cmd
from .errors import BadInput
from .git import Repo
from .upstream import base_of
from .lint import command as lint_cmd
from .pr import branch as pr_branch
from .waives import report as waiver_report


@dataclass
class DemoResult:
    upstream: str
    ok: bool = True
    sections: list[tuple[str, str, object]] = field(default_factory=list)  # (title, kind of result, result)


def run(root: Path, workdir: Path, signoff: str | None = None) -> DemoResult:
    """On the miniature built under workdir, for each target: apply by partial clone, apply again,
    check, waivers, delta and pr (pr is skipped, and says why, when no sign-off identity is set)."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    mini = miniature.build(root, workdir / "upstream")
    url = mini.path.as_uri()
    result = DemoResult(str(mini.path))
    sets = [patchset.load(root, t) for t in patchset.targets(root)]
    for ps in sets:
        src = workdir / f"trtllm-{ps.target}"
        first = apply_mod.apply(ps, src=src, url=url)
        again = apply_mod.apply(ps, src=src, url=url)
        result.sections.append((f"make apply TRTLLM={ps.target} (partial clone of {url})", "apply", first))
        result.sections.append((f"make apply TRTLLM={ps.target} again", "apply", again))
        result.sections.append((f"make check TRTLLM_SRC={src}", "check", check_mod.check(sets, src=src)))
        ref, _ = base_of(Repo(src), ps)
        result.sections.append((f"make waivers TRTLLM={ps.target}", "waivers", waiver_report.report(ps, Repo(src), ref)))
        report = workdir / f"delta-{ps.target}.json"
        d = delta_cmd.delta(ps, repo=Repo(src), mode="source", report=report)
        result.sections.append((f"make delta TRTLLM={ps.target}", "delta", d))
        result.ok = result.ok and d.ok
        try:
            linted = lint_cmd.lint(ps, repo=Repo(src), report=workdir / f"lint-{ps.target}.json",
                                   cache=lint_cmd.default_cache(root))
            result.sections.append((f"make lint TRTLLM={ps.target}", "lint", linted))
            pr = pr_branch.pr(ps, repo=Repo(src), report=report, out_dir=workdir / "pr" / ps.target, signoff=signoff,
                              lint=lint_cmd.as_dict(linted))
            result.sections.append((f"make pr TRTLLM={ps.target}", "pr", pr))
        except BadInput as exc:
            result.sections.append((f"make pr TRTLLM={ps.target}", "pr", f"skipped: {exc.message}"))
    return result

"""make demo: the main job end to end on the miniature upstream, with the real patch sets."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from . import apply as apply_mod, check as check_mod, miniature, patchset, render
from .delta import command as delta_cmd
from .git import Repo


@dataclass
class DemoResult:
    upstream: str
    ok: bool = True
    sections: list[tuple[str, str]] = field(default_factory=list)


def run(root: Path, workdir: Path) -> DemoResult:
    """Build the miniature under workdir, check every target, apply each by partial clone, then again."""
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
        result.sections.append((f"make apply TRTLLM={ps.target} (partial clone of {url})", render.apply_result(first)))
        result.sections.append((f"make apply TRTLLM={ps.target} again", render.apply_result(again)))
        result.sections.append((f"make check TRTLLM_SRC={src}", render.check_results(check_mod.check(sets, src=src))))
        d = delta_cmd.delta(ps, repo=Repo(src), mode="source", report=workdir / f"delta-{ps.target}.json")
        result.sections.append((f"make delta TRTLLM={ps.target}", delta_cmd.render(d)))
        result.ok = result.ok and d.ok
    return result


def render_demo(r: DemoResult) -> str:
    out = [f"miniature upstream: {r.upstream}"]
    for title, body in r.sections:
        out += ["", f"== {title}", body]
    return "\n".join(out)

"""make pr as the CLI runs it: the own fix it is for, upstream's hooks on that fix's series, then
the branch, title and body (branch.py)."""
from __future__ import annotations

from pathlib import Path

from ..git import Repo
from ..lint import command as lint_cmd
from ..model import PatchSet
from ..upstream import base_of
from . import branch, depends as depends_mod


def run(root: Path, ps: PatchSet, repo: Repo, *, fix_id: str | None = None, report: Path | None = None,
        out: Path | None = None, signoff: str | None = None, fork: str | None = None,
        author: str | None = None, notes: bool = False) -> branch.PrResult:
    """make pr FIXID=<id>: on a stack of several own fixes the fix must be named (BadInput
    listing them); the PR carries that fix alone."""
    fix = branch.own_fix(ps, fix_id)
    called = branch.name(ps, fix)
    # Whether the fix stands on the ref alone is measured once, before the lint applies its series.
    needs = depends_mod.measure(ps, fix, repo, base_of(repo, ps)[1])
    # The fix's files through upstream's own pre-commit hooks first: "coding guidelines" is
    # ticked from this run, for this series at this commit, or not at all. Its report goes with
    # the PR's title and body (<out>/lint.json), not over make lint's own.
    linted = lint_cmd.judged(branch.view(ps, fix), repo=repo, report=None, cache=lint_cmd.default_cache(root),
                           merge_bases=needs.merge_bases)
    return branch.pr(ps, repo=repo, report=(report or root / "build" / "delta" / f"{ps.target}.json").resolve(),
                     out_dir=(out or root / "build" / "pr" / called).resolve(), signoff=signoff,
                     lint=lint_cmd.as_dict(linted), fork=fork, author=author, fix_id=fix.id, depends=needs,
                     notes=notes)

"""make apply / make unapply: the series as commits on the target's branch, all or nothing."""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from . import series
from .delta import upstreamfix
from .errors import Conflict, Hint, NotFound
from .git import Repo, Sha
from .model import PatchSet
from .transaction import require_clean, transaction
from .upstream import base_of, obtain, refuse_symlinked_paths
from .waives import edit as waiver_edit
from .waives.narrow import Narrowing


@dataclass
class ApplyResult:
    target: str
    checkout: str
    branch: str
    base_ref: str
    base: str
    tip: str
    cloned: bool
    already_applied: bool
    outcomes: list[series.Outcome] = field(default_factory=list)
    waiver: Narrowing | None = None


def _state_file(repo: Repo, target: str) -> Path:
    return repo.git_path(f"patchkit/{target}.json")


def read_state(repo: Repo, target: str) -> dict | None:
    f = _state_file(repo, target)
    return json.loads(f.read_text()) if f.is_file() else None


def apply(ps: PatchSet, *, src: Path, url: str | None = None, threeway: bool = False) -> ApplyResult:
    """Apply ps to the checkout at src (cloning it first when missing); raise on any conflict."""
    repo, cloned = obtain(ps, src, url)
    try:
        return _apply(ps, repo, cloned, threeway)
    except BaseException:
        if cloned:
            shutil.rmtree(src, ignore_errors=True)
        raise


def _apply(ps: PatchSet, repo: Repo, cloned: bool, threeway: bool) -> ApplyResult:
    require_clean(repo)
    base_ref, base = base_of(repo, ps)
    branch_ref = f"refs/heads/{ps.branch}"
    existing = repo.rev_parse(branch_ref)
    state = read_state(repo, ps.target)
    result = ApplyResult(ps.target, str(repo.path), ps.branch, base_ref, base, existing or base, cloned, False)
    if existing:
        if state and state["tip"] == existing and state["base"] == base and state["set_hash"] == ps.content_hash:
            result.already_applied = True
            return result
        why = ("was built from another version of the patch set or another base" if state
               else "was not made by apply")
        raise Conflict(f"branch {ps.branch} already exists and {why}",
                       hint=Hint("unapply", also="or delete the branch; then apply again"))
    refuse_symlinked_paths(repo, base, ps)

    res = series.apply_series(repo, base, ps.patches, threeway=threeway, committer=repo.identity(),
                              extra=lambda tb: waiver_edit.apply_to(tb, ps), merge_bases=[ps.upstream.recorded_base])
    fix = upstreamfix.probe(ps, repo, base, res.outcomes) if upstreamfix.needs_probe(res.outcomes) else None
    if fix is not None and fix.fixed:
        # Our fix must not be stacked on upstream's, not even by a clean 3-way merge.
        raise Conflict(f"{ps.target}: {fix.summary()}; nothing applied; {fix.advice()}",
                       details=series.drift_report(res.outcomes))
    res.raise_on_conflict(hint=None if threeway else Hint.run(None, threeway=True),
                          note=fix.summary() if fix is not None else "")
    result.outcomes, result.tip, result.waiver = res.outcomes, res.tip, res.extra

    with transaction(repo) as snap:
        repo.update_ref(branch_ref, res.tip, None, f"patchkit: apply {ps.target}")
        state_file = _state_file(repo, ps.target)
        state_file.parent.mkdir(parents=True, exist_ok=True)
        state_file.write_text(json.dumps({
            "target": ps.target, "branch": ps.branch, "base": base, "tip": res.tip,
            "set_hash": ps.content_hash, "previous_symbolic": snap.symbolic_head, "previous_head": snap.head,
        }, indent=2) + "\n")
        try:
            repo.checkout(ps.branch)
        except BaseException:
            state_file.unlink(missing_ok=True)
            raise
    return result


@dataclass
class UnapplyResult:
    target: str
    checkout: str
    branch: str
    restored: str


def unapply(ps: PatchSet, *, src: Path) -> UnapplyResult:
    """Return the checkout to where it was before make apply, and drop the target's branch."""
    repo = Repo.open(src)
    state = read_state(repo, ps.target)
    if not state:
        raise NotFound(f"{ps.target} was not applied to {src} by apply; nothing to unapply")
    branch_ref = f"refs/heads/{state['branch']}"
    tip = repo.rev_parse(branch_ref)
    with transaction(repo):
        restored = state["previous_symbolic"] or state["previous_head"]
        repo.checkout(restored.removeprefix("refs/heads/") if state["previous_symbolic"] else restored)
        if tip:
            if tip != state["tip"]:
                raise Conflict(f"branch {state['branch']} has commits made after apply; "
                               f"move them elsewhere or delete the branch by hand")
            repo.delete_ref(branch_ref, Sha(tip))
        _state_file(repo, ps.target).unlink()
    return UnapplyResult(ps.target, str(repo.path), state["branch"], restored)

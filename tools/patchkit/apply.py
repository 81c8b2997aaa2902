"""make apply / make unapply: the series as commits on the target's branch, all or nothing."""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import applied, lock, series, state
from .applied import APPLIED, APPLYING, SAME, SIGNED, UNAPPLYING, read_state
from .delta import upstreamfix
from .errors import Conflict, Hint, NotFound
from .git import GitError, Repo, Sha, short_ref
from .model import PatchSet
from .transaction import require_clean, transaction
from .upstream import base_of, discard_clone, obtain, refuse_symlinked_paths
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
    checked_out_again: bool = False
    outcomes: list[series.Outcome] = field(default_factory=list)
    waiver: Narrowing | None = None
    notes: list[str] = field(default_factory=list)  # what was found and dealt with on the way


def apply(ps: PatchSet, *, src: Path, url: str | None = None, threeway: bool = False) -> ApplyResult:
    """Apply ps to the checkout at src (cloning it first when missing); raise on any conflict."""
    with contextlib.ExitStack() as held:
        repo, cloned = obtain(ps, src, url, hold=held, command=f"apply {ps.target}")
        try:
            return _apply(ps, repo, cloned, threeway, url)
        except BaseException:
            if cloned:
                discard_clone(src)
            raise
    raise AssertionError("unreachable")


def _previous(st: dict) -> str:
    """What to check out to get back to where the user was: the branch name, or the commit."""
    return short_ref(st["previous_symbolic"]) if st["previous_symbolic"] else st["previous_head"]


def _go(repo: Repo, st: dict, rev: str) -> None:
    """Check out rev after a kill inside git checkout, which may have left a stale index.lock,
    half-written tracked files and new files of the series not yet tracked.

    Only what git was doing for us is overwritten or removed: changed files must be ones the
    previous HEAD and the series' tip disagree on, and an untracked file is removed only
    when it holds exactly the series' content. Anything else is the user's and stops us."""
    lock_file = repo.git_path("index.lock")
    if lock_file.exists():
        lock_file.unlink()
    previous, tip = st["previous_head"], st["tip"]
    ours = set(repo.changed_paths(previous, tip)) if previous else set()
    dirty = repo.is_dirty()
    theirs = [p for p in dirty if p not in ours]
    if theirs:
        raise Conflict(f"{repo.path} has changes patchkit did not make ({theirs[0]}); an interrupted "
                       f"apply cannot be finished over them", hint=Hint(also="commit or stash them, then run again"))
    going_back = rev != st["branch"]
    if going_back and previous:
        for p in repo.added_paths(previous, tip):
            f = repo.path / p
            if f.is_file() and not f.is_symlink() and not repo.is_tracked(p) and f.read_bytes() == repo.show_file(tip, p):
                f.unlink()
    if dirty:
        repo.force_checkout(rev)
    else:
        repo.checkout(rev)


def recover(repo: Repo, st: dict, notes: list[str] | None = None) -> str:
    """Finish or undo what an interrupted apply or unapply left; returns what was done.

    Intent is recorded before any ref moves, so a state file in phase 'applying' or
    'unapplying' means a kill happened between there and the end. Apply is finished when
    it got as far as checking the branch out; otherwise, and for unapply, the checkout goes
    back to where the user was before apply and the branch is dropped.
    """
    notes = notes if notes is not None else []
    branch_ref = f"refs/heads/{st['branch']}"
    head_ref, tip = repo.symbolic_head(), repo.rev_parse(branch_ref)
    if st["phase"] == APPLYING and head_ref == branch_ref and tip == st["tip"]:
        _go(repo, st, st["branch"])
        state.write(repo, st["target"], dict(st, phase=APPLIED))
        return "finished"
    rev = applied.destination(repo, st, notes)
    if rev is not None:
        _go(repo, st, rev)
    if tip is not None and applied.since_apply(repo, st, tip) in (SAME, SIGNED):
        _drop_branch(repo, st, tip, notes)
    state.remove(repo, st["target"])
    return "undone"


def _drop_branch(repo: Repo, st: dict, tip: Sha, notes: list[str]) -> None:
    """Delete the set's branch (and the backup make dco FIX=1 kept of what apply made), unless
    another worktree has it checked out."""
    ref = f"refs/heads/{st['branch']}"
    there = repo.checked_out_elsewhere().get(ref)
    if there:
        notes.append(f"kept branch {st['branch']}: it is checked out in {there}")
        return
    repo.delete_ref(ref, tip)
    backup = applied.backup_ref(st["branch"])
    if tip != st["tip"] and repo.rev_parse(backup) == st["tip"]:
        repo.delete_ref(backup, Sha(st["tip"]))
        notes.append(f"{st['branch']} carried the sign-offs make dco FIX=1 added; removed it with {backup}, "
                     f"which held it as apply made it")


def _apply(ps: PatchSet, repo: Repo, cloned: bool, threeway: bool, url: str | None = None) -> ApplyResult:
    notes: list[str] = []
    st = read_state(repo, ps.target, notes)
    if st is not None:
        applied.revive(repo, st, notes)
    if st is not None and st["phase"] != APPLIED:
        recover(repo, st, notes)
        st = read_state(repo, ps.target)
    require_clean(repo)
    base_ref, base = base_of(repo, ps, url)
    branch_ref = f"refs/heads/{ps.branch}"
    there = repo.checked_out_elsewhere().get(branch_ref)
    if there:
        raise Conflict(f"branch {ps.branch} is checked out in {there}, another worktree of this repository; "
                       f"the set is applied there", hint=Hint.run(None, src=str(there)))
    existing = repo.rev_parse(branch_ref)
    if st is not None and existing is None:
        # The branch was deleted by hand (or renamed to keep commits made on it): the record is stale.
        state.remove(repo, ps.target)
        notes.append(f"found a record of an earlier apply of {ps.target} whose branch {ps.branch} is gone; "
                     f"dropped it and applied afresh")
        st = None
    result = ApplyResult(ps.target, str(repo.path), ps.branch, base_ref, base, existing or base, cloned, False,
                         notes=notes)
    if existing:
        kind = applied.since_apply(repo, st, existing) if st else None
        if kind not in (None, SAME, SIGNED):
            raise applied.changed_since(repo, st, existing, kind)
        if st and st["base"] == base and st["set_hash"] == ps.content_hash:
            if repo.symbolic_head() == branch_ref:
                result.already_applied = True
                return result
            # Built before, but the user has checked out something else since: check it out again.
            with transaction(repo):
                refuse_untracked(repo, existing)
                _checkout(repo, ps.branch)
            result.already_applied = result.checked_out_again = True
            return result
        if st:
            raise Conflict(f"branch {ps.branch} already exists and was built from another version of the patch "
                           f"set or another base", hint=Hint("unapply", also="or delete the branch; then apply again"))
        # Not ours: unapply refuses it too, so the way out is to move the user's branch aside.
        keep = repo.user_command("branch", "-m", ps.branch, f"{ps.branch}-mine")
        raise Conflict(f"branch {ps.branch} already exists and was not made by apply",
                       hint=Hint(None, also=f"after keeping your branch under another name: {keep}"))
    refuse_symlinked_paths(repo, base, ps)

    res = series.apply_series(repo, base, ps.patches, threeway=threeway, committer=repo.identity(),
                              extra=lambda tb: waiver_edit.apply_to(tb, ps), merge_bases=[ps.upstream.recorded_base],
                              announce="applying")
    fix = upstreamfix.probe(ps, repo, base, res.outcomes) if upstreamfix.needs_probe(res.outcomes) else None
    if fix is not None and fix.fixed:
        # Our fix must not be stacked on upstream's, not even by a clean 3-way merge.
        raise Conflict(f"{ps.target}: {fix.summary()}; nothing applied; {fix.advice()}",
                       details=series.drift_report(res.outcomes), hint=Hint.radar(ps.target))
    try:
        res.raise_on_conflict(hint=Hint.radar(ps.target) if threeway else Hint.run(None, threeway=True),
                              note=fix.summary() if fix is not None else "")
    except Conflict as exc:
        exc.more = () if threeway else (Hint.radar(ps.target),)
        raise
    result.outcomes, result.tip, result.waiver = res.outcomes, res.tip, res.extra
    refuse_untracked(repo, res.tip)

    with transaction(repo, creates=[branch_ref]) as snap:
        # Intent first, atomically: a kill after this line is finished or undone by the next run.
        record = {"phase": APPLYING, "target": ps.target, "branch": ps.branch, "base": base, "tip": res.tip,
                  "set_hash": ps.content_hash, "previous_symbolic": snap.symbolic_head, "previous_head": snap.head}
        state.write(repo, ps.target, record)
        try:
            repo.update_ref(branch_ref, res.tip, None, f"patchkit: apply {ps.target}")
            _checkout(repo, ps.branch)
            state.write(repo, ps.target, dict(record, phase=APPLIED))
        except BaseException:
            state.remove(repo, ps.target)
            raise
    return result


def refuse_untracked(repo: Repo, tip: str) -> None:
    """Conflict when checking out tip would have to overwrite a file git does not track.

    git checkout refuses too, but only after the branch exists, and in its own words."""
    head = repo.head()
    for p in repo.added_paths(head, tip) if head else []:
        if os.path.lexists(repo.path / p):
            raise Conflict(f"{repo.path / p} is not tracked by git, and the series adds a file there; "
                           f"move it away (or commit it on another branch), then run again")


def _checkout(repo: Repo, rev: str) -> None:
    before = repo.head()
    failing = repo.failing_filter(before, rev) if before else None
    if failing:  # before git checkout, which would delete the file and stop half-way
        raise Conflict(f"checking out {rev} in {repo.path} would fail on {failing[0]}: {failing[1]}; "
                       f"fix that filter (git-lfs installed?), then run again")
    try:
        said = repo.checkout(rev)
    except GitError as exc:
        raise Conflict(f"checking out {rev} failed in {repo.path}: {exc.first_line()}") from exc
    _verify_checkout(repo, rev, before, said)


def _verify_checkout(repo: Repo, rev: str, before: str | None, said: str) -> None:
    """The work tree matches rev after git checkout, or Conflict naming the path it could not write.

    git checkout exits 0 when a file cannot be written or removed (chattr +i, a read-only
    folder for a user who is not root): apply said "applied" while the files were main's
    (issue #17 item 7). Tracked files must match HEAD, and the files rev does not have must
    be gone.
    """
    left = repo.is_dirty()
    if before:
        left += [p for p in repo.added_paths(rev, before) if os.path.lexists(repo.path / p)]
    if not left:
        return
    errors = [line.removeprefix("error: ") for line in said.splitlines() if line.startswith("error:")]
    cause = next((e for e in errors if left[0] in e), errors[0] if errors else "it is not writable")
    more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
    raise Conflict(f"checking out {rev} could not write {repo.path / left[0]}{more}: {cause}")


@dataclass
class UnapplyResult:
    target: str
    checkout: str
    branch: str
    restored: str
    moved: bool = True  # False: HEAD stayed where it was (where apply started is gone)
    notes: list[str] = field(default_factory=list)
    left: str | None = None  # another set's branch this unapply left, still applied

    @property
    def hints(self) -> list[Hint]:
        return [Hint.run("unapply", target=self.left)] if self.left else []


def unapply(ps: PatchSet, *, src: Path) -> UnapplyResult:
    """Return the checkout to where it was before make apply, and drop the target's branch."""
    repo = Repo.open(src)
    with lock.hold(repo.common_path(lock.NAME), f"unapply {ps.target}", str(src)):
        notes: list[str] = []
        st = read_state(repo, ps.target, notes)
        if not st:
            there = repo.checked_out_elsewhere().get(f"refs/heads/{ps.branch}")
            if there:  # applied in another worktree of the repository: its record is there
                raise NotFound(f"{ps.target} was not applied to {src} by apply; nothing to unapply here: its branch "
                               f"{ps.branch} is checked out in {there}", hint=Hint.run(None, src=str(there)))
            raise NotFound(f"{ps.target} was not applied to {src} by apply; nothing to unapply")
        applied.revive(repo, st, notes)
        if st["phase"] != APPLIED:
            recover(repo, st, notes)  # finishes an interrupted apply, or undoes it
            st = read_state(repo, ps.target)
            if not st:
                return UnapplyResult(ps.target, str(repo.path), ps.branch, _previous_name(repo), notes=notes)
        return _unapply(repo, st, notes)


def _previous_name(repo: Repo) -> str:
    head = repo.symbolic_head()
    return short_ref(head) if head else (repo.head() or "")


def _unapply(repo: Repo, st: dict, notes: list[str]) -> UnapplyResult:
    branch_ref = f"refs/heads/{st['branch']}"
    tip = repo.rev_parse(branch_ref)
    applied.refuse_if_elsewhere(repo, st["branch"], "unapply")
    if tip is None:
        notes.append(f"branch {st['branch']} was already gone")
    elif (kind := applied.since_apply(repo, st, tip)) not in (SAME, SIGNED):
        raise applied.changed_since(repo, st, tip, kind)
    here = repo.symbolic_head()
    rev = applied.destination(repo, st, notes)
    # Another set's branch checked out here, applied on top of this one (or beside it): kept,
    # with its record; its own unapply is the next step.
    left = applied.set_of_branch(repo, here, st["target"]) if here != branch_ref and rev is not None else None
    with transaction(repo):
        state.write(repo, st["target"], dict(st, phase=UNAPPLYING))
        try:
            if rev is not None:
                target = repo.rev_parse(rev)
                if target:
                    refuse_untracked(repo, target)
                _checkout(repo, rev)
            if tip:
                _drop_branch(repo, st, tip, notes)
        except BaseException:
            state.write(repo, st["target"], st)
            raise
        state.remove(repo, st["target"])
    restored = (st["previous_symbolic"] or st["previous_head"]) if rev is not None and rev == _previous(st) else \
        rev if rev is not None else _previous_name(repo)
    return UnapplyResult(st["target"], str(repo.path), st["branch"], restored or "", rev is not None, notes, left)

"""make apply / make unapply: the series as commits on the target's branch, all or nothing."""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import amsession, applied, fresh, lock, series, state
from .amsession import KEEP
from .applied import APPLIED, APPLYING, ON_TOP, RESOLVING, SAME, SIGNED, UNAPPLYING, read_state
from .delta import upstreamfix
from .errors import Conflict, Hint, NotFound, UserError
from .git import GitError, Repo, Sha, short_ref
from .model import PatchSet
from .transaction import require_clean, transaction
from .upstream import discard_clone, obtain, refuse_symlinked_paths
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
    waiver_commit: str = ""  # the computed waiver commit apply added on top of the series ("": none)
    rebuilt: str = ""  # the tip of apply's own earlier branch that this apply replaced ("": none)
    session: amsession.Session | None = None  # THREEWAY=keep: the git am -3 session left to resolve
    view: fresh.View | None = None  # the upstream commit judged, and how fresh that view is

    @property
    def hints(self) -> list[Hint]:
        return list(self.session.hints) if self.session else []


def apply(ps: PatchSet, *, src: Path, url: str | None = None, threeway: bool | str = False,
          fetch: bool = True) -> ApplyResult:
    """Apply ps to the checkout at src (cloning it first when missing; else fetching the set's
    ref, unless fetch is False); raise on any conflict, except with threeway=KEEP: a conflict
    is then left as a git am -3 session (amsession.py)."""
    with contextlib.ExitStack() as held:
        repo, cloned = obtain(ps, src, url, hold=held, command=f"apply {ps.target}")
        try:
            return _apply(ps, repo, cloned, threeway, url, fetch)
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
    previous HEAD and the series' tip disagree on (or, for a rebuild, the tip it replaced), and
    an untracked file is removed only when it holds exactly the series' content. Anything else
    is the user's and stops us."""
    lock_file = repo.git_path("index.lock")
    if lock_file.exists():
        lock_file.unlink()
    previous, tip = st["previous_head"], st["tip"]
    ours = set(repo.changed_paths(previous, tip)) if previous else set()
    if st.get("replaces"):
        ours |= set(repo.changed_paths(st["replaces"], tip))
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
    back to where the user was before apply and the branch is dropped. A rebuild of apply's
    own branch that did not get that far goes back to the apply it replaced; a git am -3
    session (THREEWAY=keep) that was not yet handed over is given up, never half kept.
    """
    notes = notes if notes is not None else []
    branch_ref = f"refs/heads/{st['branch']}"
    if st["phase"] == APPLYING and st.get("keep") and repo.am_in_progress():
        repo.am_abort()
    head_ref, tip = repo.symbolic_head(), repo.rev_parse(branch_ref)
    if st["phase"] == APPLYING and not st.get("keep") and head_ref == branch_ref and tip == st["tip"]:
        _go(repo, st, st["branch"])
        state.write(repo, st["target"], dict(st, phase=APPLIED))
        return "finished"
    if st["phase"] == APPLYING and st.get("before") and tip in (st["tip"], st["replaces"]):
        if tip != st["replaces"]:
            repo.update_ref(branch_ref, Sha(st["replaces"]), tip, f"patchkit: undo the rebuild of {st['branch']}")
        back = st["head_before"]
        _go(repo, st, short_ref(back) if back.startswith("refs/") else back)
        state.write(repo, st["target"], st["before"])
        return "undone"
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


def _state_of_apply(ps: PatchSet, repo: Repo, notes: list[str], doing: str, keep: bool = False) -> dict | None:
    """This worktree's record of the set's apply, once an interrupted apply or unapply is
    finished or undone; Conflict while the git am session THREEWAY=keep left is under way
    (keep: THREEWAY=keep again, of the same set, is let through: it says the session again)."""
    st = read_state(repo, ps.target, notes)
    if st is not None:
        applied.revive(repo, st, notes)
        if st["phase"] == RESOLVING and not (keep and st["set_hash"] == ps.content_hash):
            amsession.refuse_in_progress(repo, ps.target, st["branch"], doing)
    if st is not None and st["phase"] not in (APPLIED, RESOLVING):
        recover(repo, st, notes)
        st = read_state(repo, ps.target)
    return st


def _apply(ps: PatchSet, repo: Repo, cloned: bool, threeway: bool | str, url: str | None = None,
           fetch: bool = True) -> ApplyResult:
    notes: list[str] = []
    st = _state_of_apply(ps, repo, notes, "apply", keep=threeway == KEEP)
    if st is not None and st["phase"] == RESOLVING and amsession.in_progress(repo, st):
        # THREEWAY=keep again while the session it left is under way (a rerun after a kill at its
        # very end, or to see the next steps again): the same session, nothing changed.
        result = ApplyResult(ps.target, str(repo.path), ps.branch, st["base"], st["base"], st["tip"], cloned, True,
                             notes=notes, session=amsession.resume(repo, st))
        return result
    if threeway == KEEP:
        amsession.require_identity(repo)
    require_clean(repo)
    seen = fresh.view(repo, ps, fetch=fetch, url=url)
    base_ref, base = seen.ref, Sha(seen.commit)
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
                         notes=notes, view=seen)
    if existing:
        if _already(ps, repo, st, existing, base, result):
            return result
        result.rebuilt = existing
    refuse_symlinked_paths(repo, base, ps)

    res = series.apply_series(repo, base, ps.patches, threeway=bool(threeway), committer=repo.identity(),
                              extra=lambda tb: waiver_edit.apply_to(tb, ps), merge_bases=[ps.upstream.recorded_base],
                              announce="applying")
    fix = upstreamfix.probe(ps, repo, base, res.outcomes) if upstreamfix.needs_probe(res.outcomes) else None
    if fix is not None and fix.fixed:
        # Our fix must not be stacked on upstream's, not even by a clean 3-way merge.
        raise Conflict(f"{ps.target}: {fix.summary()}; nothing applied; {fix.advice()}",
                       details=series.drift_report(res.outcomes), hint=Hint.radar(ps.target))
    result.outcomes = res.outcomes
    if not res.ok and threeway == KEEP:
        first = len(res.outcomes) - 1  # the patch that conflicts: the session starts there
        with amsession.patch_files(ps, repo, base, first) as (files, written):
            result.session = _install(ps, repo, st, result, res.tip, keep=(files, [p.name for p in ps.patches[first:]],
                                                                             written))
        return result
    try:
        res.raise_on_conflict(hint=Hint.run(None, threeway=KEEP) if threeway else Hint.run(None, threeway=True),
                              note=fix.summary() if fix is not None else "")
    except Conflict as exc:
        exc.more = (Hint.radar(ps.target),)
        raise
    result.waiver = res.extra
    if res.extra is not None and res.extra.changed:
        result.waiver_commit = res.tip
    _install(ps, repo, st, result, res.tip)
    return result


def _already(ps: PatchSet, repo: Repo, st: dict | None, existing: Sha, base: Sha, result: ApplyResult) -> bool:
    """The set's branch is there already. True: it is this very apply (checked out again when
    the user has left it). False: apply's own, from another base or version of the set, and
    untouched since (or the git am session's, resolved and exported): it is rebuilt. Conflict
    when it holds anything of the user's, naming it and how to keep it."""
    if st is None:
        # Not ours: unapply refuses it too, so the way out is to move the user's branch aside.
        keep = repo.user_command("branch", "-m", ps.branch, f"{ps.branch}-mine")
        raise Conflict(f"branch {ps.branch} already exists and was not made by apply",
                       hint=Hint(None, also=f"after keeping your branch under another name: {keep}"))
    kind = applied.since_apply(repo, st, existing)
    if st["phase"] == RESOLVING and kind == ON_TOP:
        refuse_unexported(ps, repo, st, existing, "apply")
        return False
    if kind == ON_TOP and _exported(ps, repo, st["branch"]):
        return False  # the commits made since (make new-fix's) are in patches/<set>: nothing of the user's is lost
    if kind not in (SAME, SIGNED):
        raise applied.changed_since(repo, st, existing, kind)
    if st["phase"] != APPLIED or st["base"] != base or st["set_hash"] != ps.content_hash:
        return False
    result.already_applied = True
    if repo.symbolic_head() != f"refs/heads/{ps.branch}":
        # Built before, but the user has checked out something else since: check it out again.
        with transaction(repo):
            refuse_untracked(repo, existing)
            _checkout(repo, ps.branch)
        result.checked_out_again = True
    return True


def refuse_unexported(ps: PatchSet, repo: Repo, st: dict, tip: Sha, doing: str) -> None:
    """The git am session THREEWAY=keep left was finished: its commits are on the branch. They
    may go (apply rebuilds the branch, unapply drops it) once make export has written them
    into patches/<set>; Conflict until then."""
    if _exported(ps, repo, st["branch"]):
        return
    keep = repo.user_command("branch", "-m", st["branch"], f"{st['branch']}-mine")
    added = repo.commits(f"{st['tip']}..{tip}")
    raise Conflict(f"branch {st['branch']} holds the series as resolved in the git am session make apply left "
                   f"({len(added)} commit(s) on top of what apply made), and patches/{ps.target} does not have it "
                   f"yet; {doing} would lose it (or keep the branch under another name: {keep})",
                   hint=Hint("export", (("target", ps.target),), "it writes the resolved series into the set"))


def _exported(ps: PatchSet, repo: Repo, branch: str) -> bool:
    """patches/<set> holds the branch as it is: make check-export's own comparison."""
    from .pr import export as export_mod
    try:
        return export_mod.export(ps, repo, branch, check_only=True).up_to_date
    except UserError:
        return False


def _install(ps: PatchSet, repo: Repo, st: dict | None, result: ApplyResult, tip: Sha,
             keep: tuple[list[Path], list[str], Sha] | None = None) -> amsession.Session | None:
    """The branch at tip, checked out, in one transaction: the record first (a kill is
    finished or undone by the next run), apply's own earlier branch replaced. keep: (the patch
    files, their names, where they were made): git am -3 of them is left at its conflict."""
    branch_ref = f"refs/heads/{ps.branch}"
    refuse_untracked(repo, tip)
    replacing = Sha(result.rebuilt) if result.rebuilt else None
    with transaction(repo, creates=[branch_ref]) as snap:
        # Intent first, atomically: a kill after this line is finished or undone by the next run.
        record = {"phase": APPLYING, "target": ps.target, "branch": ps.branch, "base": result.base, "tip": tip,
                  "set_hash": ps.content_hash, "previous_symbolic": snap.symbolic_head, "previous_head": snap.head}
        if replacing and st is not None:  # the way back is still where the user was before the first apply
            record.update(previous_symbolic=st["previous_symbolic"], previous_head=st["previous_head"],
                          replaces=replacing, before=st, head_before=snap.symbolic_head or snap.head)
        if keep is not None:
            record["keep"] = True
        state.write(repo, ps.target, record)
        session = None
        try:
            if replacing and snap.symbolic_head == branch_ref:
                _checkout(repo, tip)  # the files follow first (detached), then the branch moves under them
            repo.update_ref(branch_ref, tip, replacing, f"patchkit: apply {ps.target}")
            _checkout(repo, ps.branch)
            if keep is not None:
                session = amsession.start(repo, keep[0], keep[1], keep[2])
                if session is None:  # git's 3-way merged what ours could not: the series is applied
                    record["tip"] = _with_waiver(ps, repo, result)
            if session is not None:  # what the session holds, for a THREEWAY=keep run again (amsession.resume)
                record.update(session_patches=keep[1], session_base=keep[2])
            state.write(repo, ps.target, dict(record, phase=RESOLVING if session else APPLIED))
        except BaseException:
            if keep is not None and repo.am_in_progress():
                repo.am_abort()
            if replacing and st is not None:
                state.write(repo, ps.target, st)
            else:
                state.remove(repo, ps.target)
            raise
    result.tip = record["tip"]
    return session


def _with_waiver(ps: PatchSet, repo: Repo, result: ApplyResult) -> Sha:
    """The git am -3 session applied the whole series on the checked-out branch: the waiver commit on top,
    as apply makes it; the branch's new tip."""
    head = repo.head()
    res = series.apply_series(repo, head, [], committer=repo.identity(), extra=lambda tb: waiver_edit.apply_to(tb, ps))
    result.waiver = res.extra
    if res.tip != head:
        repo.update_ref(f"refs/heads/{ps.branch}", res.tip, head, f"patchkit: apply {ps.target}")
        repo.reset_hard()
        result.waiver_commit = res.tip
    return res.tip


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
        if not read_state(repo, ps.target, notes):
            there = repo.checked_out_elsewhere().get(f"refs/heads/{ps.branch}")
            if there:  # applied in another worktree of the repository: its record is there
                raise NotFound(f"{ps.target} was not applied to {src} by apply; nothing to unapply here: its branch "
                               f"{ps.branch} is checked out in {there}", hint=Hint.run(None, src=str(there)))
            raise NotFound(f"{ps.target} was not applied to {src} by apply; nothing to unapply")
        st = _state_of_apply(ps, repo, notes, "unapply")  # finishes an interrupted apply, or undoes it
        if not st:
            return UnapplyResult(ps.target, str(repo.path), ps.branch, _previous_name(repo), notes=notes)
        return _unapply(ps, repo, st, notes)


def _previous_name(repo: Repo) -> str:
    head = repo.symbolic_head()
    return short_ref(head) if head else (repo.head() or "")


def _unapply(ps: PatchSet, repo: Repo, st: dict, notes: list[str]) -> UnapplyResult:
    branch_ref = f"refs/heads/{st['branch']}"
    tip = repo.rev_parse(branch_ref)
    applied.refuse_if_elsewhere(repo, st["branch"], "unapply")
    if tip is None:
        notes.append(f"branch {st['branch']} was already gone")
    elif (kind := applied.since_apply(repo, st, tip)) == ON_TOP and st["phase"] == RESOLVING:
        refuse_unexported(ps, repo, st, tip, "unapply")  # exported: patches/<set> has it, the branch may go
    elif kind == ON_TOP and _exported(ps, repo, st["branch"]):
        pass  # the commits made since (make new-fix's) are in patches/<set>: the branch may go
    elif kind not in (SAME, SIGNED):
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

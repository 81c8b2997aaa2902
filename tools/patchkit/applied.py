"""What make apply left in a worktree: its record, and what has become of the set's branch and
of the place apply started from since then (make unapply and a second make apply read it).

A record is the worktree's own (state.py): two worktrees of one repository share the
branches but each has its own HEAD, and an unapply in one replayed the other's record, moved
the second off its branch and deleted the branch the first had checked out (#24 item 4).
"""
from __future__ import annotations

import os

from . import schema as S, state
from .errors import Conflict, UserError
from .git import Repo, Sha, short_ref

STATE_SCHEMA = S.record({
    "phase": S.string(), "target": S.string(), "branch": S.string(), "base": S.string(), "tip": S.string(),
    "set_hash": S.string(), "previous_symbolic": S.optional(S.string()), "previous_head": S.optional(S.string()),
}, unknown=True)
APPLYING, APPLIED, UNAPPLYING = "applying", "applied", "unapplying"
# make apply THREEWAY=keep left a git am -3 session for the user (amsession.py); the record's
# tip is the branch as apply made it, before the session's commits.
RESOLVING = "resolving"

# What became of the set's branch since apply left it at the record's tip.
SAME, SIGNED, ON_TOP, REWRITTEN = "same", "signed off", "commits on top", "rewritten"


def read_state(repo: Repo, target: str, notes: list[str] | None = None) -> dict | None:
    """This worktree's record of target's apply; None when there is none."""
    st = state.read(repo, target, STATE_SCHEMA)
    if st is None and notes is not None:
        st = _adopt(repo, target, notes)
    if st is not None and st["phase"] not in (APPLYING, APPLIED, UNAPPLYING, RESOLVING):
        raise Conflict(f"{state.path(repo, target)}: unknown phase {st['phase'][:40]!r}; remove the file, then run again")
    return st


def _adopt(repo: Repo, target: str, notes: list[str]) -> dict | None:
    """A linked worktree's record that an older patchkit kept in the shared git directory:
    it is this worktree's when its branch is the one checked out here."""
    shared, own = state.path(repo, target, shared=True), state.path(repo, target)
    if shared == own or not shared.exists():
        return None
    st = state.read(repo, target, STATE_SCHEMA, shared=True)
    if st is None or repo.symbolic_head() != f"refs/heads/{st['branch']}":
        return None
    own.parent.mkdir(parents=True, exist_ok=True)
    os.replace(shared, own)
    notes.append(f"found this worktree's record of the apply in the repository's shared folder; moved it to {own}")
    return st


def since_apply(repo: Repo, st: dict, tip: Sha) -> str:
    """What became of the set's branch, now at tip, since apply made it at the record's tip:
    the same commit; the same commits with sign-offs added (make dco FIX=1); commits added on
    top; or anything else."""
    if tip == st["tip"]:
        return SAME
    if repo.rev_parse(st["tip"]) is None:
        return REWRITTEN
    if repo.is_ancestor(st["tip"], tip):
        return ON_TOP
    ours, now = repo.commits(f"{st['base']}..{st['tip']}"), repo.commits(f"{st['base']}..{tip}")
    if len(ours) == len(now) and all(_signed_copy(repo, a, b) for a, b in zip(ours, now)):
        return SIGNED
    return REWRITTEN


def _signed_copy(repo: Repo, ours: str, now: str) -> bool:
    """now is ours with Signed-off-by trailers added: same tree, author and date, and the same
    message once the sign-offs are left out (who committed it may differ: dco's fix commits)."""
    a, b = repo.commit_info(ours), repo.commit_info(now)

    def unsigned(message: str) -> str:
        return "\n".join(line for line in message.strip().splitlines()
                         if not line.lower().startswith("signed-off-by:")).strip()
    return (a.tree, a.author, a.author_date, unsigned(a.message)) == (b.tree, b.author, b.author_date, unsigned(b.message))


def backup_ref(branch: str) -> str:
    """Where make dco FIX=1 keeps a branch's tip from before it added sign-offs (pr/dco.py)."""
    return f"refs/patchkit-backup/{branch}"


def changed_since(repo: Repo, st: dict, tip: Sha, kind: str) -> Conflict:
    """The branch holds more than apply made (or other commits): the way out keeps them."""
    branch = st["branch"]
    keep = repo.user_command("branch", "-m", branch, f"{branch}-mine")
    if kind == ON_TOP:
        added = repo.commits(f"{st['tip']}..{tip}")
        last = repo.commit_info(added[-1])
        what = (f"{len(added)} commit(s) made after apply on top of the series (the last: {last.sha[:12]} "
                f"{last.subject[:60]})")
    else:
        what = f"commits apply did not make: it was rewritten since apply left it at {st['tip'][:12]} (now {tip[:12]})"
        backup = repo.rev_parse(backup_ref(branch))
        if backup:
            what += f"; make dco FIX=1 kept a tip from before its sign-offs at {backup_ref(branch)} ({backup[:12]})"
    return Conflict(f"branch {branch} has {what}; keep them under another name ({keep}), then run again")


def refuse_if_elsewhere(repo: Repo, branch: str, doing: str) -> None:
    """Conflict when another worktree of the repository has branch checked out: no command
    moves or deletes it under that worktree."""
    there = repo.checked_out_elsewhere().get(f"refs/heads/{branch}")
    if there:
        raise Conflict(f"branch {branch} is checked out in {there}, another worktree of this repository; "
                       f"{doing} would pull it from under that worktree: check out another branch or commit "
                       f"there, then run again")


def revive(repo: Repo, st: dict, notes: list[str]) -> None:
    """The set's branch was deleted while this worktree had it checked out (an unapply in
    another worktree did so before #24): HEAD names a branch that is gone and the index still
    holds the series. The branch comes back at the record's tip, and the record works again."""
    ref = f"refs/heads/{st['branch']}"
    if repo.symbolic_head() != ref or repo.rev_parse(ref) is not None or repo.rev_parse(st["tip"]) is None:
        return
    repo.update_ref(ref, Sha(st["tip"]), None, f"patchkit: {st['branch']} was deleted while checked out")
    notes.append(f"branch {st['branch']} was gone while checked out in {repo.path}; made it again at "
                 f"{st['tip'][:12]}, where apply had left it")


def destination(repo: Repo, st: dict, notes: list[str]) -> str | None:
    """Where unapply takes HEAD: back to where the set's apply started; None: stay where it is.

    The place apply started from may be gone since (another set's branch, unapplied since: two
    sets applied one on the other and unapplied in that order), or checked out by another
    worktree; what was found is said in notes."""
    here = repo.symbolic_head()
    on_ours = here == f"refs/heads/{st['branch']}"
    start = st["previous_symbolic"]
    if not start:
        return st["previous_head"]
    sha = repo.rev_parse(start)
    if sha is None:
        if not on_ours:
            notes.append(f"{short_ref(start)}, where the apply of {st['target']} started, is gone; "
                         f"stayed on {short_ref(here) if here else 'the detached HEAD'}")
            return None
        back = st["previous_head"] if st["previous_head"] and repo.rev_parse(st["previous_head"]) else st["base"]
        notes.append(f"{short_ref(start)}, where the apply of {st['target']} started, is gone; HEAD is left "
                     f"detached at {back[:12]}, the commit it was on then")
        return back
    there = repo.checked_out_elsewhere().get(start)
    if there:
        notes.append(f"{short_ref(start)}, where the apply of {st['target']} started, is checked out in {there}; "
                     f"HEAD is left detached at its commit {sha[:12]}")
        return sha
    if here and not on_ours and here != start:
        notes.append(f"left {short_ref(here)}, which was checked out; it is kept")
    return short_ref(start)


def set_of_branch(repo: Repo, branch_ref: str | None, but: str) -> str | None:
    """The target whose apply in this worktree made branch_ref, other than `but`."""
    if not branch_ref:
        return None
    for name in state.names(repo):
        if name == but:
            continue
        try:
            st = state.read(repo, name, STATE_SCHEMA)
        except UserError:
            continue  # another kind of record (make pr's), or a damaged one: not a set's apply
        if st and st.get("target") == name and f"refs/heads/{st['branch']}" == branch_ref:
            return name
    return None

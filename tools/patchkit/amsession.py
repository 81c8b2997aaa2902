"""make apply THREEWAY=keep: a conflict left for the user as a real `git am -3` session.

git am -3 builds its merge base from the blob ids on a patch's index lines ("could not build
fake ancestor" without them), and a set's patches may carry none: the blob ids of real upstream
are often unknown when a set is written. So the series is first applied as commits where it
applies as written (the set's recorded base, fetched on demand, else the newest commit of the
ref's history, touching the series' paths, where it does) and written out again by
format-patch, with the full index lines of real objects. The session replays them, from the
patch that conflicts on, onto the commits of the patches before it on the set's ref: apply.py
starts it inside its transaction, and leaves it stopped at the conflict for the user.

The record of such an apply (applied.py) is in phase 'resolving'. While the session is under
way, apply, unapply and export refuse, saying how to finish it (git add, git am --continue,
make export) and how to abandon it (git am --abort, then make unapply). Once it is finished
and exported, the branch is the set as written: unapply drops it, apply rebuilds it.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import scratch, series
from .errors import BadInput, Conflict, Hint
from .git import Repo, Sha
from .model import PatchSet

KEEP = "keep"  # the THREEWAY value that leaves a conflict for the user


@dataclass
class Session:
    """The git am -3 session apply left: where it stopped and what the user does next."""

    checkout: str
    patch: str  # the patch it stopped at
    at: int  # that patch's place in the session, 1-based
    of: int  # how many patches the session has
    files: list[str]  # the files with conflict markers
    base: str  # where the series applies as written: the merge base git am -3 worked from
    hints: list[Hint] = field(default_factory=list)  # finish it (git add, git am --continue, make export); abandon it


@contextlib.contextmanager
def patch_files(ps: PatchSet, repo: Repo, tip: Sha, first: int) -> Iterator[tuple[list[Path], Sha]]:
    """The series from patch `first` (0-based) on, as patch files with full index lines, made
    where the whole series applies as written; and that commit. Conflict when there is none."""
    base = series.written_base(repo, tip, ps.patches, [ps.upstream.recorded_base])
    if base is None:
        raise Conflict(f"{ps.target}: the series applies as written at no commit of {ps.upstream.ref}'s last "
                       f"{series.HISTORY_LIMIT} touching its files, nor at its recorded base "
                       f"{ps.upstream.recorded_base[:40]}: git am -3 has no base to merge from; rework the patch by "
                       f"hand against {tip[:12]}")
    made = series.apply_series(repo, base, ps.patches, committer_date=series.THROWAWAY_DATE)
    if [o.status for o in made.outcomes] != [series.APPLIED] * len(ps.patches):
        # It applied there a moment ago (written_base's probe): a git step failed on the way.
        raise Conflict(f"{ps.target}: the series did not apply again at {base[:12]}, where it applied as written a "
                       f"moment ago; nothing changed; run again")
    start = base if first == 0 else made.outcomes[first - 1].commit
    with scratch.folder("am") as tmp:
        files = repo.format_series(f"{start}..{made.tip}", Path(tmp), full_index=True)
        if len(files) != len(ps.patches) - first:
            raise Conflict(f"{ps.target}: git format-patch wrote {len(files)} patch(es) of the {len(ps.patches) - first} "
                           f"the session needs; nothing changed; run again")
        yield files, base


def require_identity(repo: Repo) -> None:
    """The commits of a git am session are the user's: refuse before anything changes when no identity is set."""
    if repo.identity() is None:
        raise BadInput("THREEWAY=keep leaves a git am session whose commits are yours, and no git identity is set "
                       "here (user.name and user.email); set it: git config --global user.name '<Your Name>' && "
                       "git config --global user.email '<you@example.com>'")


def start(repo: Repo, files: list[Path], names: list[str], base: Sha) -> Session | None:
    """Run git am -3 of files onto HEAD. None when every patch applied (3-way merged without
    a conflict); else the session, stopped at a conflict with markers in the files. Conflict
    when git stopped without any (the caller's transaction then puts everything back)."""
    ok, said = repo.am_three_way(files)
    if ok:
        return None
    conflicted = repo.unmerged_paths() if repo.am_in_progress() else []
    if not conflicted:
        why = next((line for line in said.splitlines() if line.startswith(("error:", "fatal:"))), said[:200])
        raise Conflict(f"the git am -3 session stopped in {repo.path} without leaving conflict markers to resolve: {why}")
    at, of = repo.am_position()
    at, of = (at, of) if of else (1, len(files))
    return Session(str(repo.path), names[min(at, len(names)) - 1], at, of, conflicted, base, ways_on(repo, conflicted))


def resume(repo: Repo, st: dict) -> Session:
    """The session a 'resolving' record describes, as it is now (THREEWAY=keep run again while
    it is under way: the same session, said again; nothing changes)."""
    names, base = st.get("session_patches") or [], st.get("session_base") or ""
    at, of = repo.am_position()
    files = repo.unmerged_paths()
    patch = names[at - 1] if 0 < at <= len(names) else f"patch {at}"
    return Session(str(repo.path), patch, at, of, files, base, ways_on(repo, files))


def ways_on(repo: Repo, files: list[str]) -> list[Hint]:
    """How a session ends: finished (the resolved files added, git am --continue, then make
    export writes the set back) or abandoned (git am --abort, then make unapply)."""
    add = [repo.user_command("add", "--", *files)] if files else []
    return [Hint("export", first=(*add, repo.user_command("am", "--continue")),
                 also="after resolving the conflict markers: the resolved series becomes the set"),
            Hint("unapply", first=(repo.user_command("am", "--abort"),), also="to abandon it instead")]


def in_progress(repo: Repo, st: dict) -> bool:
    """Whether the git am session a 'resolving' record describes is still under way here."""
    return repo.am_in_progress() and repo.symbolic_head() == f"refs/heads/{st['branch']}"


def refuse_in_progress(repo: Repo, target: str, branch: str, doing: str) -> None:
    """Conflict when a git am session is under way on branch in this checkout: apply, unapply
    and export would act on half of the series. The message says both ways on."""
    if not (repo.am_in_progress() and repo.symbolic_head() == f"refs/heads/{branch}"):
        return
    at, of = repo.am_position()
    where = f" (stopped at patch {at} of {of})" if of else ""
    files = repo.unmerged_paths()
    left = f", conflict markers in {', '.join(files[:3])}{' and more' if len(files) > 3 else ''}" if files else ""
    finish, abandon = ways_on(repo, files)
    raise Conflict(f"the git am -3 session make apply left for {target} is under way on {branch} in "
                   f"{repo.path}{where}{left}; {doing} would act on half of the series", hint=finish, more=(abandon,))

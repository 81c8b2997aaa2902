"""Always against fresh upstream (#33 item 4): check, radar, apply, delta and backport fetch the
set's ref before they judge it, and say which commit they judged and when it was fetched.

One ref, once per command: a branch into its remote-tracking ref (never the user's branches
or work tree), at depth 1 with the clone's filter in a partial clone (Repo.refresh_ref). A tag
that is here is not fetched at all: tags do not move. FETCH=0 (--no-fetch) judges what is
there; an origin that cannot be reached is one line, "the view is from <the last fetch>",
and the command carries on with what is there (an error only when the ref is not there).

When a ref was fetched is recorded in <git common dir>/patchkit/fetched/<ref>.json, by every
fetch of a set's ref we make (a clone too); without such a record, FETCH_HEAD's time stands
for the user's own last fetch.

A fetch is kept when the command fails afterwards, as `git fetch` keeps it: the
remote-tracking ref then says where upstream is, which is what the failure is about.
"""
from __future__ import annotations

import datetime
import weakref
from dataclasses import dataclass

from . import schema as S, state
from .errors import Conflict, NotFound
from .git import GitError, Repo, Sha, fetch_command, ref_candidates, resolve_target_ref
from .git.transfer import TransferFailed, unreachable
from .model import PatchSet

# How the view was had.
FETCHED = "fetched"  # fetched now
CLONED = "cloned"  # cloned now
TAG = "tag"  # a tag that was here: not fetched, tags do not move
NOT_FETCHED = "not fetched"  # FETCH=0
OFFLINE = "offline"  # origin could not be reached: the last fetch's view
NO_ORIGIN = "no origin"  # the checkout has no origin to fetch from

_RECORD = S.record({"ref": S.string(), "commit": S.string(), "at": S.string()}, unknown=True)
# The refs a command fetched or cloned, by its Repo (each command opens its own): one fetch per
# ref per command, however many sets share the ref and whether obtain fetched it first.
_NOW: weakref.WeakKeyDictionary[Repo, dict[str, tuple[str, str, str]]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class View:
    """The upstream commit a command judged, and how fresh that view of upstream is."""

    ref: str  # the set's ref as found in the checkout: refs/remotes/origin/main, refs/tags/v1.3.0rc25
    commit: str
    how: str  # FETCHED, CLONED, TAG, NOT_FETCHED, OFFLINE or NO_ORIGIN
    fetched_at: str = ""  # when the ref was last fetched (ISO 8601, UTC); '' when nobody knows
    before: str = ""  # FETCHED: the commit the ref had before, when the fetch moved it
    why: str = ""  # OFFLINE: git's words

    def said(self) -> str:
        """One line: which commit, and how fresh ("fetched now", "a tag", "the view is from ...")."""
        name = self.ref
        for prefix in ("refs/tags/", "refs/remotes/", "refs/heads/"):  # origin/main, v1.3.0rc25
            name = name.removeprefix(prefix)
        what = f"{name} {self.commit[:12]}"
        if self.how == FETCHED:
            moved = f", moved from {self.before[:12]}" if self.before and self.before != self.commit else ""
            return f"{what}, fetched now{moved}"
        if self.how == CLONED:
            return f"{what}, cloned now"
        if self.how == TAG:
            return f"{what}, a tag already here: not fetched (tags do not move)"
        if self.how == NOT_FETCHED:
            return f"{what}, not fetched (as asked); last fetched {when(self.fetched_at)}"
        if self.how == NO_ORIGIN:
            return f"{what}, not fetched: the checkout has no origin"
        return f"{what}: origin could not be reached ({self.why}), so the view is from {when(self.fetched_at)}, the last fetch"


def when(at: str) -> str:
    """An ISO time as a person reads it: 2026-05-01 12:00 UTC ('an unknown time' for '')."""
    if not at:
        return "an unknown time (no fetch recorded)"
    return datetime.datetime.fromisoformat(at).astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def record(repo: Repo, local: str, how: str = FETCHED, sha: str | None = None) -> str:
    """Note that this command fetched local (or cloned it) now, at sha when the caller knows it,
    for its view and for later runs; the time noted."""
    sha, at = sha or repo.rev_parse(local), _now()
    if sha is not None:
        state.write(repo, f"fetched/{local}", {"ref": local, "commit": sha, "at": at}, shared=True)
        _NOW.setdefault(repo, {})[local] = (how, at, sha)
    return at


def last_fetch(repo: Repo, local: str) -> str:
    """When local was last fetched: our record, else FETCH_HEAD's time (the user's own fetch)."""
    try:
        rec = state.read(repo, f"fetched/{local}", _RECORD, shared=True)
    except Conflict:  # a damaged record only costs the date, never the command
        rec = None
    if rec is not None:
        return rec["at"]
    head = repo.git_path("FETCH_HEAD")
    if head.is_file():
        at = datetime.datetime.fromtimestamp(head.stat().st_mtime, datetime.timezone.utc)
        return at.replace(microsecond=0).isoformat()
    return ""


def view(repo: Repo, ps: PatchSet, *, fetch: bool = True, url: str | None = None) -> View:
    """Fetch the set's ref (unless fetch is False, or it is a tag already here), then the View
    of it: which commit is judged, and how fresh it is. NotFound when the ref is not here and
    cannot be fetched (its command fetches from origin, else from url or the set's upstream)."""
    ref, url = ps.upstream.ref, url or ps.upstream.url
    done = _NOW.get(repo, {})
    known = next((c for c in ref_candidates(ref) if c in done), None)
    if known is not None:  # fetched (or cloned) by this command already: its commit is known
        how, at, sha = done[known]
        return View(known, Sha(sha), how, at)
    local, sha = _here(repo, ref)
    if local is not None and local.startswith("refs/tags/"):
        return View(local, sha, TAG)
    if not fetch:
        if local is None:
            resolve_target_ref(repo, ref, url)  # NotFound, with the command that fetches it
        return View(local, sha, NOT_FETCHED, last_fetch(repo, local))
    if not repo.config_get("remote.origin.url"):
        if local is None:
            resolve_target_ref(repo, ref, url)
        return View(local, sha, NO_ORIGIN, last_fetch(repo, local))
    before = sha if local else None
    try:
        if local is None:
            if not repo.fetch_ref(ref):
                raise NotFound(f"{ref} is not in {repo.path} nor on origin ({repo.config_get('remote.origin.url')})")
            local, said = _here(repo, ref)[0], ""
        else:
            local, said = repo.refresh_ref(local)
    except TransferFailed as exc:
        said = exc.message
    except GitError as exc:
        said = unreachable(exc.stderr)
        if not said:
            raise
    if said:
        found = _here(repo, ref)[0]
        if found is None:
            raise NotFound(f"{ref} is not in {repo.path}, and origin could not be reached ({said}); "
                           f"run when it can: {fetch_command(repo, ref, url)}")
        return _view(repo, found, OFFLINE, last_fetch(repo, found), why=said)
    at = record(repo, local)
    return View(local, Sha(_NOW.get(repo, {}).get(local, ("", "", ""))[2]), FETCHED, at, before or "")


def _here(repo: Repo, ref: str) -> tuple[str | None, Sha]:
    """Where the checkout has the set's ref (resolve_target_ref's order) and its commit, in one
    git process; (None, '') when it has none."""
    found = repo.rev_parse_many(ref_candidates(ref))
    return next(((c, sha) for c, sha in found.items() if sha), (None, Sha("")))


def _view(repo: Repo, local: str, how: str, at: str = "", before: str = "", why: str = "") -> View:
    sha = repo.rev_parse(local)
    return View(local, Sha(sha or ""), how, at, before, why)

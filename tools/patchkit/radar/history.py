"""The range a radar looks at, and the commits in it that can change the set's status.

SINCE..UNTIL on upstream's first-parent history. In the one-commit clone (depth 1, no blobs)
the history is fetched as far back as SINCE's date only, as commits alone (filter tree:0;
by count where the date selects none, so that any clone answers as the full repository);
then, for every commit of the range, only the trees on the way to the set's paths, a level
at a time in one batch each: they tell which commits touch the set's files, and leave their
blob ids. Those blobs are fetched later, and only for the states that need them.
"""
from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import progress
from ..errors import BadInput, Hint, NotFound
from ..git import Repo, Sha, ZERO
from ..model import PatchSet, pytest_config_on_the_way

# Where fetching by date falls short, history is fetched by count: DEEPEN_STEP commits, then
# twice as many each time (at most DEEPEN_LIMIT at once), as far as the range needs.
DEEPEN_STEP, DEEPEN_LIMIT = 64, 4096


@dataclass(frozen=True)
class Commit:
    """A commit of the range that changes the set's paths."""

    sha: Sha
    date: str  # committer date, ISO 8601: when it landed on the ref
    subject: str
    changes: tuple[tuple[str, str, str], ...]  # (path, mode, blob id; ZERO: deleted)

    @property
    def short(self) -> str:
        return self.sha[:12]

    def touches(self, paths: Sequence[str]) -> bool:
        return any(p == q or p.startswith(q.rstrip("/") + "/") for p, _m, _s in self.changes for q in paths)


@dataclass(frozen=True)
class Range:
    since: Sha
    since_rev: str  # as given or recorded
    since_how: str  # where SINCE came from, for the report
    until: Sha
    until_rev: str
    commits_in_range: int  # first-parent commits in since..until
    candidates: tuple[Commit, ...]
    paths: tuple[str, ...]
    at_since: dict[str, tuple[str, str]] = field(default_factory=dict)  # {path: (mode, blob)} at SINCE


def set_paths(ps: PatchSet) -> tuple[str, ...]:
    """Everything whose change can change the set's status: the files its patches touch, its
    tests and the pytest configuration on their way, the waiver and test-db files."""
    return ps.sparse_paths


def verdict_paths(ps: PatchSet) -> tuple[str, ...]:
    """What the test probe reads: the patched modules, the tests and their pytest configuration."""
    tests = list(ps.tests.all) + [p for p in ps.touched_paths if p.rsplit("/", 1)[-1].startswith("test_")]
    return tuple(sorted(set(ps.touched_paths) | set(ps.tests.regression) | pytest_config_on_the_way(tests)))


def resolve(ps: PatchSet, repo: Repo, until_ref: str, until: Sha, since_given: str | None) -> Range:
    """The range, with its history present (fetched when the clone is shallow)."""
    paths = set_paths(ps)
    since_rev = since_given or ps.upstream.recorded_base
    with progress.step(f"looking for SINCE {since_rev}"):
        since = repo.fetch_commit(since_rev, trees=False) if since_rev else None
    how = "SINCE" if since_given else ("upstream.base" if ps.upstream.base else "upstream.ref")
    if since is None and since_given:
        raise NotFound(f"{since_given} is not a commit of {_where(repo)}", setting="since", hint=Hint.choose("since"))
    if since is not None:
        _history_back_to(repo, until, since, _date_of(repo, since))
    else:
        # The recorded base is not in this upstream (a miniature, a mirror that lost it): the
        # set was verified against the ref as it was on the newest verified_on date.
        day = _verified_day(ps)
        if day is None:
            raise NotFound(f"{ps.target}: its recorded base {since_rev} is not a commit of {_where(repo)} and "
                           f"verified_on has no date", setting="since", hint=Hint.choose("since"))
        end = f"{day}T23:59:59+00:00"
        # Nothing of until's history since that day (a quiet branch): until is the ref as it was.
        repo.fetch_history(until, f"{day}T00:00:00+00:00", trees=False)
        since = repo.first_parent_before(until, end)
        step = DEEPEN_STEP
        while since is None and repo.is_shallow() and repo.deepen(step, trees=False):
            step = min(2 * step, DEEPEN_LIMIT)
            since = repo.first_parent_before(until, end)
        if since is None:
            raise NotFound(f"no commit of {until_ref} is dated on or before {day} (verified_on)", setting="since",
                           hint=Hint.choose("since"))
        how = f"{until_ref} as of verified_on {day} (upstream.base {since_rev[:12]} is not in {_where(repo)})"
    if not repo.is_ancestor(since, until):
        raise BadInput(f"{since_rev} ({since[:12]}) is not in the history of {until_ref} ({until[:12]})",
                       setting="since", hint=Hint.choose("since", "until"))
    with progress.step(f"listing the commits of {since[:12]}..{until[:12]} that touch the set's paths"):
        log = repo.first_parent_log(since, until)
        files = repo.files_at([repo.commit_info(since).tree, *(tree for _s, tree, _d, _m in log)], paths)
        commits, before = [], files[0]
        for (sha, _tree, date, subject), now in zip(log, files[1:]):
            if now != before:  # what git log --first-parent -- <paths> lists, with the blobs it leaves
                commits.append(Commit(sha, date, subject, tuple(
                    (p, *now.get(p, ("000000", ZERO))) for p in sorted(before.keys() | now.keys())
                    if now.get(p) != before.get(p))))
            before = now
    return Range(since, since_rev, how, until, until_ref, len(log), tuple(commits), paths, files[0])


def _where(repo: Repo) -> str:
    return repo.config_get("remote.origin.url") or str(repo.path)


def _date_of(repo: Repo, sha: Sha) -> str:
    seconds, _tz = repo.commit_info(sha).author_date.split(" ")  # only for a lower bound; see below
    return datetime.datetime.fromtimestamp(int(seconds), datetime.timezone.utc).isoformat()


def _history_back_to(repo: Repo, until: Sha, since: Sha, date: str) -> None:
    """Make since..until walkable: in a shallow clone, fetch until's history from since's date;
    where that selects nothing (until committed before since's date: clocks set apart) or
    stops short (a commit on the way dated earlier, a rebased branch), fetch the range's
    commits by count, doubling, until since is reached or history ends."""
    if not repo.is_shallow() or repo.is_ancestor(since, until):
        return
    repo.fetch_history(until, date, trees=False)
    step = DEEPEN_STEP
    while not repo.is_ancestor(since, until) and repo.deepen(step, trees=False):
        step = min(2 * step, DEEPEN_LIMIT)


def _verified_day(ps: PatchSet) -> str | None:
    days = [str(v.get("date")) for v in ps.verified_on if v.get("date")]
    return max(days) if days else None


def states(rng: Range, paths: Sequence[str]) -> list[dict[str, tuple[str, str]]]:
    """The files at paths after each candidate ({path: (mode, blob)}), from SINCE's files and
    each commit's changes: no commit's tree is read again."""
    now = {p: v for p, v in rng.at_since.items() if any(p == q or p.startswith(q + "/") for q in paths)}
    out = []
    for c in rng.candidates:
        for path, mode, blob in c.changes:
            if not any(path == q or path.startswith(q + "/") for q in paths):
                continue
            if blob == ZERO:
                now.pop(path, None)
            else:
                now[path] = (mode, blob)
        out.append(dict(now))
    return out

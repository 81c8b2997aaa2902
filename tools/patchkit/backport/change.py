"""The change make backport carries, found upstream with as little fetched as git allows.

A pull request: origin serves its head as refs/pull/<n>/head (GitHub does, over plain git,
for open and merged ones alike). In a shallow clone its own commits come alone: a fetch that
excludes the default branch (--shallow-exclude) sends the PR's commits and stops at its merge
base; then the default branch's commits since the merge base's date, commits only, to find the
squash commit GitHub made when it merged the PR ('<title> (#<n>)'). Merged, the squash commit
is what upstream ships; else the PR's own commits. A commit (COMMIT=<sha>) is fetched alone.
Whether the target's ref already has the change is read from history fetched back to the
change's date only, and only when the ref is newer than the change.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from .. import progress
from ..errors import BadInput, NotFound
from ..git import GitError, NotOnOrigin, Repo, Sha, squash_number

MERGED, OPEN, COMMIT = "merged", "open", "commit"
MAX_COMMITS = 100  # a PR's own commits beyond its merge base; more is not one change


@dataclass(frozen=True)
class Change:
    """Upstream's commits a backport carries, oldest first, and the commit they were made on."""

    fix_id: str  # what the user types: the PR's number, or the commit's first 12 hex digits
    kind: str  # MERGED (the squash commit), OPEN (the PR's own commits), COMMIT
    commits: tuple[Sha, ...]
    base: Sha  # their parent: the 3-way merge base where the target has moved
    origin: str  # the PR's URL, or the commit's
    commit_url: str = ""  # MERGED, COMMIT: the commit upstream has (DEP-3 Applied-Upstream)
    number: str = ""  # the PR's number
    head: Sha | None = None  # the PR's head

    @property
    def upstream_commit(self) -> Sha | None:
        """The one commit upstream's history has (the squash, or the commit), else None."""
        return self.commits[0] if self.kind in (MERGED, COMMIT) else None


def web_url(url: str) -> str:
    """The web page of a git URL (https://host/owner/repo), where PRs and commits are linked."""
    u = url.strip().rstrip("/").removesuffix(".git")
    m = re.match(r"^(?:ssh://)?[^@/]+@([^:/]+)[:/](.+)$", u)  # git@host:owner/repo, ssh://git@host/owner/repo
    return f"https://{m[1]}/{m[2].lstrip('/')}" if m else u


def find_pr(repo: Repo, number: str, web: str) -> Change:
    """Pull request <number> as origin serves it: its squash commit on the default branch when
    merged, else its own commits from their merge base with the default branch."""
    if not re.fullmatch(r"[1-9][0-9]{0,9}", number):
        raise BadInput(f"{number[:40]!r} is not a pull request number", setting="pr")
    pull = f"refs/pull/{number}/head"
    with progress.step(f"asking origin for pull request {number}"):
        refs, symrefs = repo.ls_remote("HEAD", pull)
    head = refs.get(pull)
    if head is None:
        raise NotFound(f"origin ({_where(repo)}) serves no {pull}: no pull request {number} there", setting="pr")
    default, tip = symrefs.get("HEAD", ""), refs.get("HEAD")
    if not default.startswith("refs/heads/") or tip is None:
        raise NotFound(f"origin ({_where(repo)}) names no default branch (its HEAD)")
    url = f"{web}/pull/{number}"
    with progress.step(f"fetching pull request {number}'s own commits"):
        if repo.is_shallow():
            own, base = _own_shallow(repo, head, default, tip)
        else:
            repo.fetch_ids([head, tip], commits_only=True)
            base = repo.merge_base(head, tip)
            if base is None:
                raise BadInput(f"pull request {number} shares no history with {default}", setting="pr")
            own = repo.own_commits(head, base)
    if not own:  # merged without squashing: its commits are the default branch's
        raise BadInput(f"pull request {number}'s commits are on {_short(default)} (merged without squashing); "
                       f"carry them with COMMIT=<id> one by one", setting="pr")
    if len(own) > MAX_COMMITS:
        raise BadInput(f"pull request {number} has {len(own)} commits beyond {_short(default)} (at most "
                       f"{MAX_COMMITS}); carry the ones you need with COMMIT=<id>", setting="pr")
    merges = [c for c in own if len(repo.commit_info(c).parents) > 1]
    if merges:
        raise BadInput(f"pull request {number} has merge commits ({merges[0][:12]}); carry its squash "
                       f"once merged, or its commits with COMMIT=<id>", setting="pr")
    with progress.step(f"looking for pull request {number} on {_short(default)}"):
        squash = next((sha for sha, _t, _d, subject in repo.first_parent_log(base, tip)
                       if squash_number(subject) == number), None)
    if squash is None:
        return Change(number, OPEN, tuple(own), base, url, number=number, head=head)
    parents = repo.commit_info(squash).parents
    repo.fetch_ids(parents[:1], commits_only=True)
    return Change(number, MERGED, (squash,), parents[0], url, f"{web}/commit/{squash}", number, head)


def _own_shallow(repo: Repo, head: Sha, default: str, tip: Sha) -> tuple[list[Sha], Sha]:
    """In a shallow clone: the PR's own commits, fetched alone (their history that the default
    branch does not reach), and their merge base, fetched as one commit; then the default
    branch's commits since that date, commits only (where a squash commit would be)."""
    if not repo.fetch_ids([head], commits_only=True, exclude=default):
        repo.fetch_ids([head], commits_only=True)
        return [], head
    own = repo.own_commits(head)
    bases = [p for p in repo.commit_info(own[0]).parents if p not in own]
    if len(bases) != 1:
        raise BadInput(f"the pull request's first commit {own[0][:12]} has {len(bases)} parents", setting="pr")
    repo.fetch_ids(bases, commits_only=True)
    history_since(repo, tip, repo.committer_time(bases[0]))
    found = repo.merge_base(head, tip)  # where the history fetched joins up
    return (repo.own_commits(head, found) if found else own), (found or bases[0])


def find_commit(repo: Repo, rev: str, web: str) -> Change:
    """One upstream commit (COMMIT=<id>, on any branch of origin), fetched alone."""
    if not re.fullmatch(r"[0-9a-fA-F]{7,40}", rev):
        raise BadInput(f"{rev[:50]!r} is not a commit id", setting="commit")
    sha = repo.present_commit(rev.lower()) if len(rev) < 40 else None
    if sha is None and len(rev) < 40:
        raise BadInput(f"{rev} is not a commit of {repo.path}; give its full 40-hex id, which origin can send",
                       setting="commit")
    sha = sha or Sha(rev.lower())
    with progress.step(f"fetching commit {sha[:12]}"):
        try:
            repo.fetch_ids([sha], commits_only=True)
        except NotOnOrigin:
            raise NotFound(f"origin ({_where(repo)}) has no commit {sha}", setting="commit") from None
    if repo.present_commit(sha) is None:
        raise NotFound(f"origin ({_where(repo)}) has no commit {sha}", setting="commit")
    parents = repo.commit_info(sha).parents
    if len(parents) != 1:
        raise BadInput(f"commit {sha[:12]} has {len(parents)} parents; carry a commit of one parent", setting="commit")
    repo.fetch_ids(parents, commits_only=True)
    return Change(sha[:12], COMMIT, (sha,), parents[0], f"{web}/commit/{sha}", f"{web}/commit/{sha}")


def contains(repo: Repo, ref: Sha, commit: Sha) -> bool:
    """Whether ref's history has commit. In a shallow clone, ref's history is fetched back to
    the commit's date (commits only), and only when ref is the newer of the two."""
    if repo.is_ancestor(commit, ref):
        return True
    if not repo.is_shallow() or repo.committer_time(ref) < repo.committer_time(commit):
        return False
    history_since(repo, ref, repo.committer_time(commit))
    return repo.is_ancestor(commit, ref)


def history_since(repo: Repo, tip: Sha, seconds: int) -> None:
    """In a shallow clone, tip's commits since that time (a day earlier: committer clocks
    drift), commits only; tip alone when git finds none."""
    day = datetime.datetime.fromtimestamp(seconds - 86400, datetime.timezone.utc).isoformat()
    try:
        repo.fetch_history(tip, day, trees=False)
    except GitError:
        repo.fetch_ids([tip], commits_only=True)


def _where(repo: Repo) -> str:
    return repo.config_get("remote.origin.url") or str(repo.path)


def _short(ref: str) -> str:
    return ref.removeprefix("refs/heads/")

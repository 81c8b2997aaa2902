"""DCO sign-offs: check a branch as upstream's DCO check does, add what is missing.

A commit passes when one of its Signed-off-by trailers names its author or its committer
(name and email, case-insensitively); merge commits are skipped.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from .. import identity
from ..errors import BadInput, Conflict, Hint, NotFound
from ..git import Identity, Repo, Sha

_IDENT = re.compile(r"^\s*(?P<name>[^<]*?)\s*<(?P<email>[^>]+)>\s*$")


def parse_identity(text: str) -> Identity:
    """'Name <email>' -> Identity; BadInput otherwise."""
    return Identity(*identity.parse(text, "", setting="signoff"))


def signoff_identity(repo: Repo, signoff: str | None) -> Identity:
    """SIGNOFF if given, else git config; never invented."""
    if signoff:
        return parse_identity(signoff)
    ident = repo.identity()
    if ident is None:
        raise BadInput("no sign-off identity", hint=Hint.choose("signoff", also="or set git config user.name and user.email"))
    return ident


def add_signoff(repo: Repo, message: str, who: Identity) -> str:
    """The message with 'Signed-off-by: who' added unless it is already there."""
    return repo.add_trailer(message, f"Signed-off-by: {who}")


@dataclass(frozen=True)
class Violation:
    commit: str
    subject: str
    reason: str


@dataclass
class DcoResult:
    branch: str
    range: str
    checked: int
    skipped_merges: int
    violations: list[Violation] = field(default_factory=list)
    fixed: bool = False
    backup_ref: str = ""

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def hints(self) -> list[Hint]:
        return [] if self.ok or self.fixed else [Hint.run(None, fix=True)]


def _same(a: Identity, b: Identity) -> bool:
    return a.name.strip().lower() == b.name.strip().lower() and a.email.strip().lower() == b.email.strip().lower()


def check_commit(repo: Repo, sha: str) -> tuple[bool, str | None]:
    """(is_merge, reason it fails or None)."""
    info = repo.commit_info(sha)
    if len(info.parents) > 1:
        return True, None
    signoffs = []
    for key, value in repo.trailers(info.message):
        if key.lower() == "signed-off-by":
            m = _IDENT.match(value)
            if m:
                signoffs.append(Identity(m["name"], m["email"]))
    if not signoffs:
        return False, "no Signed-off-by trailer"
    people = (info.author, info.committer)
    if any(_same(s, p) for s in signoffs for p in people):
        return False, None
    emails = {p.email.lower() for p in people}
    if any(s.email.lower() in emails for s in signoffs):
        return False, "Signed-off-by name differs from the author's and committer's"
    return False, f"Signed-off-by ({', '.join(map(str, signoffs))}) matches neither author ({people[0]}) nor committer ({people[1]})"


def branch_commits(repo: Repo, branch: str, base: str | None) -> tuple[str, list[str]]:
    """The range checked (base..branch, or the commits on no remote branch or tag) and its commits, oldest first."""
    if branch.startswith("-") or repo.rev_parse(branch) is None:
        raise NotFound(f"branch {branch[:100]} is not in {repo.path}")
    if base is not None and (base.startswith("-") or repo.rev_parse(base) is None):
        raise NotFound(f"base {base[:100]!r} is not a commit in {repo.path}")
    args = [f"{base}..{branch}"] if base else [branch, "--not", "--remotes", "--tags"]
    return " ".join(args), repo.commits(*args)


def check(repo: Repo, branch: str, base: str | None = None) -> DcoResult:
    rng, shas = branch_commits(repo, branch, base)
    result = DcoResult(branch, rng, 0, 0)
    for sha in shas:
        merge, reason = check_commit(repo, sha)
        if merge:
            result.skipped_merges += 1
            continue
        result.checked += 1
        if reason:
            result.violations.append(Violation(sha, repo.commit_info(sha).subject, reason))
    return result


def fix(repo: Repo, branch: str, who: Identity, base: str | None = None) -> DcoResult:
    """Rewrite the branch so every commit carries who's sign-off (who becomes the committer).

    The old tip is kept at refs/patchkit-backup/<branch>; the branch moves by compare-and-swap.
    """
    before = check(repo, branch, base)
    if before.ok:
        return before
    if before.skipped_merges:
        raise Conflict(f"{branch} has merge commits; add the sign-offs by hand (git rebase --signoff)")
    ref = f"refs/heads/{branch}"
    old_tip = repo.rev_parse(ref)
    if old_tip is None:
        raise NotFound(f"{branch} is not a local branch in {repo.path}")
    _rng, shas = branch_commits(repo, branch, base)
    roots = repo.commit_info(shas[0]).parents
    if not roots:
        raise Conflict(f"{branch} starts with a root commit; add the sign-offs by hand (git rebase --root --signoff)")
    parent = roots[0]
    for sha in shas:
        info = repo.commit_info(sha)
        parent = repo.commit_tree(info.tree, [parent], add_signoff(repo, info.message, who), author=info.author,
                                  committer=who, author_date=info.author_date)
    # Checked before anything moves, and both refs move in one git transaction: a failure or
    # a kill leaves the branch and its backup as they were, or both moved.
    after = check(repo, parent, base)
    backup = f"refs/patchkit-backup/{branch}"
    repo.update_refs([(backup, Sha(old_tip), None), (ref, Sha(parent), old_tip)],
                     f"patchkit dco: add sign-offs (old tip kept at {backup}, {int(time.time())})")
    after.branch, after.range = branch, after.range.replace(parent, branch)
    after.fixed, after.backup_ref = True, backup
    return after

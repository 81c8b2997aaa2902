"""DCO sign-offs: check a branch as upstream's DCO check reads them, add what is missing.

A commit passes when one of its Signed-off-by trailers names its author (name and email,
case-insensitively); merge commits are skipped (#33 item 7). A sign-off that names only the
committer fails: the DCO certifies where the change comes from, which is its author's to say,
and the DCO app's own message asks for the author ('Expected "<author>", but got ...'). The
app's code also takes a committer's sign-off; make dco does not, so a branch it passes passes
there too.
"""
from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import identity
from ..errors import BadInput, Conflict, Hint, NotFound
from ..git import Identity, Repo, Sha, ref_candidates

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
    author: str = ""  # 'Name <email>': whose sign-off it needs


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
        """FIX=1 signed off as the commits' author (a sign-off is its author's to add): one
        author, one command that runs as printed; commits of several authors, none."""
        authors = {v.author for v in self.violations}
        if self.ok or self.fixed or len(authors) != 1:
            return []
        return [Hint(None, (("fix", True), ("signoff", authors.pop())), "as their author")]


def same_person(a: Identity, b: Identity) -> bool:
    """One identity, as the DCO check compares them: name and email, case-insensitively."""
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
    author, committer = info.author, info.committer
    if any(same_person(s, author) for s in signoffs):
        return False, None
    if any(same_person(s, committer) for s in signoffs):
        return False, f"signed off by its committer ({committer}) only, not by its author ({author})"
    if any(s.email.strip().lower() == author.email.strip().lower() for s in signoffs):
        return False, f"Signed-off-by name differs from the author's ({author})"
    return False, f"Signed-off-by ({', '.join(map(str, signoffs))}) does not name its author ({author})"


def upstream_refs(repo: Repo, refs: Sequence[str]) -> list[str]:
    """The targets' refs (patchset.yaml's upstream.ref), as this checkout has them: where
    upstream's own commits end, also in a checkout with no remote-tracking refs."""
    found = []
    for ref in refs:
        cand = next((c for c in ref_candidates(ref) if repo.rev_parse(c)), None)
        if cand and cand not in found:
            found.append(cand)
    return found


def branch_commits(repo: Repo, branch: str, base: str | None, upstream: Sequence[str] = ()) -> tuple[str, list[str]]:
    """The range checked and its commits, oldest first: base..branch, or the commits of branch
    on no remote branch, no tag and none of the targets' refs (upstream): never upstream's own
    commits, which a checkout without remote-tracking refs (the upstream repository itself,
    the miniature) had counted and FIX rewrote (#24 item 5)."""
    if branch.startswith("-") or repo.rev_parse(branch) is None:
        raise NotFound(f"branch {branch[:100]} is not in {repo.path}")
    if base is not None and (base.startswith("-") or repo.rev_parse(base) is None):
        raise NotFound(f"base {base[:100]!r} is not a commit in {repo.path}")
    args = [f"{base}..{branch}"] if base else [branch, "--not", "--remotes", "--tags", *upstream]
    return " ".join(args), repo.commits(*args)


def check(repo: Repo, branch: str, base: str | None = None, upstream: Sequence[str] = ()) -> DcoResult:
    rng, shas = branch_commits(repo, branch, base, upstream)
    result = DcoResult(branch, rng, 0, 0)
    for sha in shas:
        merge, reason = check_commit(repo, sha)
        if merge:
            result.skipped_merges += 1
            continue
        result.checked += 1
        if reason:
            info = repo.commit_info(sha)
            result.violations.append(Violation(sha, info.subject, reason, str(info.author)))
    return result


def fix(repo: Repo, branch: str, who: Identity, base: str | None = None, upstream: Sequence[str] = ()) -> DcoResult:
    """Rewrite the branch so every commit carries who's sign-off (who becomes the committer).

    Only commits that who authored: a sign-off is its author's to give (a commit of someone
    else's, signed off by who, would still fail the check), so another author's commit is
    refused before anything moves, naming the author to sign off as.
    The old tip is kept at refs/patchkit-backup/<branch>; the branch moves by compare-and-swap.
    make unapply takes a set's branch so rewritten as its own (applied.py).
    """
    before = check(repo, branch, base, upstream)
    if before.ok:
        return before
    if before.skipped_merges:
        raise Conflict(f"{branch} has merge commits; add the sign-offs by hand (git rebase --signoff)")
    ref = f"refs/heads/{branch}"
    old_tip = repo.rev_parse(ref)
    if old_tip is None:
        raise NotFound(f"{branch} is not a local branch in {repo.path}")
    there = repo.checked_out_elsewhere().get(ref)
    if there:  # its HEAD would move under that worktree (#24 item 4): fix it from there
        raise Conflict(f"{branch} is checked out in {there}, another worktree of this repository; "
                       f"add the sign-offs there", hint=Hint.run(None, src=str(there)))
    foreign = [v for v in before.violations if not same_person(repo.commit_info(v.commit).author, who)]
    if foreign:
        authors = list(dict.fromkeys(v.author for v in foreign))
        raise BadInput(f"{len(foreign)} commit(s) of {branch} to sign off are authored by {', '.join(authors)}, not by "
                       f"{who} (first: {foreign[0].commit[:12]} {foreign[0].subject[:50]}); a sign-off is its "
                       "author's to add", setting="signoff",
                       hint=Hint(None, (("fix", True), ("signoff", authors[0])), "as their author")
                       if len(authors) == 1 else None)
    _rng, shas = branch_commits(repo, branch, base, upstream)
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
    after = check(repo, parent, base, upstream)
    backup = f"refs/patchkit-backup/{branch}"
    repo.update_refs([(backup, Sha(old_tip), None), (ref, Sha(parent), old_tip)],
                     f"patchkit dco: add sign-offs (old tip kept at {backup}, {int(time.time())})")
    after.branch, after.range = branch, after.range.replace(parent, branch)
    after.fixed, after.backup_ref = True, backup
    return after

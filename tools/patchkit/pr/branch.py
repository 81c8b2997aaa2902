"""make pr: a signed-off branch with the series, the PR title and body, from a measured delta."""
from __future__ import annotations

import dataclasses
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from .. import atomic, identity, provenance, schema as S, series, stack, state
from ..errors import Conflict, ExitCode, Hint, UserError
from ..git import Identity, Repo, Sha
from ..model import Fix, PatchSet
from ..upstream import base_of
from ..waives import edit as waiver_edit
from . import body as body_mod, checklist, checks, dco, depends as depends_mod, template as template_mod
from .title import title as make_title


_PR_STATE = S.record({"branch": S.string(), "tip": S.string()}, unknown=True)


@dataclass
class PrResult:
    target: str
    branch: str
    base: str
    tip: str
    title: str
    body: str
    messages: list[str] = field(default_factory=list)
    out_dir: str = ""
    patches: list[str] = field(default_factory=list)
    template: str = ""  # where the body's template came from
    checklist: list[dict] = field(default_factory=list)  # each item: text, state, why, by
    notes: list[str] = field(default_factory=list)
    open_with: list[str] = field(default_factory=list)  # the commands that push the branch and open the PR
    base_ref: str = ""  # the target's ref as found in the checkout (refs/tags/... for a tag)
    branch_set: str | None = None  # for a tag: the set whose ref is upstream's PR branch (main)
    fork_known: bool = True  # False: open_with says <you> where the user's GitHub user goes
    authors: list[str] = field(default_factory=list)  # the commits' authors, 'Name <email>', each once
    signer: str = ""  # who signs them off, 'Name <email>'
    author_given: bool = False  # AUTHOR (--author) set the commits' author
    lint: dict | None = None  # the lint the checklist was answered from (its report, as make lint writes it)

    @property
    def hints(self) -> list[Hint]:
        """A tag is no PR base: the PR to open is the branch set's. Without the user's GitHub
        user, the gh command says <you>, and how to set it."""
        if self.base_ref.startswith("refs/tags/"):
            # that set's own delta report and PR folder: the defaults, not this target's; its delta
            # first, which make pr reads (without it make pr stopped: no delta report, exit 4)
            return [Hint("pr", (("target", self.branch_set), ("report", False), ("out", False)),
                         first=(Hint.run("delta", target=self.branch_set, report=False),))] if self.branch_set else []
        return [] if self.fork_known else [Hint.choose("fork", also="or once for all: git config --global github.user <your GitHub user>")]


def _refuse_foreign_commits(repo: Repo, target: str, branch: str) -> Sha | None:
    """The branch's tip, when make pr may move it: it must be the tip make pr left there.

    Re-running make pr after committing a review fix on pr/<target> discarded that commit
    without a word; now it is named and nothing moves."""
    ref = f"refs/heads/{branch}"
    old = repo.rev_parse(ref)
    if old is None:
        return None
    if repo.symbolic_head() == ref:
        raise Conflict(f"{branch} is checked out in {repo.path}; switch to another branch first "
                       f"(git -C {repo.path} switch -), then run again")
    there = repo.checked_out_elsewhere().get(ref)
    if there:  # moving it would leave that worktree's files behind its HEAD (#24 item 4)
        raise Conflict(f"{branch} is checked out in {there}, another worktree of this repository; check out "
                       f"another branch there, then run again")
    last = state.read(repo, f"pr-{target}", _PR_STATE, shared=True)  # about a branch every worktree sees
    if last is None or old not in (last["tip"], last.get("previous")):
        ours = last["tip"] if last and repo.rev_parse(last["tip"]) else None
        foreign = repo.commits(f"{ours}..{old}") if ours else [old]
        sha = foreign[-1] if foreign else old
        subject = repo.commit_info(sha).subject
        # Renamed, not copied: a copy left the branch where it was, and make pr refused it again.
        keep = repo.user_command("branch", "-m", branch, f"keep/{target}")
        raise Conflict(f"{branch} has {sha[:12]} ({subject[:60]}), which make pr did not make; keep it under "
                       f"another name ({keep}) or delete {branch}, then run again")
    return old


def own_fix(ps: PatchSet, fix_id: str | None) -> Fix:
    """The own fix a PR is made of: FIXID, else the stack's only own fix (BadInput listing them)."""
    return stack.find(ps, fix_id, ours=True, setting="fix_id")


def name(ps: PatchSet, fix: Fix) -> str:
    """What the PR's branch, folder and record are called: the target, and on a stack of several
    own fixes the fix too (pr/main-19514), so that each fix's PR has its own."""
    return ps.target if sum(f.ours for f in ps.fixes) == 1 else f"{ps.target}-{fix.id}"


def view(ps: PatchSet, fix: Fix) -> PatchSet:
    """The target carrying only this fix: the PR's series (no backport, no other fix), with the
    waiver intent for the fix's own tests."""
    out = ps.only(fix)
    if ps.waivers and ps.stacked:
        mine = set(fix.tests.all) | {p for patch in fix.patches for p in patch.paths}
        out = dataclasses.replace(out, waivers=dataclasses.replace(
            ps.waivers, must_run=tuple(t for t in ps.waivers.must_run if t in mine)))
    return out


def pr(ps: PatchSet, *, repo: Repo, report: Path, out_dir: Path, signoff: str | None = None,
       committer_date: str | None = None, lint: dict | None = None, fork: str | None = None,
       author: str | None = None, fix_id: str | None = None,
       depends: depends_mod.Depends | None = None, notes: bool = False) -> PrResult:
    """Build pr/<target> from the target's ref with the own fix's patches (never a backport),
    every commit signed off and without the overlay's DEP-3 trailers, and render the text.
    author ('Name <email>'): the commits' author, else the sign-off's identity. notes: the
    body carries the set's internal notes too (variant history, source mode's caveat)."""
    fix = own_fix(ps, fix_id)
    whole, ps = ps, view(ps, fix)
    ref, base = base_of(repo, ps)
    rep = body_mod.load_report(report, ps, base, fix.id)
    who = dco.signoff_identity(repo, signoff)
    # The commits are the sign-off's own unless AUTHOR names another author (#33 item 7): the
    # patches' From: (a placeholder such as "Overlay Maintainers") signed off by whoever git
    # config names is what GitHub's DCO check rejects, since it wants the author's sign-off.
    by = Identity(*identity.parse(author, "", setting="author")) if author else who
    pr_title = make_title(ps)
    patches = [dataclasses.replace(p, author_name=by.name, author_email=by.email) for p in ps.patches]
    needs = depends if depends is not None else depends_mod.measure(whole, fix, repo, base)

    res = series.apply_series(repo, base, patches, committer=who, committer_date=committer_date,
                              message_filter=lambda m: dco.add_signoff(repo, provenance.without(m), who),
                              extra=lambda tb: waiver_edit.apply_to(tb, ps, author=by), threeway=bool(needs.merge_bases),
                              merge_bases=needs.merge_bases, search_history=False)
    res.raise_on_conflict(f" to {ref}", Hint.run("check"), needs.line())
    skipped = res.named(series.UPSTREAM)
    if skipped:
        raise Conflict(f"{', '.join(skipped)} already upstream at {ref}; update the patch set before a PR")
    shas = repo.commits(f"{base}..{res.tip}")
    files = repo.changed_paths(base, res.tip)
    waiver = res.extra
    waiver_text = (f"{waiver.why}; the edit is the last commit." if waiver and waiver.changed
                   else (f"{waiver.why}." if waiver else None))
    unrun = body_mod.not_run_nearby(ps, rep, files, repo, base)
    ctx = body_mod.context(ps, rep, files, waiver_text, lint, needs.line(), notes=notes, unrun=unrun)
    body = body_mod.render(ps, ctx, body_mod.facts(ps, rep, ctx, files, repo, base, lint),
                           template_mod.at(repo, base, ps.upstream.ref))
    # Upstream's checks, before anything is written: a body its CI would reject never leaves us.
    problems = checks.title_problems(pr_title) + checks.checklist_problems(body.text, reviewer_left=True)
    if problems:
        open_items = [a for a in body.answers if a.state == checklist.OPEN and not a.item.startswith(checks.FINAL_BOX_TEXT)]
        first = f"item '{open_items[0].item}' is open: {open_items[0].why}" if open_items else problems[0]
        more = len(open_items or problems) - 1
        raise UserError(f"{ps.target}: the PR body would fail upstream's PR checks: {first}"
                        + (f" (and {more} more)" if more else "") + "; nothing written", ExitCode.MISMATCH,
                        hint=_mend_hint(open_items, lint))
    called = name(whole, fix)
    branch = f"pr/{called}"
    old = _refuse_foreign_commits(repo, called, branch)

    text = body.text
    messages = [repo.commit_info(s).message.strip() + "\n" for s in shas]

    with atomic.replace_dir(out_dir) as fresh:  # the old PR files stay whole until the new ones are
        (fresh / "patches").mkdir()
        (fresh / "title.txt").write_text(pr_title + "\n")
        (fresh / "body.md").write_text(text)
        if lint is not None:  # the lint verdict the checklist was answered from, with the PR it answers
            (fresh / "lint.json").write_text(json.dumps({**lint, "report": str(out_dir / "lint.json")}, indent=2,
                                                        sort_keys=True) + "\n")
        written = repo.format_series(f"{base}..{res.tip}", fresh / "patches")
    said = list(body.notes) + ([needs.note] if needs.note else [])
    if unrun:
        said.append(f"{len(unrun)} existing test file(s) next to the change did not run in the delta "
                    f"({', '.join(unrun)}); the body says so")
    if not dco.same_person(by, who):  # told so (AUTHOR=): said, since upstream's DCO check will ask for more
        said.append(f"the commits are authored by {by} and signed off by {who}: GitHub's DCO check wants each "
                     f"commit signed off by its author, so {by.name} must add their own Signed-off-by before the PR "
                     "passes it (or leave AUTHOR unset: the sign-off authors them)")
    opens, branch_set = [], None
    if ref.startswith("refs/tags/"):
        # A PR's base must be a branch, and upstream's CONTRIBUTING.md has PRs target main (a
        # release/* branch only when an NVIDIA bug names it): a tag's set is for users of that
        # release; the PR upstream can merge is the one made from the main set.
        branch_set = _branch_set(ps)
        said.append(f"no gh pr create for {ps.target}: {ps.upstream.ref} is a tag, and a PR's base must be a branch; "
                     "upstream takes PRs on main (CONTRIBUTING.md)"
                     + (f", so open the one make pr makes for the {branch_set} set" if branch_set else ""))
    owner = fork or repo.config_get("github.user") or _fork_remote(ps, repo)
    if not ref.startswith("refs/tags/"):
        opens = open_commands(ps, repo, branch, out_dir, owner or YOU)
    authors = list(dict.fromkeys(f"{i.author.name} <{i.author.email}>" for i in map(repo.commit_info, shas)))
    # The branch moves last, once everything it stands for is written and every git read is
    # done (a git that failed after it moved left the checkout changed, exit 3); the record of
    # what make pr made comes first, naming the tip before and after, so a kill in between is
    # no reason to refuse the next run.
    state.write(repo, f"pr-{called}", {"branch": branch, "tip": res.tip, "previous": old}, shared=True)
    if old != res.tip:
        repo.update_ref(f"refs/heads/{branch}", res.tip, old, f"patchkit pr {called}")
    return PrResult(ps.target, branch, base, res.tip, pr_title, text, messages, str(out_dir),
                    [p.name for p in written], body.template,
                    [vars(a) for a in body.answers], said, opens, ref, branch_set, bool(owner), authors,
                    f"{who.name} <{who.email}>", author is not None,
                    None if lint is None else {**lint, "report": str(out_dir / "lint.json")})


def _mend_hint(open_items: list[checklist.Answer], lint: dict | None) -> Hint | None:
    """Failing formatters are mended by lint's FIX, said as the user runs lint: make lint FIX=1
    through make, patchkit lint --fix from a shell (#24 item 6). pr's REPORT is the delta's
    report, not lint's: it is left out."""
    if not (lint and lint.get("failures") and any(checklist.is_guidelines(a.item) for a in open_items)):
        return None
    return Hint("lint", (("fix", True), ("report", False)), "it mends the formatters' part")


_GITHUB = re.compile(r"^(?:https://|git@|ssh://git@)github\.com[:/]([^/]+)/([^/]+?)(?:\.git)?/?$")


def _branch_set(ps: PatchSet) -> str | None:
    """The set beside this one that targets upstream's main branch (the PR base upstream uses)."""
    from .. import patchset  # the model's loader; here only for a tag's set
    root = ps.root.parent.parent
    for t in patchset.targets(root):
        if t != ps.target and patchset.load(root, t).upstream.ref == "main":
            return t
    return None


def _fork_remote(ps: PatchSet, repo: Repo) -> str:
    """The owner of a GitHub remote of the checkout that is a fork of upstream (same name, other owner)."""
    up = _GITHUB.match(ps.upstream.url)
    if up is None:
        return ""
    owners = sorted({m[1] for url in repo.remote_urls() if (m := _GITHUB.match(url)) and m[2].lower() == up[2].lower()
                     and m[1].lower() != up[1].lower()})
    return owners[0] if len(owners) == 1 else ""


# Where the user's GitHub user goes in the commands, while it is not known (FORK sets it).
YOU = "<you>"


def open_commands(ps: PatchSet, repo: Repo, branch: str, out_dir: Path, owner: str) -> list[str]:
    """Push to the user's fork, then gh pr create against upstream, as they run when pasted
    (with <you> for the owner while it is not known)."""
    m = _GITHUB.match(ps.upstream.url)
    if not owner or m is None:
        return []
    slug, name = f"{m[1]}/{m[2]}", m[2]
    q = shlex.quote
    return [repo.push_command(f"https://github.com/{owner}/{name}.git", branch),
            f"gh pr create --repo {slug} --base {q(ps.upstream.ref)} --head {q(f'{owner}:{branch}')} "
            f"--title \"$(cat {q(str(out_dir / 'title.txt'))})\" --body-file {q(str(out_dir / 'body.md'))}"]

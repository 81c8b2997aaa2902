"""make pr: a signed-off branch with the series, the PR title and body, from a measured delta."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import atomic, schema as S, series, state
from ..errors import Conflict, ExitCode, Hint, UserError
from ..git import Repo, Sha
from ..model import PatchSet
from ..upstream import base_of
from ..waives import edit as waiver_edit
from . import body as body_mod, checklist, checks, dco, template as template_mod
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
    last = state.read(repo, f"pr-{target}", _PR_STATE)
    if last is None or old not in (last["tip"], last.get("previous")):
        ours = last["tip"] if last and repo.rev_parse(last["tip"]) else None
        foreign = repo.commits(f"{ours}..{old}") if ours else [old]
        sha = foreign[-1] if foreign else old
        subject = repo.commit_info(sha).subject
        raise Conflict(f"{branch} has {sha[:12]} ({subject[:60]}), which make pr did not make; keep it elsewhere "
                       f"(git -C {repo.path} branch keep/{target} {branch}) or delete {branch}, then run again")
    return old


def pr(ps: PatchSet, *, repo: Repo, report: Path, out_dir: Path, signoff: str | None = None,
       committer_date: str | None = None) -> PrResult:
    """Build pr/<target> from the target's ref with every commit signed off, and render the text."""
    ref, base = base_of(repo, ps)
    rep = body_mod.load_report(report, ps, base)
    who = dco.signoff_identity(repo, signoff)
    pr_title = make_title(ps)

    res = series.apply_series(repo, base, ps.patches, committer=who, committer_date=committer_date,
                              message_filter=lambda m: dco.add_signoff(repo, m, who),
                              extra=lambda tb: waiver_edit.apply_to(tb, ps))
    res.raise_on_conflict(f" to {ref}", Hint.run("check"))
    skipped = res.named(series.UPSTREAM)
    if skipped:
        raise Conflict(f"{', '.join(skipped)} already upstream at {ref}; update the patch set before a PR")
    shas = repo.commits(f"{base}..{res.tip}")
    files = repo.changed_paths(base, res.tip)
    waiver = res.extra
    waiver_text = (f"{waiver.why}; the edit is the last commit." if waiver and waiver.changed
                   else (f"{waiver.why}." if waiver else None))
    ctx = body_mod.context(ps, rep, files, waiver_text)
    body = body_mod.render(ps, ctx, body_mod.facts(ps, rep, ctx, files, repo, base), template_mod.at(repo, base, ps.upstream.ref))
    # Upstream's checks, before anything is written: a body its CI would reject never leaves us.
    problems = checks.title_problems(pr_title) + checks.checklist_problems(body.text)
    if problems:
        open_items = [a for a in body.answers if a.state == checklist.OPEN and not a.item.startswith(checks.FINAL_BOX_TEXT)]
        first = f"item '{open_items[0].item}' is open: {open_items[0].why}" if open_items else problems[0]
        more = len(open_items or problems) - 1
        raise UserError(f"{ps.target}: the PR body would fail upstream's PR checks: {first}"
                        + (f" (and {more} more)" if more else "") + "; nothing written", ExitCode.MISMATCH)
    branch = f"pr/{ps.target}"
    old = _refuse_foreign_commits(repo, ps.target, branch)

    text = body.text
    messages = [repo.commit_info(s).message.strip() + "\n" for s in shas]

    with atomic.replace_dir(out_dir) as fresh:  # the old PR files stay whole until the new ones are
        (fresh / "patches").mkdir()
        (fresh / "title.txt").write_text(pr_title + "\n")
        (fresh / "body.md").write_text(text)
        written = repo.format_series(f"{base}..{res.tip}", fresh / "patches")
    # The branch moves last, once everything it stands for is written; the record of what
    # make pr made comes first, naming the tip before and after, so a kill in between is no
    # reason to refuse the next run.
    state.write(repo, f"pr-{ps.target}", {"branch": branch, "tip": res.tip, "previous": old})
    if old != res.tip:
        repo.update_ref(f"refs/heads/{branch}", res.tip, old, f"patchkit pr {ps.target}")
    return PrResult(ps.target, branch, base, res.tip, pr_title, text, messages, str(out_dir),
                    [p.name for p in written], body.template,
                    [vars(a) for a in body.answers], body.notes)

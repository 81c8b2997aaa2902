"""make pr: a signed-off branch with the series, the PR title and body, from a measured delta."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .. import series
from ..errors import Conflict, ExitCode, Hint, UserError
from ..git import Repo
from ..model import PatchSet
from ..upstream import base_of
from ..waives import edit as waiver_edit
from . import body as body_mod, checklist, checks, dco, template as template_mod
from .title import title as make_title


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
    old = repo.rev_parse(f"refs/heads/{branch}")
    if old != res.tip:
        repo.update_ref(f"refs/heads/{branch}", res.tip, old, f"patchkit pr {ps.target}")

    text = body.text
    messages = [repo.commit_info(s).message.strip() + "\n" for s in shas]

    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "patches").mkdir(parents=True)
    (out_dir / "title.txt").write_text(pr_title + "\n")
    (out_dir / "body.md").write_text(text)
    written = repo.format_series(f"{base}..{res.tip}", out_dir / "patches")
    return PrResult(ps.target, branch, base, res.tip, pr_title, text, messages, str(out_dir),
                    [p.name for p in written], body.template,
                    [vars(a) for a in body.answers], body.notes)

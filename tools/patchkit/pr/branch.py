"""make pr: a signed-off branch with the series, the PR title and body, from a measured delta."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .. import series
from ..errors import Conflict
from ..git import Repo
from ..model import PatchSet
from ..upstream import base_of
from ..waives import edit as waiver_edit
from . import body as body_mod, dco
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
    res.raise_on_conflict(f" to {ref}", "; run make check")
    skipped = res.named(series.UPSTREAM)
    if skipped:
        raise Conflict(f"{', '.join(skipped)} already upstream at {ref}; update the patch set before a PR")
    branch = f"pr/{ps.target}"
    old = repo.rev_parse(f"refs/heads/{branch}")
    if old != res.tip:
        repo.update_ref(f"refs/heads/{branch}", res.tip, old, f"patchkit pr {ps.target}")

    shas = repo.commits(f"{base}..{res.tip}")
    files = repo.changed_paths(base, res.tip)
    waiver = res.extra
    waiver_text = (f"{waiver.why}; the edit is the last commit." if waiver and waiver.changed
                   else (f"{waiver.why}." if waiver else None))
    text = body_mod.render(body_mod.context(ps, rep, files, waiver_text))
    messages = [repo.commit_info(s).message.strip() + "\n" for s in shas]

    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "patches").mkdir(parents=True)
    (out_dir / "title.txt").write_text(pr_title + "\n")
    (out_dir / "body.md").write_text(text)
    written = repo.format_series(f"{base}..{res.tip}", out_dir / "patches")
    return PrResult(ps.target, branch, base, res.tip, pr_title, text, messages, str(out_dir),
                    [p.name for p in written])

"""The change as format-patch files, each message with its DEP-3 trailers, checked as untrusted
input: a pull request is anyone's. The checks every patch passes (patchcheck.py) run on its
commits before a blob is fetched (no message over 64 KiB or with a line git reads as the
start of a patch; no symlink, submodule or file made executable), and again on the files they
become, as patchset.parse_patch loads our own (no binary file either, and no path out of the
tree or into .git).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .. import patchcheck, progress, provenance
from ..errors import BadInput, Hint
from ..git import Repo, Sha, TreeChange
from ..model import Patch
from ..patchset import parse_patch
from .change import OPEN, Change


def trailers(change: Change, bug: str, today: str) -> list[tuple[str, str]]:
    """The DEP-3 fields of each patch: where it comes from, the bug (when known), its status."""
    if change.kind == OPEN:
        out = [("Origin", f"backport, {change.origin}")]
    else:
        out = [("Origin", f"upstream, {change.commit_url}")]
    if bug:
        out.append(("Bug", bug))
    out.append(("Forwarded", "not-needed"))
    if change.kind != OPEN:
        out.append(("Applied-Upstream", change.commit_url))
    return out + [("Last-Update", today)]


def render(repo: Repo, change: Change, fields: Sequence[tuple[str, str]], out_dir: Path) -> list[Patch]:
    """The change's commits as patch files in out_dir, each message with the DEP-3 fields as
    trailers (git interpret-trailers); BadInput naming the commit when one fails a check.

    Only what the diffs read is fetched: the trees that differ between each commit and its
    parent, and the blobs of the files that change."""
    changed: list[list[TreeChange]] = []
    prev = change.base
    with progress.step("reading the files the change touches"):
        for c in change.commits:
            info = repo.commit_info(c)
            _check_message(c, info.message)
            files = repo.tree_changes(repo.commit_info(prev).tree, info.tree)
            if not files:  # git writes no patch for it (format-patch skips it: #31 item 6)
                _nothing(change, c)
            _check_files(c, files)
            changed.append(files)
            prev = c
        repo.prefetch([b for files in changed for f in files for b in (f.old_blob, f.new_blob) if b])
    tip = change.base
    for c in change.commits:
        info = repo.commit_info(c)
        # The PR's own DEP-3 fields never stand beside ours (#31 item 5): removed, or quoted.
        message = repo.with_trailers(provenance.untrusted(info.message), fields)
        tip = repo.commit_tree(info.tree, [tip], message, author=info.author,
                               committer=info.committer, author_date=info.author_date,
                               committer_date=info.author_date)
    out = []
    for c, path, files in zip(change.commits, repo.format_series(f"{change.base}..{tip}", out_dir), changed):
        out.append(_checked(c, path, files))
    return out


def _checked(commit: Sha, path: Path, files: list[TreeChange]) -> Patch:
    try:
        patch = parse_patch(path)
    except BadInput as exc:
        raise BadInput(f"commit {commit[:12]}: {exc.message.removeprefix(path.name + ': ')}") from None
    if set(patch.paths) != {f.path for f in files}:
        raise BadInput(f"commit {commit[:12]}: its patch does not say what it changes "
                       f"({', '.join(sorted(set(patch.paths) ^ {f.path for f in files}))[:200]}); refusing")
    return patch


def _nothing(change: Change, commit: Sha) -> None:
    """BadInput: this commit of the change is empty; the others, if any, can be carried alone."""
    whose = f"pull request {change.number}'s commit" if change.number else "commit"
    others = [c for c in change.commits if c != commit]
    setting = "pr" if change.number else "commit"
    if not others:
        raise BadInput(f"{whose} {commit[:12]} changes nothing: there is nothing to carry", setting=setting)
    raise BadInput(f"{whose} {commit[:12]} changes nothing; carry its other commits one by one",
                   setting=setting, hint=Hint.run(None, pr=False, commit=others[0]))


def _check_message(commit: Sha, message: str) -> None:
    if wrong := patchcheck.message(message):
        raise BadInput(f"commit {commit[:12]}: {wrong}; refusing")


def _check_files(commit: Sha, files: list[TreeChange]) -> None:
    for f in files:
        if wrong := patchcheck.mode(f.path, f.old_mode, f.new_mode):
            raise BadInput(f"commit {commit[:12]}: {wrong}; refusing")

"""The change as format-patch files, each message with its DEP-3 trailers, checked as untrusted
input: a pull request is anyone's. Its paths, modes, sizes and messages pass the checks our
own patch files pass (patchset.parse_patch: no path out of the tree or into .git, no
symlink), and a few that only a change taken from elsewhere needs: no submodule, no file
made executable, no binary, no message that git would read as the start of a patch.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from .. import progress
from ..errors import BadInput
from ..git import Repo, Sha, TreeChange
from ..model import Patch
from ..patchset import parse_patch
from .change import OPEN, Change

MAX_MESSAGE = 64 * 1024  # bytes of one commit message
# Where git mailinfo (git am) stops reading a message and starts reading a patch: a message
# with such a line would end early in the patch file, and the rest could pass for a diff.
_PATCH_START = re.compile(r"^(?:---|diff -|Index: )", re.M)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BINARY = re.compile(r"^(?:Binary files .* differ|GIT binary patch)$", re.M)
LINK, GITLINK, EXECUTABLE = "120000", "160000", "100755"


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
            _check_files(c, files)
            changed.append(files)
            prev = c
        repo.prefetch([b for files in changed for f in files for b in (f.old_blob, f.new_blob) if b])
    tip = change.base
    for c in change.commits:
        info = repo.commit_info(c)
        tip = repo.commit_tree(info.tree, [tip], repo.with_trailers(info.message, fields), author=info.author,
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
    if m := _BINARY.search(patch.diff):
        raise BadInput(f"commit {commit[:12]}: changes a binary file ({m[0][:100]}); refusing")
    if set(patch.paths) != {f.path for f in files}:
        raise BadInput(f"commit {commit[:12]}: its patch does not say what it changes "
                       f"({', '.join(sorted(set(patch.paths) ^ {f.path for f in files}))[:200]}); refusing")
    return patch


def _check_message(commit: Sha, message: str) -> None:
    said = f"commit {commit[:12]}: its message"
    if len(message.encode("utf-8", "surrogateescape")) > MAX_MESSAGE:
        raise BadInput(f"{said} is over {MAX_MESSAGE // 1024} KiB; refusing")
    if not message.split("\n", 1)[0].strip():
        raise BadInput(f"{said} has no subject; refusing")
    if _CONTROL.search(message):
        raise BadInput(f"{said} contains control characters; refusing")
    if m := _PATCH_START.search(message):
        line = message[m.start():].split("\n", 1)[0]
        raise BadInput(f"{said} has a line git reads as the start of a patch ({line[:60]!r}); refusing")


def _check_files(commit: Sha, files: list[TreeChange]) -> None:
    for f in files:
        said = f"commit {commit[:12]}: {f.path}"
        if LINK in (f.old_mode, f.new_mode):
            raise BadInput(f"{said} is a symlink; refusing")
        if GITLINK in (f.old_mode, f.new_mode):
            raise BadInput(f"{said} is a submodule; refusing")
        if f.new_mode == EXECUTABLE and f.old_mode != EXECUTABLE:
            raise BadInput(f"{said} becomes an executable file; refusing")

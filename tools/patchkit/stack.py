"""A target's stack of fixes: their order, which one a command means, and what each path is.

The one module that knows how fixes relate: which patches a fix's delta applies without it
and with it, where the test part of a mixed patch ends, which files a wheel must be built
from, and where a new fix goes in the stack. Everything here is pure: no git, no files.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from .errors import BadInput, Hint, NotFound
from .model import Fix, Patch, PatchSet, is_test_path

# What happens to a path of upstream's tree in an image (see classify).
TEST, DOCS, PACKAGE, WHEEL, ELSEWHERE = "test", "docs", "package", "wheel", "elsewhere"
# Upstream folders never built into the wheel, besides the tests: its user docs and examples,
# and its CI configuration.
NOT_SHIPPED = ("docs", "examples", ".github")


def classify(path: str, package: str) -> str:
    """test (any tests/ folder), docs (docs/, examples/, CI config, a top-level dot file or
    Markdown page), package (laid over the installed package), or wheel: what the wheel is
    built from (cpp/, CMake files, setup.py, requirements, anything else outside the package)."""
    parts = PurePosixPath(path).parts
    if is_test_path(path):
        return TEST
    if parts[0] == package:
        return PACKAGE
    if parts[0] in NOT_SHIPPED or (len(parts) == 1 and (parts[0].startswith(".") or parts[0].endswith(".md"))):
        return DOCS
    return WHEEL


def find(ps: PatchSet, fix_id: str | None, *, ours: bool = False, setting: str = "fix_id") -> Fix:
    """The fix a command means: fix_id, else the stack's only (own) fix; NotFound/BadInput
    listing the ids to choose from."""
    pool = [f for f in ps.fixes if f.ours] if ours else list(ps.fixes)
    if fix_id is not None:
        for f in ps.fixes:
            if f.id == fix_id:
                if ours and not f.ours:
                    raise BadInput(f"{ps.target}: fix {fix_id} is a backport of {f.origin}; only our own fixes "
                                   f"become PRs ({_ids(pool)})", setting=setting)
                return f
        raise NotFound(f"{ps.target} carries no fix {fix_id!r} (it carries: {_ids(ps.fixes)})", setting=setting)
    if len(pool) == 1:
        return pool[0]
    what = "own fixes" if ours else "fixes"
    if not pool:
        raise NotFound(f"{ps.target} carries no {what}")
    raise BadInput(f"{ps.target} carries {len(pool)} {what} ({_ids(pool)}); name one", setting=setting)


def _ids(fixes: Sequence[Fix]) -> str:
    return ", ".join(f"{f.id} ({f.kind})" for f in fixes) or "none"


def owner(ps: PatchSet, patch: Patch) -> Fix:
    """The fix a patch of the stack belongs to."""
    for f in ps.fixes:
        if any(p.name == patch.name for p in f.patches):
            return f
    raise KeyError(patch.name)


def test_part(patch: Patch) -> Patch | None:
    """The patch restricted to its test files (None when it changes none): what the tree
    without its fix still gets. A squash commit mixes code and tests in one patch; it is
    split by path, never by hand."""
    keep = [fc for fc in patch.files if is_test_path(fc.path or fc.old_path)]
    if len(keep) == len(patch.files):
        return patch
    if not keep:
        return None
    wanted = {fc.path or fc.old_path for fc in keep}
    sections = _sections(patch.diff)
    diff = "".join(text for path, text in sections if path in wanted)
    return replace(patch, diff=diff, files=tuple(keep))


def _sections(diff: str) -> list[tuple[str, str]]:
    """A git diff cut at each 'diff --git' line: (the path after the change, else before; its text)."""
    out: list[tuple[str, str]] = []
    for chunk in diff.split("\ndiff --git ")[0:]:
        text = chunk if chunk.startswith("diff --git ") else "diff --git " + chunk
        text = text if text.endswith("\n") else text + "\n"
        header = text.split("\n", 1)[0]
        # 'diff --git a/x b/x': the b/ side (renames and deletions name it too)
        path = header.rsplit(" b/", 1)[-1]
        out.append((path, text))
    return out


def without(ps: PatchSet, fix: Fix) -> list[Patch]:
    """The delta's tree without the fix: the rest of the stack, and the fix's own test files."""
    out: list[Patch] = []
    for f in ps.fixes:
        if f.id != fix.id:
            out += f.patches
        else:
            out += [t for p in f.patches if (t := test_part(p)) is not None]
    return out


def cut(ps: PatchSet, ids: Sequence[str]) -> PatchSet:
    """The stack with these fixes cut to their test files (a fix fixed upstream, or one that
    does not apply without a fix beneath it): what the others' delta is measured on."""
    gone = set(ids)
    return replace(ps, fixes=tuple(replace(f, patches=tuple(t for p in f.patches if (t := test_part(p)) is not None))
                                   if f.id in gone else f for f in ps.fixes))


def code_patches(fix: Fix) -> list[Patch]:
    """The patches of the fix that change more than tests."""
    return [p for p in fix.patches if not p.tests_only]


def wheel_files(ps: PatchSet, fix: Fix) -> list[tuple[Patch, list[str]]]:
    """The fix's patches that change what the wheel is built from, with those files: an image
    cannot carry them by laying files over the installed package."""
    out = []
    for p in fix.patches:
        files = [x for x in p.paths if classify(x, ps.container.package) == WHEEL]
        if files:
            out.append((p, files))
    return out


def insert(ps: PatchSet, new: Fix, *, before: str | None = None, after: str | None = None) -> tuple[Fix, ...]:
    """The stack with new in it: in the place of a fix of the same id (a PR that moved), else
    before/after the named fix, else before our own fixes (a backport is what ours stand on)."""
    fixes = list(ps.fixes)
    if before is not None and after is not None:
        raise BadInput("say BEFORE or AFTER, not both", setting="before")
    for i, f in enumerate(fixes):
        if f.id == new.id:
            if before is None and after is None:
                fixes[i] = new
                return tuple(fixes)
            del fixes[i]
            break
    anchor = before if before is not None else after
    setting = "before" if before is not None else "after"
    if anchor == new.id:  # #31 item 8: it was "carries no fix", said of a fix the stack carries
        raise BadInput(f"fix {new.id} is the one being placed: it cannot go {setting} itself; name another fix of "
                       f"{ps.target} ({_ids([f for f in fixes if f.id != new.id])})", setting=setting,
                       hint=Hint.choose(setting))
    if anchor is not None:
        at = next((i for i, f in enumerate(fixes) if f.id == anchor), None)
        if at is None:
            raise NotFound(f"{ps.target} carries no fix {anchor!r} (it carries: {_ids(fixes)})", setting=setting)
        fixes.insert(at if before is not None else at + 1, new)
        return tuple(fixes)
    at = next((i for i, f in enumerate(fixes) if f.ours), len(fixes))
    fixes.insert(at, new)
    return tuple(fixes)

"""make export / check-export: write a branch back into its patch set, deterministically.

Exporting an unchanged branch leaves every patch file byte-identical: no commit ids
(--zero-commit), no blob ids (index lines are dropped; they churn whenever upstream touches
any other line of a file, and 3-way finds its base in history instead), no diffstat, no
signature. The computed waiver commit is not exported: it is recomputed at every apply.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import atomic, scratch
from ..errors import BadInput, Hint, NotFound
from ..git import Repo
from ..model import PatchSet
from ..upstream import base_of

_INDEX = re.compile(rb"^index [0-9a-f]+\.\.[0-9a-f]+( \d+)?\n", re.M)


@dataclass
class ExportResult:
    target: str
    branch: str
    written: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    checked_only: bool = False
    waiver_patch: str = ""  # the computed waiver edit, rendered as an ordinary patch (not part of the set)

    @property
    def up_to_date(self) -> bool:
        return not (self.changed or self.removed)

    @property
    def hints(self) -> list[Hint]:
        return [Hint.run("export")] if self.checked_only and not self.up_to_date else []


def render_patches(ps: PatchSet, repo: Repo, branch: str, waiver_out: Path | None = None) -> dict[str, bytes]:
    """The patch files the branch would export to: {file name: bytes}.

    The computed waiver commit, if the branch has one, is written to waiver_out instead.
    """
    _ref, base = base_of(repo, ps)
    if repo.rev_parse(branch) is None:
        raise NotFound(f"branch {branch} is not in {repo.path}")
    shas = repo.commits(f"{base}..{branch}")
    waives = ps.waivers.waives_file if ps.waivers else None
    computed = [s for s in shas if waives and repo.changed_paths(s) == [waives]]
    if computed and computed != shas[-len(computed):]:
        raise BadInput(f"{branch}: the waiver commit must come last (it is recomputed at apply); reorder the branch")
    keep = shas[: len(shas) - len(computed)]
    if computed and waiver_out is not None:
        with atomic.replace_dir(waiver_out) as fresh:
            repo.format_series(f"{computed[0]}~1..{computed[-1]}", fresh)
    if not keep:
        raise BadInput(f"{branch} has no commits beyond {base[:12]} to export")
    with scratch.folder("export") as tmp:
        files = repo.format_series(f"{base}..{keep[-1]}", Path(tmp))
        return {p.name: _INDEX.sub(b"", p.read_bytes()) for p in files}


def export(ps: PatchSet, repo: Repo, branch: str, check_only: bool = False,
           waiver_out: Path | None = None) -> ExportResult:
    new = render_patches(ps, repo, branch, None if check_only else waiver_out)
    old = {p.name: p.read_bytes() for p in ps.root.glob("*.patch")}
    result = ExportResult(ps.target, branch, sorted(new), checked_only=check_only)
    if waiver_out is not None and not check_only:
        result.waiver_patch = ", ".join(str(p) for p in sorted(waiver_out.glob("*.patch")))
    result.changed = sorted(n for n, data in new.items() if old.get(n) != data)
    result.removed = sorted(set(old) - set(new))
    if check_only or result.up_to_date:
        return result
    files: dict[Path, bytes | None] = {ps.root / name: None for name in result.removed}
    files.update({ps.root / name: new[name] for name in result.changed})
    if sorted(old) != sorted(new) or [p.name for p in ps.patches] != sorted(new):
        files[ps.root / "patchset.yaml"] = _series_block(ps, sorted(new), new).encode()
    atomic.write_all(files)  # all staged and synced first: a full disk changes none of them
    return result


def _series_block(ps: PatchSet, names: list[str], new: dict[str, bytes]) -> str:
    """patchset.yaml with only its series block rewritten; comments and the rest stay as they are."""
    meta = ps.root / "patchset.yaml"
    text = meta.read_text()
    flags = {p.name: p.tests_only for p in ps.patches}
    lines = ["series:\n"]
    for name in names:
        lines.append(f"  - file: {name}\n")
        tests_only = flags.get(name)
        if tests_only is None:  # a new patch: test-only when it only touches tests/
            data = new[name].decode("utf-8", "replace")
            paths = re.findall(r"^diff --git a/(\S+) b/", data, re.M)
            tests_only = bool(paths) and all(p.startswith("tests/") for p in paths)
        if tests_only:
            lines.append("    tests_only: true\n")
    block = re.compile(r"^series:\n(?:[ \t]+.*\n|[ \t]*-.*\n)*", re.M)
    if not block.search(text):
        raise BadInput(f"{meta}: no series block to update")
    return block.sub("".join(lines), text, count=1)


def without_index_lines(data: bytes) -> bytes:
    """A patch file's bytes as export writes them: no blob ids (see the module's docstring)."""
    return _INDEX.sub(b"", data)

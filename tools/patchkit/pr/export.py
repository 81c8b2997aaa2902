"""make export / check-export: write a branch back into its patch set, deterministically.

Exporting an unchanged branch leaves every patch file byte-identical: no commit ids
(--zero-commit), no blob ids (index lines are dropped; they churn whenever upstream touches
any other line of a file, and 3-way finds its base in history instead), no diffstat, no
signature. The computed waiver commit is not exported: it is recomputed at every apply.
The commit messages, DEP-3 trailers and all, are written as they are: a round trip is
byte-identical. A stack's patches are numbered over the whole stack (0001..000N); which fix
each belongs to is its fix's series: list in patchset.yaml (see assign()).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .. import atomic, provenance, scratch
from ..errors import BadInput, Hint, NotFound
from ..git import Repo
from ..model import PatchSet, is_test_path
from ..patchset import trailers
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


def render_patches(ps: PatchSet, repo: Repo, branch: str,
                   waiver_out: Path | None = None) -> tuple[dict[str, bytes], list[str]]:
    """The patch files the branch would export to ({file name: bytes}), and each exported
    commit's message, in order.

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
        rendered = {p.name: _INDEX.sub(b"", p.read_bytes()) for p in files}
    return rendered, [repo.commit_info(s).message for s in keep]


def export(ps: PatchSet, repo: Repo, branch: str, check_only: bool = False,
           waiver_out: Path | None = None) -> ExportResult:
    new, messages = render_patches(ps, repo, branch, None if check_only else waiver_out)
    series = assign(ps, branch, sorted(new), messages)
    old = {p.name: p.read_bytes() for p in ps.root.glob("*.patch")}
    result = ExportResult(ps.target, branch, sorted(new), checked_only=check_only)
    if waiver_out is not None and not check_only:
        result.waiver_patch = ", ".join(str(p) for p in sorted(waiver_out.glob("*.patch")))
    result.changed = sorted(n for n, data in new.items() if old.get(n) != data)
    result.removed = sorted(set(old) - set(new))
    moved = any([p.name for p in f.patches] != series[f.id] for f in ps.fixes)
    if check_only or result.up_to_date:
        return result
    files: dict[Path, bytes | None] = {ps.root / name: None for name in result.removed}
    files.update({ps.root / name: new[name] for name in result.changed})
    if moved:
        files[ps.root / "patchset.yaml"] = _series_blocks(ps, series, new).encode()
    atomic.write_all(files)  # all staged and synced first: a full disk changes none of them
    return result


def assign(ps: PatchSet, branch: str, names: list[str], messages: list[str]) -> dict[str, list[str]]:
    """Which fix each exported patch belongs to: {fix id: its files, in order}.

    One fix takes them all. A stack whose patch count is unchanged keeps each fix's count, in
    stack order; where counts changed, each commit's Origin trailer (DEP-3) names its fix."""
    if not ps.stacked:
        return {ps.fixes[0].id: list(names)}
    if len(names) == len(ps.patches):
        out, at = {}, 0
        for f in ps.fixes:
            out[f.id] = names[at:at + len(f.patches)]
            at += len(f.patches)
        return out
    owners = {}
    for f in ps.fixes:
        for origin in {p.trailer("Origin") for p in f.patches} | {dict(provenance.expected(f))["Origin"]}:
            if origin:
                owners.setdefault(_origin_key(origin), f)
    out = {f.id: [] for f in ps.fixes}
    order = [f.id for f in ps.fixes]
    last = 0
    for name, message in zip(names, messages):
        origin = next((v for k, v in reversed(trailers(message.partition("\n\n")[2])) if k.lower() == "origin"), None)
        said = f"{branch}: {name}"
        counts = f"the branch has {len(names)} commits, the stack {len(ps.patches)} patches"
        if origin is None:
            raise BadInput(f"{said} has no Origin trailer, and {counts}: which fix it belongs to is not known; "
                           f"add one (e.g. Origin: {dict(provenance.expected(ps.fixes[-1]))['Origin']})")
        fix = owners.get(_origin_key(origin))
        if fix is None:
            raise BadInput(f"{said}: Origin {origin[:120]!r} is no fix of the {ps.target} stack "
                           f"({', '.join(order)}); make backport adds a fix")
        if order.index(fix.id) < last:
            raise BadInput(f"{said} belongs to fix {fix.id}, but comes after fix {order[last]}'s commits; "
                           "keep each fix's commits together, in the stack's order")
        last = order.index(fix.id)
        out[fix.id].append(name)
    empty = [i for i, n in out.items() if not n]
    if empty:
        raise BadInput(f"{branch} has no commit of fix {', '.join(empty)} ({counts}); remove the fix from "
                       f"patches/{ps.target}/patchset.yaml or keep a commit of it")
    return out


def _origin_key(origin: str) -> str:
    """What an Origin names, whatever its kind word says ('vendor, <url>' -> '<url>')."""
    return origin.rsplit(",", 1)[-1].strip().rstrip("/").lower()


def _series_blocks(ps: PatchSet, series: dict[str, list[str]], new: dict[str, bytes]) -> str:
    """patchset.yaml with only each fix's series list rewritten (one-fix form: the top-level
    one; stack form: each entry's under fixes:); comments and the rest stay as they are."""
    meta = ps.root / "patchset.yaml"
    text = meta.read_text()
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    top = dict((k.value, v) for k, v in root.value)
    if "fixes" in top:
        entries = [dict((k.value, v) for k, v in e.value) for e in top["fixes"].value]
        nodes = [(str(e["id"].value), e["series"]) for e in entries]
    else:
        nodes = [(ps.fixes[0].id, top["series"])]
    flags = {p.name: p.tests_only for p in ps.patches}
    # From the end of the file back, so that each replacement leaves the earlier marks true.
    for fix_id, node in sorted(nodes, key=lambda n: -n[1].start_mark.index):
        names = series[fix_id]
        if node.flow_style:
            text = text[:node.start_mark.index] + "[" + ", ".join(names) + "]" + text[node.end_mark.index:]
            continue
        col = node.start_mark.column
        lines = []
        for name in names:
            lines.append(f"{' ' * col}- file: {name}\n")
            if flags.get(name, _tests_only(new.get(name, b""))):
                lines.append(f"{' ' * (col + 2)}tests_only: true\n")
        start = node.start_mark.index - col
        end = _last_item_end(text, node)
        text = text[:start] + "".join(lines) + text[end:]
    return text


def _tests_only(data: bytes) -> bool:
    """A new patch: test-only when every file it changes is a test file (model.is_test_path)."""
    paths = re.findall(r"^diff --git a/(\S+) b/", data.decode("utf-8", "replace"), re.M)
    return bool(paths) and all(is_test_path(p) for p in paths)


def _last_item_end(text: str, node) -> int:
    """Where a block sequence's text ends: after its last line that is not blank or a comment
    (the parser's end mark runs on to the next key, over comments that belong to it)."""
    end = node.end_mark.index
    lines = text[node.start_mark.index:end].splitlines(keepends=True)
    while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        end -= len(lines.pop())
    return end


def without_index_lines(data: bytes) -> bytes:
    """A patch file's bytes as export writes them: no blob ids (see the module's docstring)."""
    return _INDEX.sub(b"", data)

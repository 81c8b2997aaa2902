"""make export / check-export: write a branch back into its patch set, by the commits' trailers.

Each commit of the branch is filed under the fix its Origin trailer (DEP-3) names, never by
its place (#31 item 2: reordered commits swapped two fixes' patches); a commit that names no
fix of the stack is never folded into one: export names it and the make new-fix line that
makes it a fix. Fixes keep their commits together; their order on the branch is the stack's.
The computed waiver commit is not exported: it is recomputed at every apply.

An unchanged branch exports byte-identical files: a patch whose change is what it was keeps
its bytes (edit/patchfiles.py: no churn from another checkout's blob ids); a changed patch is
written with the index lines of this checkout and today's Last-Update, and the set records
the commit the branch was built on as upstream.base (what THREEWAY merges from, where radar
starts). The new set is written through edit/write.py: all or nothing, never what make
check would refuse.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import atomic, patchset, provenance, scratch, series
from ..edit import metadata, patchfiles
from ..edit.write import SetEdit
from ..errors import Ask, BadInput, Hint, NotFound
from ..git import Repo, Sha, short_ref
from ..model import Patch, PatchSet
from ..upstream import base_of

_BUG_IN_SUBJECT = re.compile(r"^\[#(\d+)\]")


@dataclass
class ExportResult:
    target: str
    branch: str
    written: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    checked_only: bool = False
    waiver_patch: str = ""  # the computed waiver edit, rendered as an ordinary patch (not part of the set)
    base: str = ""  # the commit the branch was built on, recorded as upstream.base (a changed set)
    order: list[str] = field(default_factory=list)  # the stack's fix ids, as the branch has them

    @property
    def up_to_date(self) -> bool:
        return not (self.changed or self.removed)

    @property
    def hints(self) -> list[Hint]:
        return [Hint.run("export")] if self.checked_only and not self.up_to_date else []


def export(ps: PatchSet, repo: Repo, branch: str, check_only: bool = False,
           waiver_out: Path | None = None, today: str | None = None) -> ExportResult:
    """patches/<target> from the branch's commits (check_only: what would change, nothing written)."""
    day = today or datetime.date.today().isoformat()
    edit = SetEdit(ps.root.parent.parent, ps.target, f"export {ps.target}")
    ref, ref_sha = base_of(repo, ps)
    if repo.rev_parse(branch) is None:
        raise NotFound(f"branch {branch} is not in {repo.path}")
    base = repo.merge_base(ref_sha, branch)
    if base is None:
        raise BadInput(f"{branch} shares no history with {short_ref(ref)} ({ref_sha[:12]})")
    shas = repo.commits(f"{base}..{branch}")
    merges = [s for s in shas if len(repo.commit_info(s).parents) > 1]
    if merges:
        raise BadInput(f"{branch} has a merge commit ({merges[0][:12]}); a set is a series of single-parent commits")
    waives = ps.waivers.waives_file if ps.waivers else None
    computed = [s for s in shas if waives and repo.changed_paths(s) == [waives]]
    keep = [s for s in shas if s not in computed]
    result = ExportResult(ps.target, branch, checked_only=check_only)
    with scratch.folder("export") as tmp:
        work = Path(tmp)
        if computed and waiver_out is not None and not check_only:
            with atomic.replace_dir(waiver_out) as fresh:
                for c in computed:
                    repo.format_series(f"{c}~1..{c}", fresh)
            result.waiver_patch = ", ".join(str(p) for p in sorted(waiver_out.glob("*.patch")))
        if not keep:
            raise BadInput(f"{branch} has no commits beyond {base[:12]} to export")
        chain = keep if keep == shas[:len(keep)] else _without_waiver(repo, base, shas, keep, work)
        first = patchfiles.formatted(repo, chain, work / "first")
        order, groups = assign(ps, branch, keep, first)
        files = patchfiles.render(repo, chain, ps.patches, day, work, first)
        meta = metadata.Meta((ps.root / patchset.METADATA).read_text(), f"patches/{ps.target}/{patchset.METADATA}")
        for fix_id in order:
            meta.set_series(fix_id, [files[i].name for i in groups[fix_id]])
        meta.order(order)
        recorded = repo.present_commit(ps.upstream.base) if ps.upstream.base else ref_sha
        if any(f.changed for f in files) and recorded != base:
            meta.set_upstream("base", base)
            result.base = base
        staged = edit.stage(work, files, meta.text())
        done = edit.changes(staged)
        result.written = sorted(f.name for f in files)
        result.changed, result.removed, result.order = done.written, done.removed, order
        if check_only or result.up_to_date:
            return result
        edit.verify(staged, repo, base, f"the commit {branch} was built on ({base[:12]})")
        edit.commit(staged)
    return result


def _without_waiver(repo: Repo, base: Sha, shas: list[Sha], keep: list[Sha], work: Path) -> list[Sha]:
    """The kept commits made again on base without the computed waiver commits between them
    (the one series path: their own diffs applied in order)."""
    every = patchfiles.formatted(repo, shas, work / "all")
    wanted = [p for s, p in zip(shas, every) if s in keep]
    res = series.apply_series(repo, base, wanted, committer_date=series.THROWAWAY_DATE)
    res.raise_on_conflict(" without the waiver commit before it")
    return [o.commit for o in res.outcomes]


def assign(ps: PatchSet, branch: str, shas: list[Sha], patches: list[Patch]) -> tuple[list[str], dict[str, list[int]]]:
    """Which fix each commit belongs to, by its Origin trailer: (the fixes in the branch's
    order, {fix id: the indexes of its commits}); patchfiles.owners says whose a commit is. BadInput when a
    commit belongs to no fix (the make new-fix line that makes it one), when a fix's commits
    are not together, or when a fix of the stack has none."""
    order: list[str] = []
    groups: dict[str, list[int]] = {}
    unknown: list[int] = []
    for i, p in enumerate(patches):
        fixes = patchfiles.owners(ps, p)
        if not fixes:
            unknown.append(i)
            continue
        now = order[-1] if order else None
        fix = next((f for f in fixes if f.id == now), None) or next((f for f in fixes if f.id not in groups), fixes[0])
        if fix.id in groups and fix.id != now:
            raise BadInput(f"{branch}: {shas[i][:12]} ({p.subject[:60]!r}) belongs to fix {fix.id}, but comes after "
                           f"fix {now}'s commits; keep each fix's commits together (the stack's order is the branch's)")
        if fix.id not in groups:
            order.append(fix.id)
            groups[fix.id] = []
        groups[fix.id].append(i)
    if unknown:
        raise _unknown(ps, branch, shas, patches, unknown)
    empty = [f.id for f in ps.fixes if f.id not in groups]
    if empty:
        raise BadInput(f"{branch} has no commit of fix {', '.join(empty)}; export never drops a fix",
                       hint=Hint("drop", (("fix_id", empty[0]),)))
    return order, groups


def _unknown(ps: PatchSet, branch: str, shas: list[Sha], patches: list[Patch], unknown: list[int]) -> BadInput:
    """The commits that belong to no fix, named, and the make new-fix line that makes them one
    (#33 item 1: export folded such a commit into our fix, without trailers)."""
    said = ", ".join(f"{shas[i][:12]} {patches[i].subject[:60]!r}" for i in unknown)
    bug = next((m[1] for i in unknown if (m := _BUG_IN_SUBJECT.match(patches[i].subject))), None)
    taken = {f.id: f for f in ps.fixes}
    named = (f"; its subject names fix {bug}, whose patches say {provenance.expected(taken[bug])[0][0]}: "
             f"{provenance.expected(taken[bug])[0][1]}" if bug in taken else "")
    settings: dict[str, object] = {"fix_id": bug if bug and bug not in taken else Ask("its bug's number")}
    if unknown != list(range(len(patches) - len(unknown), len(patches))):  # not the last ones: name them
        settings["commit"] = " ".join(shas[i][:12] for i in unknown)
    return BadInput(f"{branch}: {len(unknown)} commit(s) belong to no fix of the {ps.target} stack (no Origin trailer "
                    f"naming one): {said}; export never folds a commit into a fix: make it a fix of its own, or "
                    f"give it the Origin trailer of the fix it belongs to{named}",
                    hint=Hint("new-fix", tuple(settings.items())))

"""make drop and make move: a fix leaves the stack, or goes to another place in it, all or
nothing (#33 item 2: there was no command; the way out was git checkout -- patches/).

The new stack must apply on the set's ref, fetched first (fresh.py; FETCH=0 does not) (3-way where a patch drifted, as make apply
THREEWAY=1 would); else nothing changes and the error names the fix, the patch, the file and
the hunk. Its files are numbered again over the whole stack (0001..000N); a patch whose change
is unchanged keeps its bytes (edit/patchfiles.py). A drop changes what every other fix was
measured on (its tree without it, and the stack's tree, both had the dropped fix): their
source-mode expectations are measured again, and those of modes this machine cannot measure
are marked stale and said (edit/remeasure.py). A move changes no fix's trees but their order,
so nothing is measured again. Written by edit/write.py, the one writer of a set.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import patchset, scratch, stack
from ..delta.run import Runner, SourceRunner
from ..errors import BadInput, NotFound
from ..git import Repo, Sha, short_ref
from ..model import PatchSet
from .. import fresh, upstream
from . import metadata, onref, patchfiles, text
from .remeasure import Remeasured, remeasure
from .write import SetEdit


@dataclass
class ReorderResult:
    target: str
    verb: str  # drop, move
    fix: str
    ref: str
    ref_commit: str
    placed: str = ""  # move: where it went
    order: list[str] = field(default_factory=list)  # the fix ids of the new stack
    stack: list[tuple[str, str, str]] = field(default_factory=list)  # (patch file, fix id, how it applied)
    remeasured: list[Remeasured] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    view: fresh.View | None = None  # the upstream commit judged, and how fresh that view is


def drop(ps: PatchSet, *, root: Path, src: Path, url: str | None = None, fix_id: str, today: str | None = None,
         runner: Runner | None = None, fetch: bool = True) -> ReorderResult:
    """The stack without fix_id; see the module."""
    fix = _fix(ps, fix_id)
    if len(ps.fixes) == 1:
        raise BadInput(f"{ps.target} carries only fix {fix_id}: a set carries at least one fix", setting="fix_id")
    new = replace(ps, fixes=tuple(f for f in ps.fixes if f.id != fix.id))
    return _run(ps, new, root, src, url, "drop", fix_id, "", today, runner, fetch)


def move(ps: PatchSet, *, root: Path, src: Path, url: str | None = None, fix_id: str, before: str | None = None,
         after: str | None = None, today: str | None = None, fetch: bool = True) -> ReorderResult:
    """The stack with fix_id before (or after) another fix; see the module."""
    fix = _fix(ps, fix_id)
    if (before is None) == (after is None):
        raise BadInput("say where: BEFORE=<a fix> or AFTER=<a fix>, one of them", setting="before")
    anchor = before if before is not None else after
    if anchor == fix_id:
        others = ", ".join(f.id for f in ps.fixes if f.id != fix_id)
        raise BadInput(f"fix {fix_id} cannot go {'before' if before else 'after'} itself (the others: {others})",
                       setting="before" if before is not None else "after")
    new = replace(ps, fixes=stack.insert(ps, fix, before=before, after=after))
    placed = f"{'before' if before else 'after'} {anchor}"
    return _run(ps, new, root, src, url, "move", fix_id, placed, today, None, fetch)


def _fix(ps: PatchSet, fix_id: str):
    try:
        return ps.fix(fix_id)
    except KeyError:
        raise NotFound(f"{ps.target} carries no fix {fix_id!r} (it carries: {', '.join(f.id for f in ps.fixes)})",
                       setting="fix_id") from None


def _run(ps: PatchSet, new: PatchSet, root: Path, src: Path, url: str | None, verb: str, fix_id: str, placed: str,
         today: str | None, runner: Runner | None, fetch: bool) -> ReorderResult:
    day = today or datetime.date.today().isoformat()
    edit = SetEdit(root, ps.target, f"{verb} {ps.target}")
    with upstream.held(ps, src, url, f"{verb} {ps.target}") as (repo, _cloned):
        return _restack(ps, new, repo, edit, verb, fix_id, placed, day, runner,
                        fresh.view(repo, ps, fetch=fetch, url=url))


def _restack(ps: PatchSet, new: PatchSet, repo: Repo, edit: SetEdit, verb: str, fix_id: str, placed: str, day: str,
             runner: Runner | None, seen: fresh.View) -> ReorderResult:
    ref, target = seen.ref, Sha(seen.commit)
    result = ReorderResult(ps.target, verb, fix_id, ref, target, placed, [f.id for f in new.fixes], view=seen)
    if result.order == [f.id for f in ps.fixes]:
        return result  # a move to where it is: nothing to do
    with scratch.folder("edit") as tmp:
        work = Path(tmp)
        applied = onref.apply(repo, target, new, onref.bases(ps))
        onref.refuse(repo, new, applied, ref, target, f"the stack {'without' if verb == 'drop' else 'with'} fix {fix_id}"
                     + (f" {placed}" if placed else ""))
        files = patchfiles.render(repo, [o.commit for o in applied.outcomes], ps.patches, day, work / "stack")
        owner = {p.name: f.id for f in new.fixes for p in f.patches}
        result.stack = [(f.name, owner[o.patch.name], o.status) for f, o in zip(files, applied.outcomes)]
        meta = metadata.Meta(edit.meta(), f"patches/{ps.target}/{patchset.METADATA}")
        if verb == "drop":
            meta.remove(fix_id)
        for f in new.fixes:
            meta.set_series(f.id, [n for n, fid, _s in result.stack if fid == f.id])
        meta.order(result.order)
        staged = edit.stage(work, files, meta.text())
        if verb == "drop":
            result.remeasured = remeasure(staged, meta, repo, target, ref, runner or SourceRunner(),
                                          f"on a stack where fix {fix_id} was still carried (dropped {day})", result.order)
            staged = edit.stage(work, files, meta.text())
        edit.verify(staged, repo, target, f"{short_ref(ref)} ({target[:12]})")
        done = edit.commit(staged)
        result.written, result.removed = done.written, done.removed
    return result


def describe(r: ReorderResult) -> str:
    """The result as the user reads it (the CLI prints it; --json has every field)."""
    if not r.stack:
        return f"{r.target}: fix {r.fix} is already {r.placed}; nothing written"
    head = (f"{r.target}: fix {r.fix} dropped" if r.verb == "drop" else f"{r.target}: fix {r.fix} moved {r.placed}")
    lines = [f"{head}; the stack is now {', '.join(r.order)}, on {short_ref(r.ref)} ({r.ref_commit[:12]})",
             *text.view_line(r.view), text.stack_table(r.stack)]
    if r.verb == "drop" and r.remeasured:
        lines.append(f"measured on a stack with fix {r.fix}, so measured again:")
        lines += [f"  {m.one_line()}" for m in r.remeasured]
        lines += [f"    {t}: {text.counts(a.get('unpatched', {}))} -> {text.counts(a.get('patched', {}))} was declared; "
                  f"now {text.counts(b.get('unpatched', {}))} -> {text.counts(b.get('patched', {}))}"
                  for m in r.remeasured for t, (a, b) in m.changed.items()]
    lines.append(text.written_line(r.target, r.written, r.removed, "unchanged"))
    return "\n".join(lines)

"""make new-set: a set for another upstream ref, started from an existing one, all or nothing
(#33 item 6: a new release meant copying a folder and editing YAML by hand).

Each fix of the set FROM is carried across, but the ones the new ref already has: those make
radar retires over FROM's ref .. the new ref (its patches apply in reverse there, or its bug is
fixed upstream), recorded under `retired:` with the upstream commit radar names (DEP-3
Applied-Upstream). The rest must apply on the new ref (3-way where a patch drifted, as make
apply THREEWAY=1 merges); the fixes that conflict are named, patch, file and hunk, and nothing
is written. Their expectations are measured again on the new ref in source mode (the modes
this machine cannot measure are marked stale, edit/remeasure.py). The new folder (and its
waiver intent, FROM's) is written by edit/write.py, the one writer of a set.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import fresh, patchset, scratch, series, stack, upstream
from ..backport.change import web_url
from ..delta.run import Runner, SourceRunner
from ..errors import BadInput, Conflict, Hint, UserError
from ..git import Repo, Sha, short_ref
from ..model import PatchSet, Upstream
from ..radar import command as radar_cmd
from . import metadata, onref, patchfiles, text
from .remeasure import Remeasured, remeasure
from .write import SetEdit

_RC = re.compile(r"^v?\d+(?:\.\d+)*(rc\d+)$")


@dataclass
class NewSetResult:
    target: str
    source: str  # the set it was started from
    ref: str
    ref_commit: str
    carried: list[str] = field(default_factory=list)  # fix ids, in stack order
    retired: list[dict] = field(default_factory=list)  # {id, title, applied_upstream, how}
    stack: list[tuple[str, str, str]] = field(default_factory=list)  # (patch file, fix id, how it applied)
    remeasured: list[Remeasured] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    view: fresh.View | None = None  # the upstream commit judged, and how fresh that view is

    @property
    def hints(self) -> list[Hint]:
        return [Hint.run("delta", target=self.target, fix_id=False)]


def default_name(ref: str) -> str:
    """The set's name for a ref: rc26 for v1.3.0rc26, the ref's last part otherwise."""
    last = ref.rstrip("/").rsplit("/", 1)[-1]
    m = _RC.match(last)
    return m[1] if m else last


def new_set(source: PatchSet, *, root: Path, ref: str, name: str | None = None, src: Path | None = None,
            url: str | None = None, today: str | None = None, runner: Runner | None = None,
            fetch: bool = True) -> NewSetResult:
    """Start patches/<name> for ref from the set source; see the module."""
    target = name or default_name(ref)
    if not patchset.TARGET_NAME.match(target) or len(target) > 100:
        raise BadInput(f"{target[:100]!r} is not a set name: letters, digits, '.', '_' or '-'", setting="name",
                       hint=Hint.choose("name"))
    if (root / "patches" / target).exists():
        raise BadInput(f"patches/{target} exists already; choose another NAME (or drop that set first)", setting="name",
                       hint=Hint.choose("name"))
    if ref.startswith("-") or not ref.strip():
        raise BadInput(f"{ref[:100]!r} is not a ref", setting="ref")
    day = today or datetime.date.today().isoformat()
    new = replace(source, target=target, root=root / "patches" / target, branch=f"overlay/{target}",
                  upstream=Upstream(source.upstream.url, ref, ""))
    edit = SetEdit(root, target, f"new-set {target}")
    with upstream.held(new, src or root / "build" / f"trtllm-{target}", url, f"new-set {target}") as (repo, _cloned):
        return _new_set(source, new, repo, edit, day, runner, fresh.view(repo, new, fetch=fetch, url=url))


def _new_set(source: PatchSet, new: PatchSet, repo: Repo, edit: SetEdit, day: str,
             runner: Runner | None, seen: fresh.View) -> NewSetResult:
    ref, target = seen.ref, Sha(seen.commit)
    result = NewSetResult(new.target, source.target, ref, target, view=seen)
    retired = _retired(source, repo, target, result)
    keep = tuple(f for f in source.fixes if f.id not in retired)
    if not keep:
        raise Conflict(f"{short_ref(ref)} ({target[:12]}) already has every fix of {source.target} "
                       f"({', '.join(retired)}): no set to start", hint=Hint.radar(source.target))
    new = replace(new, fixes=keep)
    result.carried = [f.id for f in keep]
    result.notes.append(f"patches/{new.target}/{patchset.METADATA} keeps {source.target}'s comments and verified_on "
                        f"as they were: read them over for {short_ref(ref)}")
    with scratch.folder("edit") as tmp:
        work = Path(tmp)
        applied = onref.apply(repo, target, new, onref.bases(source), stop_on_conflict=False)
        _refuse(repo, new, applied, ref, target)
        files = patchfiles.render(repo, [o.commit for o in applied.outcomes], source.patches, day, work / "stack")
        owner = {p.name: f.id for f in new.fixes for p in f.patches}
        result.stack = [(f.name, owner[o.patch.name], o.status) for f, o in zip(files, applied.outcomes)]
        meta = _meta(source, new, ref, target, result)
        for f in new.fixes:
            meta.set_series(f.id, [n for n, fid, _s in result.stack if fid == f.id])
        waivers = edit.waivers.with_name(f"{source.target}.yaml")
        intent = waivers.read_bytes() if waivers.is_file() else None
        staged = edit.stage(work, files, meta.text(), waivers=intent)
        result.remeasured = remeasure(staged, meta, repo, target, ref, runner or SourceRunner(),
                                      f"on {source.target}'s stack, on {source.upstream.ref}", [f.id for f in keep])
        staged = edit.stage(work, files, meta.text(), waivers=intent)
        edit.verify(staged, repo, target, f"{short_ref(ref)} ({target[:12]})")
        result.written = edit.commit(staged, waivers=intent).written
    return result


def _retired(source: PatchSet, repo: Repo, target: Sha, result: NewSetResult) -> dict[str, dict]:
    """The fixes of source the new ref has, as make radar finds them over source's recorded base
    .. the new ref: {fix id: its retired: entry}."""
    try:
        found = radar_cmd.radar(source, repo, until=target)
    except UserError as exc:  # no history between the two refs here: content decides, with no commit named
        result.notes.append(f"radar could not look from {source.upstream.recorded_base} to {result.ref}: "
                            f"{exc.message}; a fix whose patches all apply in reverse there is left out")
        return _by_content(source, repo, target, result)
    web = web_url(source.upstream.url)
    out = {}
    for f in found.fixes:
        if f.action != "retire":
            continue
        fix = source.fix(f.id)
        at = f"{web}/commit/{f.upstream_at}" if f.upstream_at else f"{short_ref(result.ref)} ({f.verdict})"
        out[f.id] = {"id": f.id, "title": fix.title, "applied_upstream": at}
        result.retired.append(dict(out[f.id], how=f.verdict))
    return out


def _by_content(source: PatchSet, repo: Repo, target: Sha, result: NewSetResult) -> dict[str, dict]:
    probe = series.apply_series(repo, target, source.patches, stop_on_conflict=False, record=False)
    out = {}
    for fix in source.fixes:
        mine = [o for o in probe.outcomes if stack.owner(source, o.patch).id == fix.id]
        if mine and all(o.status == series.UPSTREAM for o in mine):
            out[fix.id] = {"id": fix.id, "title": fix.title,
                           "applied_upstream": f"{short_ref(result.ref)} (each patch applies in reverse there)"}
            result.retired.append(dict(out[fix.id], how="each patch applies in reverse"))
    return out


def _refuse(repo: Repo, new: PatchSet, applied: series.SeriesResult, ref: str, target: Sha) -> None:
    """Conflict naming every fix and patch that does not apply on the new ref even 3-way."""
    bad = [o for o in applied.outcomes if o.status == series.CONFLICT]
    if not bad:
        onref.refuse(repo, new, applied, ref, target, f"the {new.target} stack")
        return
    said = "; ".join(f"fix {stack.owner(new, o.patch).id}: {o.patch.name}: {o.drift.one_line()}" for o in bad)
    raise Conflict(f"{len(bad)} patch(es) of the new stack conflict on {short_ref(ref)} ({target[:12]}) even 3-way: "
                   f"{said}; nothing written", details=series.drift_report(applied.outcomes),
                   hint=Hint.radar(new.target))


def _meta(source: PatchSet, new: PatchSet, ref: str, target: Sha, result: NewSetResult) -> metadata.Meta:
    """The new set's patchset.yaml: the source's, with the new ref, branch and image, without the
    retired fixes (listed under retired:)."""
    meta = metadata.Meta((source.root / patchset.METADATA).read_text(), f"patches/{source.target}/{patchset.METADATA}")
    meta.set_upstream("ref", new.upstream.ref)
    if ref.startswith("refs/tags/"):
        meta.data["upstream"].pop("base", None)  # a tag is its own base
    else:
        meta.set_upstream("base", target)
    if "branch" in meta.data or source.branch != f"overlay/{source.target}":
        meta.set("branch", new.branch)
    old, now = source.upstream.ref.lstrip("v"), new.upstream.ref.rsplit("/", 1)[-1].lstrip("v")
    image = str(meta.data["container"]["base"])
    if old and old in image:
        meta.data["container"]["base"] = image.replace(old, now)
    else:
        result.notes.append(f"container.base kept as {image}: it does not name {old}; set the image of {new.upstream.ref}")
    gone = [r["id"] for r in result.retired]
    if gone:
        for fix_id in gone:
            meta.remove(fix_id)
        meta.set("retired", [{k: v for k, v in r.items() if k != "how"} for r in result.retired])
    return meta


def describe(r: NewSetResult) -> str:
    """The result as the user reads it (the CLI prints it; --json has every field)."""
    lines = [f"{r.target}: a new set on {short_ref(r.ref)} ({r.ref_commit[:12]}) from {r.source}: carries "
             f"{', '.join(r.carried)}" + (f"; leaves out {', '.join(x['id'] for x in r.retired)}" if r.retired else "")]
    lines += [f"  {x['id']} is in {short_ref(r.ref)} already: {x['applied_upstream']}" for x in r.retired]
    lines += [*text.view_line(r.view), text.stack_table(r.stack)]
    three = [n for n, _f, s in r.stack if s == series.THREEWAY]
    if three:
        lines.append(f"merged 3-way (written anew, with index lines): {', '.join(three)}")
    if r.remeasured:
        lines.append(f"measured on {r.source}'s ref, so measured again on {short_ref(r.ref)}:")
        lines += [f"  {m.one_line()}" for m in r.remeasured]
    lines += [f"note: {n}" for n in r.notes]
    lines.append(text.written_line(r.target, r.written, [], "unchanged"))
    return "\n".join(lines)

"""make backport: an upstream pull request or commit becomes a fix of kind backport in
patches/<target>/, all or nothing.

The change is found upstream (change.py) and written as patches with DEP-3 trailers
(patches.py); the new stack (before our own fixes, unless BEFORE/AFTER say where) must apply
on the target's ref, 3-way with each change's own parent as merge base where needed; its
patch files are then what make export writes from that stack (edit/patchfiles.py: one
numbering over the whole stack, an unchanged patch's bytes kept); the fix's tests are the
test files the change adds or changes, and their expectations are measured on that stack as
make delta grades a fix (delta/measure.py). The new set is written by edit/write.py, the one
writer of a set: staged, loaded and refused as make check would refuse it, then swapped in
at the end, only if nobody changed patches/<target>/ meanwhile. The user's checkout is never
changed: commits are fetched into no ref, trees are built in temporary indexes.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import fresh, patchset, scratch, series, stack
from ..delta import measure as delta_measure
from ..delta.run import Runner, SourceRunner
from ..edit import metadata, onref, patchfiles, text as edit_text
from ..edit.write import SetEdit
from ..errors import BadInput, Conflict, Hint
from ..git import Repo, Sha, short_ref
from ..model import BACKPORT, Fix, PatchSet, Status, Tests, is_test_path
from .. import upstream
from ..upstream import refuse_symlinked_paths
from . import change as changes, patches as patch_files

_BUG = re.compile(r"^\[(?:#(\d+)|(https?://\S+?))\]")  # upstream's PR titles: [#<issue>][fix] ..., [https://nvbugs/<n>][fix] ...


@dataclass
class BackportResult:
    target: str
    fix: str
    kind: str  # merged, open, commit
    origin: str
    ref: str
    ref_commit: str
    commits: list[str]
    base: str
    already: str = ""  # set when the ref has the change: 'at <commit>', or 'by content: ...' (nothing is written)
    title: str = ""
    replaced: bool = False  # a backport of the same id was in the stack
    placed: str = ""  # where it went, as said to the user
    stack: list[tuple[str, str, str]] = field(default_factory=list)  # (patch file, fix id, how it applied)
    expected: dict = field(default_factory=dict)  # the fix's expectations, source mode
    tests_ran: str = ""  # where its tests ran: fenced (delta.run.SourceRunner.said); '' when they did not
    unfenced: str = ""  # why they did not: no fence here
    written: list[str] = field(default_factory=list)  # files of patches/<target>/, written or changed
    removed: list[str] = field(default_factory=list)
    range_diff: str = ""  # a replaced fix: git range-diff of its old patches against the new
    view: fresh.View | None = None  # the upstream commit judged, and how fresh that view is
    wheel: list[str] = field(default_factory=list)  # what the wheel is built from that the fix changes (cpp/, ...)

    @property
    def changed(self) -> bool:
        return bool(self.written or self.removed)

    @property
    def hints(self) -> list[Hint]:
        """Tests make backport would not run unfenced: make delta measures them, when asked; and
        last, a change that is compiled: the set now needs a wheel build (#32 item 4)."""
        out = []
        if self.unfenced:
            out.append(Hint("delta", (("target", self.target), ("mode", "source"), ("fix_id", self.fix)),
                            "measures its tests: without a fence they run with your network and home"))
        if self.wheel and self.changed:
            out.append(Hint("wheel", (("target", self.target),),
                            f"{self.target} now needs a wheel build: fix {self.fix} changes {', '.join(self.wheel)}, "
                            "which is compiled into the wheel; make container builds it when missing"))
        return out


def backport(ps: PatchSet, *, root: Path, src: Path, url: str | None = None, pr: str | None = None,
             commit: str | None = None, before: str | None = None, after: str | None = None,
             today: str | None = None, runner: Runner | None = None, fetch: bool = True) -> BackportResult:
    """Carry pull request pr (or commit) as a backport fix of ps's stack; see the module. The
    set's ref is fetched first (fresh.view), unless fetch is False."""
    if (pr is None) == (commit is None):
        raise BadInput("name the change: a pull request (PR=<number>) or a commit (COMMIT=<id>), one of them",
                       setting="pr", hint=Hint.choose("pr"))
    if before is not None and after is not None:
        raise BadInput("say BEFORE or AFTER, not both", setting="before")
    day = today or datetime.date.today().isoformat()
    edit = SetEdit(root, ps.target, f"backport {ps.target}")  # the set as the run starts from it
    with upstream.held(ps, src, url, f"backport {ps.target}") as (repo, _cloned):
        return _backport(ps, repo, edit, pr, commit, before, after, day, runner,
                         fresh.view(repo, ps, fetch=fetch, url=url))


def _backport(ps: PatchSet, repo: Repo, edit: SetEdit, pr: str | None, commit: str | None,
              before: str | None, after: str | None, today: str, runner: Runner | None,
              seen: fresh.View) -> BackportResult:
    ref, target = seen.ref, Sha(seen.commit)
    web = changes.web_url(ps.upstream.url)
    ch = changes.find_pr(repo, pr, web) if pr is not None else changes.find_commit(repo, commit or "", web)
    old = next((f for f in ps.fixes if f.id == ch.fix_id), None)
    if old is not None and old.ours:
        raise BadInput(f"{ps.target}: fix {ch.fix_id} is one of our own fixes; a backport cannot replace it",
                       setting="pr" if pr is not None else "commit")
    subject = repo.commit_info(ch.commits[0]).subject
    result = BackportResult(ps.target, ch.fix_id, ch.kind, ch.origin, ref, target, list(ch.commits), ch.base,
                            title=re.sub(r"\s*\(#\d+\)\s*$", "", subject) if ch.kind == changes.MERGED else subject,
                            replaced=old is not None, view=seen)
    landed = ch.upstream_commit or ch.head
    if landed and changes.contains(repo, target, landed):
        result.already = f"at {landed[:12]}"
        return result
    bug = _bug(subject, web)
    with scratch.folder("backport") as work:
        made = patch_files.render(repo, ch, patch_files.trailers(ch, bug, today), work / "change")
        tests = tuple(dict.fromkeys(fc.path for p in made for fc in p.files if fc.path and is_test_path(fc.path)))
        fix = Fix(ch.fix_id, BACKPORT, result.title, bug or ch.origin, ch.origin, tuple(made),
                  Status("not-needed", ch.commit_url or None), Tests(tests), {},
                  upstream_commits=ch.commits, upstream_base=ch.base)
        new = replace(ps, fixes=stack.insert(ps, fix, before=before, after=after))
        result.wheel = [f for _p, files in stack.wheel_files(new, fix) for f in files]
        result.placed = _placed(new, fix)
        refuse_symlinked_paths(repo, target, new)
        bases = onref.bases(new)
        applied = onref.apply(repo, target, new, bases)
        mine = [o for o in applied.outcomes if stack.owner(new, o.patch).id == fix.id]
        if len(mine) == len(fix.patches) and all(o.status == series.UPSTREAM for o in mine):
            result.already = "by content: each of its patches applies in reverse"
            return result
        _refuse(repo, new, applied, ref, target, ch, mine)
        files = patchfiles.render(repo, [o.commit for o in applied.outcomes], ps.patches, today, work / "stack")
        result.stack = [(f.name, stack.owner(new, o.patch).id, o.status) for f, o in zip(files, applied.outcomes)]
        series_of = {f.id: [n for n, fid, _s in result.stack if fid == f.id] for f in new.fixes}
        meta = metadata.Meta(edit.meta(), f"patches/{ps.target}/{patchset.METADATA}")
        meta.to_stack(ps.fixes[0].id)
        meta.put(_entry(fix, ch))
        for fix_id, names in series_of.items():
            meta.set_series(fix_id, names)
        meta.order([f.id for f in new.fixes])
        staged = edit.stage(work, files, meta.text())
        runner = runner or SourceRunner()  # the PR's tests: fenced, or not run at all (delta_measure.expectations)
        result.expected = delta_measure.expectations(staged, staged.fix(fix.id), repo=repo, base=target, ref=ref,
                                                     runner=runner)
        if result.expected:
            result.unfenced = getattr(runner, "unfenced", "")
            result.tests_ran = "" if result.unfenced else getattr(runner, "said", "")
        meta.put({"id": fix.id, "expected": {"source": result.expected} if result.expected else {}})
        staged = edit.stage(work, files, meta.text())
        if old is not None:
            result.range_diff = _range_diff(repo, target, ps, old, applied, new, fix, bases)
        edit.verify(staged, repo, target, f"{short_ref(ref)} ({target[:12]})")
        done = edit.commit(staged)
        result.written, result.removed = done.written, done.removed
    return result


def _bug(subject: str, web: str) -> str:
    """The bug an upstream title names ('[#18609][fix] ...'), as a URL; '' when it names none."""
    m = _BUG.match(subject)
    if not m:
        return ""
    return f"{web}/issues/{m[1]}" if m[1] else m[2]


def _placed(ps: PatchSet, fix: Fix) -> str:
    ids = [f.id for f in ps.fixes]
    at = ids.index(fix.id)
    if len(ids) == 1:
        return "the only fix"
    return f"before {ids[at + 1]}" if at + 1 < len(ids) else f"after {ids[at - 1]}"


def _refuse(repo: Repo, ps: PatchSet, applied: series.SeriesResult, ref: str, target: Sha, ch: changes.Change,
            mine: list[series.Outcome]) -> None:
    """Conflict unless every patch of the new stack applied (cleanly or 3-way): the error
    names the fix, the patch, the file and the hunk, as apply does; nothing is written. mine:
    the new fix's outcomes, a patch per commit of the change ch."""
    if any(o.status == series.UPSTREAM for o in mine):  # some of the change is in the ref, not all
        upstream = [c for c, o in zip(ch.commits, mine) if o.status == series.UPSTREAM]
        rest = [c for c, o in zip(ch.commits, mine) if o.status != series.UPSTREAM]
        whose = f"pull request {ch.number}'s commit" if ch.number else "commit"
        raise Conflict(f"{whose}{'s' * (len(upstream) > 1)} {', '.join(c[:12] for c in upstream)} "
                       f"{'are' if len(upstream) > 1 else 'is'} already in {short_ref(ref)} ({target[:12]}); carry its "
                       f"other commit(s) one by one ({', '.join(c[:12] for c in rest)}); nothing written",
                       hint=Hint.run(None, pr=False, commit=rest[0]))
    onref.refuse(repo, ps, applied, ref, target, "the stack with this backport")


def _entry(fix: Fix, ch: changes.Change) -> dict:
    """The fix's fields in patchset.yaml (its series is set with the others')."""
    return {"id": fix.id, "kind": BACKPORT, "title": fix.title, "bug": fix.bug, "origin": fix.origin,
            "upstream_commits": list(ch.commits), "upstream_base": ch.base, "series": [],
            "status": {"forwarded": "not-needed", "applied_upstream": ch.commit_url or None},
            "tests": {"regression": list(fix.tests.regression), "neighbours": []}}


def _range_diff(repo: Repo, target: Sha, old_ps: PatchSet, old: Fix, applied: series.SeriesResult,
                new: PatchSet, fix: Fix, bases: list[str]) -> str:
    """The range-diff of the fix's old patches against its new ones, each as commits on the ref."""
    upto = [p for f in old_ps.fixes[:old_ps.fixes.index(old) + 1] for p in f.patches]
    was = series.apply_series(repo, target, upto, threeway=True, merge_bases=bases,
                              committer_date=series.THROWAWAY_DATE)
    if not was.ok:
        return f"(no range-diff: the old patches of {old.id} no longer apply on {target[:12]})"
    commits = [o.commit for o in applied.outcomes]
    at = [i for i, o in enumerate(applied.outcomes) if stack.owner(new, o.patch).id == fix.id]
    new_base = commits[at[0] - 1] if at[0] else target
    before = [o.commit for o in was.outcomes[:len(upto) - len(old.patches)] if o.commit]
    mine = [o.commit for o in was.outcomes[len(upto) - len(old.patches):] if o.commit]
    if not mine:
        return f"(no range-diff: every old patch of {old.id} is already in {target[:12]})"
    old_base, old_tip = (before[-1] if before else target), mine[-1]
    return repo.range_diff(f"{old_base}..{old_tip}", f"{new_base}..{commits[at[-1]]}")


def describe(r: BackportResult) -> str:
    """The result as the user reads it (the CLI prints it; --json has every field)."""
    how = {changes.MERGED: f"merged as {r.commits[0][:12]}", changes.OPEN: f"open, {len(r.commits)} commit(s)",
           changes.COMMIT: "a commit"}[r.kind]
    head = f"{r.target}: {r.fix} ({r.origin}, {how})"
    if r.already:
        return (f"upstream: {r.view.said()}\n" if r.view else "") + (
            f"{head} is already in {short_ref(r.ref)} ({r.ref_commit[:12]}) {r.already}; nothing written")
    lines = [f"{head}: {'replaced in place' if r.replaced else 'a new backport'}, {r.placed}, "
             f"on {short_ref(r.ref)} ({r.ref_commit[:12]})", *([f"upstream: {r.view.said()}"] if r.view else []),
             edit_text.stack_table(r.stack)]
    lines += edit_text.tests_lines(r.fix, r.expected, r.unfenced, r.tests_ran)
    if r.range_diff:
        lines.append(f"range-diff of {r.fix}'s old patches against the new (git range-diff):")
        lines += [f"  {line}" for line in r.range_diff.splitlines()]
    lines.append(edit_text.written_line(r.target, r.written, r.removed, "unchanged (nothing moved upstream)"))
    return "\n".join(lines)

"""make new-fix: commits of the user's become a new fix of ours in the stack, all or nothing
(#33 item 1: a commit on overlay/<set> was refused by export, or folded into fix 19514
without trailers, and the docs' only answer was YAML by hand).

The commits are those on the set's branch that belong to no fix of the stack (no Origin
naming one: what make export refuses), or the ones named (COMMIT=). Each becomes a patch
whose message ends with our DEP-3 trailers (Origin: vendor, <bug>; Bug; Forwarded: no;
Last-Update), its DEP-3 fields of its own replaced; the fix goes last in the stack (its
patches before the waiver commit apply computes), its tests are the test files it touches,
measured as make backport measures a fix (delta/measure.py). The new stack must apply on the
set's ref; it is written by edit/write.py, the one writer of a set. The user's checkout and
branch are never changed: make export of the branch afterwards is a no-op (each of its
commits is the same change as a patch of the set, but for the trailers: patchfiles.known).
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import patchset, provenance, scratch
from ..backport.change import web_url
from ..delta import measure as delta_measure
from ..delta.run import Runner, SourceRunner
from ..errors import BadInput, Hint, NotFound
from ..git import Repo, Sha, short_ref
from ..model import OURS, Fix, PatchSet, Status, Tests, is_test_path
from ..series import THROWAWAY_DATE
from .. import fresh, upstream
from ..upstream import refuse_symlinked_paths
from . import metadata, onref, patchfiles, text
from .write import SetEdit

_TAGS = re.compile(r"^(\[[^\]]*\]\s*){1,2}")  # upstream's '[#20001][fix] ' before a title


@dataclass
class NewFixResult:
    target: str
    fix: str
    title: str
    bug: str
    ref: str
    ref_commit: str
    commits: list[str]  # the user's commits it was made from
    placed: str = ""
    stack: list[tuple[str, str, str]] = field(default_factory=list)  # (patch file, fix id, how it applied)
    tests: list[str] = field(default_factory=list)
    expected: dict = field(default_factory=dict)  # source mode, as make backport measures
    tests_ran: str = ""
    unfenced: str = ""
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    view: fresh.View | None = None  # the upstream commit judged, and how fresh that view is

    @property
    def hints(self) -> list[Hint]:
        """Its own delta. Not yet its PR: make pr refuses (exit 1) until its checklist's open
        item is answered, which describe() says."""
        return [Hint("delta", (("fix_id", self.fix),), "its delta, which make pr reads")]


def split_commits(given: list[str] | None) -> list[str]:
    """COMMIT='a b' (one make variable) or --commit a --commit b: the ids, in order."""
    return [c for g in given or () for c in re.split(r"[\s,]+", g) if c]


def new_fix(ps: PatchSet, *, root: Path, src: Path, fix_id: str, bug: str | None = None, title: str | None = None,
            commits: list[str] | None = None, branch: str | None = None, today: str | None = None,
            runner: Runner | None = None, fetch: bool = True) -> NewFixResult:
    """Make a fix of ours, fix_id, of the commits; see the module."""
    if not patchset.FIX_ID.match(fix_id):
        raise BadInput(f"{fix_id[:70]!r} is not a fix id: letters, digits, '.', '_' or '-' (e.g. its bug's number, "
                       f"20001)", setting="fix_id")
    if any(f.id == fix_id for f in ps.fixes):
        raise BadInput(f"{ps.target} carries a fix {fix_id} already ({', '.join(f.id for f in ps.fixes)}); choose "
                       f"another id", setting="fix_id")
    if bug is None:
        if not fix_id.isdigit():
            raise BadInput(f"fix {fix_id} is not a bug's number: say its bug (an issue URL, https://nvbugs/<n> or "
                           f"a ticket)", setting="bug", hint=Hint.choose("bug"))
        bug = f"{web_url(ps.upstream.url)}/issues/{fix_id}"
    if not bug.strip() or any(c.isspace() for c in bug.strip()):
        raise BadInput(f"{bug[:80]!r} is not a bug: an issue URL, https://nvbugs/<n> or a ticket", setting="bug")
    day = today or datetime.date.today().isoformat()
    edit = SetEdit(root, ps.target, f"new-fix {ps.target}")
    Repo.open(src).close()  # new-fix never clones: the user's commits are in their checkout
    with upstream.held(ps, src, None, f"new-fix {ps.target}") as (repo, _cloned):
        return _new_fix(ps, repo, edit, fix_id, bug.strip(), title, split_commits(commits), branch or ps.branch, day,
                        runner, fresh.view(repo, ps, fetch=fetch))


def _new_fix(ps: PatchSet, repo: Repo, edit: SetEdit, fix_id: str, bug: str, title: str | None, given: list[str],
             branch: str, day: str, runner: Runner | None, seen: fresh.View) -> NewFixResult:
    ref, target = seen.ref, Sha(seen.commit)
    with scratch.folder("edit") as tmp:
        work = Path(tmp)
        shas = _commits(ps, repo, target, branch, given, work)
        fields = [("Origin", f"vendor, {bug}"), ("Bug", bug), ("Forwarded", "no"), ("Last-Update", day)]
        made = []
        for i, sha in enumerate(shas):
            info = repo.commit_info(sha)
            if len(info.parents) != 1:
                raise BadInput(f"commit {sha[:12]} has {len(info.parents)} parents; a fix is made of single-parent "
                               f"commits", setting="commit")
            message = repo.with_trailers(provenance.without(info.message), fields)
            mine = repo.commit_tree(info.tree, info.parents, message, author=info.author, committer=info.author,
                                    author_date=info.author_date, committer_date=THROWAWAY_DATE)
            made += patchfiles.formatted(repo, [mine], work / f"commit-{i}")
        first = repo.commit_info(shas[0]).subject
        name = (title or _TAGS.sub("", first)).strip() or first
        tests = list(dict.fromkeys(fc.path for p in made for fc in p.files if fc.path and is_test_path(fc.path)))
        fix = Fix(fix_id, OURS, name, bug, bug, tuple(made), Status("no"), Tests(tuple(tests)), {})
        new = replace(ps, fixes=ps.fixes + (fix,))
        result = NewFixResult(ps.target, fix_id, name, bug, ref, target, list(shas), tests=tests,
                              placed=f"after {ps.fixes[-1].id}, last of the stack", view=seen)
        refuse_symlinked_paths(repo, target, new)
        applied = onref.apply(repo, target, new, onref.bases(new, *(repo.commit_info(s).parents[0] for s in shas)))
        onref.refuse(repo, new, applied, ref, target, f"the stack with fix {fix_id}")
        files = patchfiles.render(repo, [o.commit for o in applied.outcomes], ps.patches, day, work / "stack")
        owner = {p.name: f.id for f in new.fixes for p in f.patches}
        result.stack = [(f.name, owner[o.patch.name], o.status) for f, o in zip(files, applied.outcomes)]
        meta = metadata.Meta(edit.meta(), f"patches/{ps.target}/{patchset.METADATA}")
        meta.to_stack(ps.fixes[0].id)
        meta.put({"id": fix_id, "kind": OURS, "title": name, "bug": bug, "series": [],
                  "status": {"forwarded": "no"}, "tests": {"regression": tests, "neighbours": []}})
        for f in new.fixes:
            meta.set_series(f.id, [n for n, fid, _s in result.stack if fid == f.id])
        staged = edit.stage(work, files, meta.text())
        runner = runner or SourceRunner()
        result.expected = delta_measure.expectations(staged, staged.fix(fix_id), repo=repo, base=target, ref=ref,
                                                     runner=runner)
        if result.expected:
            result.unfenced = getattr(runner, "unfenced", "")
            result.tests_ran = "" if result.unfenced else getattr(runner, "said", "")
            meta.put({"id": fix_id, "expected": {"source": result.expected}})
            staged = edit.stage(work, files, meta.text())
        edit.verify(staged, repo, target, f"{short_ref(ref)} ({target[:12]})")
        done = edit.commit(staged)
        result.written, result.removed = done.written, done.removed
    return result


def _commits(ps: PatchSet, repo: Repo, target: Sha, branch: str, given: list[str], work: Path) -> list[Sha]:
    """The commits to make the fix of: those given (COMMIT=), else the branch's commits that
    belong to no fix of the stack (the computed waiver commit aside)."""
    if given:
        out = []
        for c in given:
            sha = repo.rev_parse(c) if re.fullmatch(r"[0-9a-fA-F]{4,40}|[A-Za-z0-9._/-]+", c) else None
            if sha is None:
                raise NotFound(f"{c[:50]!r} is no commit of {repo.path}", setting="commit")
            out.append(sha)
        return list(dict.fromkeys(out))
    tip = repo.rev_parse(branch)
    if tip is None:
        raise NotFound(f"branch {branch} is not in {repo.path}; make apply builds it, or say which commits "
                       f"(COMMIT=)", setting="branch")
    base = repo.merge_base(target, tip)
    shas = repo.commits(f"{base}..{tip}") if base else []
    waives = ps.waivers.waives_file if ps.waivers else None
    shas = [s for s in shas if not (waives and repo.changed_paths(s) == [waives])]
    if any(len(repo.commit_info(s).parents) != 1 for s in shas):
        raise BadInput(f"{branch} has a merge commit; name the commits of the new fix (COMMIT=)", setting="commit")
    patches = patchfiles.formatted(repo, shas, work / "branch") if shas else []
    mine = [s for s, p in zip(shas, patches) if not patchfiles.owners(ps, p)]
    if not mine:
        raise NotFound(f"{branch} has no commit beyond the {ps.target} stack (every one belongs to a fix of it); "
                       f"commit your change on {branch}, or say which commits (COMMIT=)", setting="commit")
    return mine


def describe(r: NewFixResult) -> str:
    """The result as the user reads it (the CLI prints it; --json has every field)."""
    lines = [f"{r.target}: {r.fix} ({r.bug}, ours): a new fix of {len(r.commits)} commit(s) "
             f"({', '.join(c[:12] for c in r.commits)}), {r.placed}, on {short_ref(r.ref)} ({r.ref_commit[:12]})",
             f"title: {r.title}", *text.view_line(r.view), text.stack_table(r.stack)]
    lines += text.tests_lines(r.fix, r.expected, r.unfenced, r.tests_ran) or [
        f"tests of {r.fix}: none (its commits touch no test file): make delta has nothing to grade it by"]
    lines.append(text.written_line(r.target, r.written, r.removed, "unchanged"))
    if r.written:  # what make pr will ask that no measurement settles
        lines.append(f"its PR's checklist asks what nothing measures (its documentation, say): answer it under "
                     f"fixes[{r.fix}].pr in patches/{r.target}/patchset.yaml (docs/patch-sets.md); then make pr "
                     f"renders its PR")
    return "\n".join(lines)

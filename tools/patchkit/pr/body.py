"""The PR body: upstream's template at the target ref, filled from the set's metadata, its
commit messages, the checkout and a delta report."""
from __future__ import annotations

import importlib.resources
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from ..delta.compare import file_of, outcome_counts
from ..delta.run import collects
from .. import provenance, schema as S, stack
from ..errors import Conflict, Hint, NotFound
from ..git import Repo, short_ref
from ..model import PatchSet, is_test_path
from . import checklist, template as template_mod
from .title import ticket

_TRAILER = re.compile(r"^((Fixes|Closes) #\d+$|(Signed-off-by|[A-Z][A-Za-z-]+-by|Fixes|Closes):)", re.M)
# Files that declare what the package depends on (a new dependency needs upstream's license scan).
_DEPENDENCY_FILE = re.compile(r"(^|/)(requirements[^/]*\.(txt|in)|constraints[^/]*\.txt|setup\.py|setup\.cfg"
                              r"|pyproject\.toml|Pipfile(\.lock)?|poetry\.lock|environment\.ya?ml)$")
# How each delta mode ran the tests, said so that a reviewer can judge the numbers; the source
# mode's caveat (placeholders for what the machine lacks) is an internal note: NOTES=1.
_HOW = {
    "source": "outside any TensorRT-LLM installation, the modules the fix changes loaded from the tree{caveat}.",
    "container": "in the base image{base} and in the same image with the fix laid over its installed package{patched}{builder}.",
}
_SOURCE_CAVEAT = (", with placeholders standing in for what those modules import and the machine lacks (torch, "
                  "the compiled bindings); a test file that imports those itself could not run there")


@dataclass
class Body:
    text: str
    template: str  # where the template came from
    answers: list[checklist.Answer] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # sections the template lacked, and where ours went


_TREE = S.record({"tests": S.mapping_of(S.string(), S.string()),
                  **{k: S.count() for k in ("passed", "failed", "error", "skipped", "not_run")}}, unknown=True)
# One fix's measured fields: schema 1 had them at the top level, schema 2 in each of `fixes`.
_MEASURED = {
    "matches_expected": S.boolean(), "valid": S.optional(S.boolean(), True),
    "unpatched": _TREE, "patched": _TREE,
    **{k: S.list_of(S.string()) for k in ("fail_to_pass", "pass_to_pass", "pass_to_fail", "fail_to_fail")},
    "not_run": S.optional(S.mapping_of(S.string(), S.string())),
}
_TARGET_FIELDS = {
    "target": S.string(), "upstream_commit": S.string(), "upstream_ref": S.string(), "mode": S.string(),
    "images": S.optional(S.mapping_of(S.string(), S.record({"name": S.optional(S.string())}, unknown=True))),
}
REPORT_SCHEMA = S.record({**_TARGET_FIELDS, **_MEASURED}, unknown=True)  # schema 1: a set of one fix
REPORT_SCHEMA_2 = S.record({
    **_TARGET_FIELDS, "schema": S.count(),
    "fixes": S.list_of(S.record({"id": S.string(), "kind": S.string(), **_MEASURED}, unknown=True)),
}, unknown=True)


def load_report(path: Path, ps: PatchSet, upstream_commit: str, fix_id: str | None = None) -> dict:
    """The delta report's section for one fix (fix_id, else the set's only own fix), with the
    target's fields, as one mapping (the fields a schema 1 report had at its top level); or an
    error whose hint is to run delta. The one reader of delta reports for make pr: schema 1
    (before stacks) reads as the report of a stack of one fix, schema 2 has a section per fix."""
    again = Hint.run("delta")
    if not path.is_file():
        raise NotFound(f"no delta report at {path}", hint=again)
    data = S.load_json(path)
    schema = data.get("schema", 1) if isinstance(data, dict) else 1
    if schema not in (1, 2):
        raise Conflict(f"{path} is a delta report of schema {schema}, which this patchkit cannot read", hint=again)
    report = S.validate(data, REPORT_SCHEMA if schema == 1 else REPORT_SCHEMA_2, str(path))
    if report.get("target") != ps.target:
        raise Conflict(f"{path} is the delta of {report.get('target')!r}, not {ps.target!r}", hint=again)
    if report.get("upstream_commit") != upstream_commit:
        raise Conflict(f"{path} was measured on {str(report.get('upstream_commit'))[:12]}, "
                       f"but {ps.upstream.ref} is {upstream_commit[:12]}", hint=again)
    if schema == 2:
        fix = stack.find(ps, fix_id, ours=True)
        section = next((f for f in report["fixes"] if f["id"] == fix.id), None)
        if section is None:
            graded = ", ".join(f["id"] for f in report["fixes"]) or "none"
            raise Conflict(f"{path} grades no fix {fix.id} (it grades: {graded})", hint=Hint.run("delta", fix_id=fix.id))
        whose = f"fix {fix.id} of {path}" if len(report["fixes"]) > 1 else str(path)
        report = {**{k: v for k, v in report.items() if k not in ("fixes", "ok", "schema")}, **section}
    else:
        whose = str(path)
    if not (report.get("matches_expected") and report.get("valid", True)):
        raise Conflict(f"{whose} does not match the set's expectations; fix that, then run delta again", hint=again)
    return report


def _paragraphs(body: str) -> list[str]:
    paras = [p.strip() for p in body.strip().split("\n\n") if p.strip()]
    return [" ".join(p.split()) for p in paras if not _TRAILER.match(p)]


def context(ps: PatchSet, report: dict, files: list[str], waiver: str | None, lint: dict | None = None,
            depends: str = "", notes: bool = False, unrun: Sequence[str] = ()) -> dict:
    """Everything our two sections (Description, Test Coverage) say, from measured data.
    depends: 'Depends on #<n>: why.' when the fix needs a backport beneath it (depends.py).
    notes: the set's internal notes too (how this form of the fix differs from the one
    verified; how source mode stands in for what the machine lacks), else a terse body.
    unrun: existing test files next to the change that the measurement did not run (not_run_nearby)."""
    fixes = [p for p in ps.patches if not p.tests_only]
    added = {fc.path for p in ps.patches for fc in p.files if fc.added}
    regression = []
    for f in ps.tests.regression:
        u, p = outcome_counts(report["unpatched"]["tests"], f), outcome_counts(report["patched"]["tests"], f)
        regression.append({"file": f, "new": f in added, "total": sum(p.values()), "unpatched": u, "patched": p})
    neighbours = []
    for f in ps.tests.neighbours:
        p = outcome_counts(report["patched"]["tests"], f)
        why = _not_run_reason(report, f)
        summary = (f"{p['passed']} passed with the fix, none failed" if p["passed"] and not (p["failed"] or p["error"] or p["not_run"])
                   else f"not run in this measurement ({why})" if p["not_run"]
                   else f"{p['passed']} passed, {p['failed']} failed, {p['error']} errors with the fix")
        neighbours.append({"file": f, "summary": summary, "why": why,
                           "ok": bool(p["passed"]) and not (p["failed"] or p["error"] or p["not_run"])})
    images = report.get("images") or {}
    base, patched = (images.get(t, {}).get("name") for t in ("unpatched", "patched"))
    unpatched_tree = ("upstream plus the new tests" if any(p.tests_only for p in ps.patches) else "upstream as it is")
    return {
        "summary": ". ".join(p.subject.split("] ", 2)[-1] for p in fixes) + ".",
        # The overlay's DEP-3 trailers describe where a patch comes from, not the change.
        "why": [para for p in fixes for para in _paragraphs(provenance.without(p.message).partition("\n\n")[2])],
        "depends": depends,
        # How this form of the fix differs from the one verified, and why (#25): the set's own words,
        # an internal note (#33 item 7): only when asked.
        "differs": ps.variant.differs if ps.variant and notes else "",
        "unrun": list(unrun),
        "ticket": ticket(ps), "files": files, "regression": regression, "neighbours": neighbours,
        "ref": short_ref(report["upstream_ref"]),
        "commit": report["upstream_commit"][:12], "target": ps.target, "mode": report["mode"],
        "how": _HOW.get(report["mode"], f"in {report['mode']} mode.").format(
            caveat=_SOURCE_CAVEAT if notes else "",
            base=f" `{base}`" if base else "", patched=f" (`{patched}`)" if patched else "",
            builder=f", run with {report['builder']}" if report.get("builder") else ""),
        "unpatched_tree": unpatched_tree,
        "unpatched": report["unpatched"], "patched": report["patched"],
        "counts": {k: len(report[k]) for k in ("fail_to_pass", "pass_to_pass", "pass_to_fail", "fail_to_fail")},
        "waiver": waiver,
        "lint": _lint_summary(lint),
    }


def _lint_summary(lint: dict | None) -> dict | None:
    """What Test Coverage says of make lint: which hooks ran (with the pinned tool), which not, and
    whether that leaves the coding-guidelines item open (a hook that selects the files did not run)."""
    if lint is None or not lint.get("config_found", True):
        return None
    if lint.get("error"):
        return {"error": lint["error"]}
    tools = lint.get("tools") or {}
    ran = [f"`{h}` ({tools[h]})" if h in tools else f"`{h}`" for h in lint.get("ran") or []]
    not_run = "; ".join(f"`{h}` ({why})" for h, why in sorted((lint.get("not_run") or {}).items()))
    # The verdict in words (#33 item 7), never more than was measured: the hooks that ran.
    verdict = ("do not all pass" if lint.get("failures") else "that could run here pass" if not_run
               else "pass" if ran else "select none of")
    return {"error": "", "ran": ", ".join(ran) or "none", "ok": not lint.get("failures"), "verdict": verdict,
            "not_run": not_run}


def not_run_nearby(ps: PatchSet, report: dict, files: Sequence[str], repo: Repo, base: str) -> list[str]:
    """The existing upstream test files next to the change that the measurement did not run:
    the files pytest collects, at the ref, in the folders of the PR's test files and of the
    declared neighbours, none of whose tests passed, failed or errored with the fix."""
    added = {fc.path for p in ps.patches for fc in p.files if fc.added}
    folders = sorted({posixpath.dirname(f) for f in [*files, *ps.tests.neighbours] if is_test_path(f)})
    ran = {file_of(t) for t, o in report["patched"]["tests"].items() if o in ("passed", "failed", "error")}
    return sorted({path for d in folders for _mode, typ, path in repo.ls_tree(base, f"{d}/", recursive=False)
                   if typ == "blob" and collects(path) and path not in added and path not in ran})


def _not_run_reason(report: dict, file: str) -> str:
    reasons = sorted({r for tid, r in (report.get("not_run") or {}).items() if file_of(tid) == file and r})
    return "; ".join(reasons) or "not run"


def facts(ps: PatchSet, report: dict, ctx: dict, files: list[str], repo: Repo, base: str,
          lint: dict | None = None) -> checklist.Facts:
    """What the checklist is answered from: the report, the series' files and the checkout."""
    fail_to_pass = {file_of(t) for t in report["fail_to_pass"]}
    new_tests = tuple(t["file"] for t in ctx["regression"]
                      if t["file"] in fail_to_pass and not (t["patched"]["failed"] or t["patched"]["error"]))
    added = sorted({fc.path for p in ps.patches for fc in p.files if fc.added})
    parents = sorted({posixpath.dirname(p) for p in added if posixpath.dirname(p)})
    new_dirs = tuple(d for d in parents if not repo.ls_tree(base, d, recursive=False))
    phrases = ps.pr.docs
    return checklist.Facts(
        explained=bool(ctx["why"]), new_tests=new_tests, mode=report["mode"],
        neighbours={n["file"]: n["ok"] for n in ctx["neighbours"]},
        neighbours_why={n["file"]: n["why"] for n in ctx["neighbours"] if not n["ok"]},
        dependency_files=tuple(f for f in files if _DEPENDENCY_FILE.search(f)),
        codeowners_changed=".github/CODEOWNERS" in files, new_dirs=new_dirs,
        docs_changed=tuple(f for f in files if f.startswith("docs/")),
        docs_phrases=phrases, docs_describing=tuple(repo.grep_files(base, phrases, "docs")) if phrases else (),
        ref=ctx["ref"], lint=lint if lint and lint.get("upstream_commit") == base
        and lint.get("patch_set") == ps.content_hash else None)


def render(ps: PatchSet, ctx: dict, facts_: checklist.Facts, tmpl: template_mod.Template) -> Body:
    """Upstream's template with our Description and Test Coverage, its checklist answered and
    everything else kept as written. HTML comments are dropped: they are upstream's guidance
    to the author, which the filled sections answer, and GitHub does not show them anyway."""
    ours = {"description": _render("pr_description.md.j2", ctx), "test coverage": _render("pr_test_coverage.md.j2", ctx)}
    missing = [k for k in ours if not tmpl.section(k)]
    notes = [f"the template has no '## {k.title()}' section; ours is added" for k in missing]
    answers: list[checklist.Answer] = []
    out = [template_mod.without_comments(tmpl.preamble).strip("\n")]
    for s in tmpl.sections:
        key = s.name.lower()
        if missing and key in ("test coverage", "pr checklist"):  # ours go before these, as upstream orders them
            out += [f"## {k.title()}\n\n{ours[k].strip()}" for k in missing]
            missing = []
        if key in ours:
            out.append(f"{s.heading}\n\n{ours[key].strip()}")
            continue
        text = template_mod.without_comments(s.text)
        if key == "pr checklist":
            text, answers = checklist.fill(text, facts_, ps.pr.checklist, f"patches/{ps.target}/patchset.yaml")
        out.append(f"{s.heading}\n{text.rstrip()}")
    out += [f"## {k.title()}\n\n{ours[k].strip()}" for k in missing]
    text = re.sub(r"\n{3,}", "\n\n", "\n\n".join(p for p in out if p.strip())).strip("\n") + "\n"
    return Body(text, tmpl.source, answers, notes)


def _render(name: str, ctx: dict) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             loader=jinja2.FunctionLoader(_template))
    return env.get_template(name).render(**ctx)


def _template(name: str) -> str:
    return importlib.resources.files("patchkit").joinpath("templates", name).read_text(encoding="utf-8")

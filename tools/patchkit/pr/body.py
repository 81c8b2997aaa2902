"""The PR body: rendered from the set's metadata, its commit messages and a delta report."""
from __future__ import annotations

import importlib.resources
import json
import re
from pathlib import Path

import jinja2

from ..delta.compare import outcome_counts
from ..errors import Conflict, NotFound
from ..model import PatchSet
from .title import ticket

_TRAILER = re.compile(r"^((Fixes|Closes) #\d+$|(Signed-off-by|[A-Z][A-Za-z-]+-by|Fixes|Closes):)", re.M)


def load_report(path: Path, ps: PatchSet, upstream_commit: str) -> dict:
    """The delta report for this target and commit, or an error that says to run make delta."""
    again = f"run make delta TRTLLM={ps.target}"
    if not path.is_file():
        raise NotFound(f"no delta report at {path}; {again}")
    report = json.loads(path.read_text())
    if report.get("target") != ps.target:
        raise Conflict(f"{path} is the delta of {report.get('target')!r}, not {ps.target!r}; {again}")
    if report.get("upstream_commit") != upstream_commit:
        raise Conflict(f"{path} was measured on {str(report.get('upstream_commit'))[:12]}, "
                       f"but {ps.upstream.ref} is {upstream_commit[:12]}; {again}")
    if not (report.get("matches_expected") and report.get("valid", True)):
        raise Conflict(f"{path} does not match the set's expectations; fix that, then {again}")
    return report


def _paragraphs(body: str) -> list[str]:
    paras = [p.strip() for p in body.strip().split("\n\n") if p.strip()]
    return [" ".join(p.split()) for p in paras if not _TRAILER.match(p)]


def context(ps: PatchSet, report: dict, files: list[str], waiver: str | None) -> dict:
    fixes = [p for p in ps.patches if not p.tests_only]
    added = {fc.path for p in ps.patches for fc in p.files if fc.added}
    regression = []
    for f in ps.tests.regression:
        u, p = outcome_counts(report["unpatched"]["tests"], f), outcome_counts(report["patched"]["tests"], f)
        regression.append({"file": f, "new": f in added, "total": sum(p.values()), "unpatched": u, "patched": p})
    neighbours = []
    for f in ps.tests.neighbours:
        p = outcome_counts(report["patched"]["tests"], f)
        summary = (f"{p['passed']} pass with the fix, none regress" if p["passed"] and not p["failed"]
                   else f"not run in {report['mode']} mode (needs the container)" if p["not_run"]
                   else f"{p['passed']} pass, {p['failed']} fail with the fix")
        neighbours.append({"file": f, "summary": summary, "ok": bool(p["passed"]) and not (p["failed"] or p["error"])})
    return {
        "summary": " ".join(p.subject.split("] ", 2)[-1] for p in fixes) + ".",
        "why": [para for p in fixes for para in _paragraphs(p.body)],
        "ticket": ticket(ps), "files": files, "regression": regression, "neighbours": neighbours,
        "ref": report["upstream_ref"].removeprefix("refs/tags/").removeprefix("refs/remotes/origin/").removeprefix("refs/heads/"),
        "commit": report["upstream_commit"][:12], "target": ps.target, "mode": report["mode"],
        "unpatched": report["unpatched"], "patched": report["patched"],
        "counts": {k: len(report[k]) for k in ("fail_to_pass", "pass_to_pass", "pass_to_fail", "fail_to_fail")},
        "waiver": waiver,
        "neighbours_ok": bool(neighbours) and all(n["ok"] for n in neighbours),
    }


def render(ctx: dict) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             loader=jinja2.FunctionLoader(_template))
    return env.get_template("pr_body.md.j2").render(**ctx)


def _template(name: str) -> str:
    return importlib.resources.files("patchkit").joinpath("templates", name).read_text(encoding="utf-8")

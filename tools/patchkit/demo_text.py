"""make demo's text: a line per step with the command that does it by hand, a table, next steps;
and the file with every step's whole output (each command's own text module says its result)."""
from __future__ import annotations

from pathlib import Path, PurePosixPath

from .text.table import table
from .text.words import short_ref


def demo_full(r) -> str:
    """Every step of make demo with its whole output, as the command prints it (demo.txt)."""
    # Each step reads as its command prints it; imported here, when the demo has run them all.
    from . import apply_text, check_text, miniature
    from .backport.command import describe as backport_text
    from .delta.text import delta_result
    from .lint.text import lint_result
    from .pr.text import pr_result
    from .waives.text import waivers_result
    says = {"miniature": miniature.describe, "backport": backport_text, "apply": apply_text.apply_result,
            "check": check_text.check_results, "waivers": waivers_result, "delta": delta_result,
            "lint": lint_result, "pr": pr_result}
    out = []
    for st in r.steps:
        text = says[st.command](st.result)
        out += [f"== {st.said}", text, ""]
    return "\n".join(out).rstrip("\n")


def _demo_said(st) -> str:
    """A step's result in a few words."""
    r = st.result
    if st.kind == "miniature":
        return f"built: tag {r.tag}, branch {r.branch}"
    if st.kind == "backport":
        return _backport_said(r)
    if st.kind == "apply-again":
        return "already applied; nothing changed" if r.already_applied else "applied again"
    if st.kind == "apply":
        ups = sum(o.status == "already upstream" for o in r.outcomes)
        three = sum(o.status == "3-way" for o in r.outcomes)
        return (f"{len(r.outcomes) - ups} patch(es) applied on {short_ref(r.base_ref)} {r.base[:12]} -> {r.branch}"
                + (" (partial clone)" if r.cloned else "") + (f", {three} by 3-way merge" if three else "")
                + (f", {ups} already upstream" if ups else ""))
    if st.kind == "check":
        return "; ".join(f"{c.target}: {c.verdict}" for c in r)
    if st.kind == "waivers":
        n = r.narrowing
        if n is None or not n.changed:
            return "no line skips the set's tests; no edit"
        return f"{len(n.removed)} line(s) skip the set's tests; the edit makes them {len(n.added)}"
    if st.kind == "delta":
        said = _fix_delta(r.fixes[0], "; {} file(s) not run here") if len(r.fixes) == 1 else "; ".join(
            f"fix {f.id}: " + _fix_delta(f, " ({} file(s) not run here)") for f in r.fixes)
        return f"{'matches' if r.ok else 'DOES NOT MATCH'} the declared delta: {said}"
    if st.kind == "lint":
        return f"{len(r.ran)} hooks pass" if r.ok else f"{len(r.failures)} failing hook(s)"
    if isinstance(r, str):  # pr skipped
        return r
    return f"branch {r.branch}, {len(r.messages)} commits signed off; body {r.out_dir}/body.md"


def _backport_said(r) -> str:
    """make backport's result in a few words: the PR, where it went, what its tests measured."""
    if r.already:
        return f"{r.fix} is already in {short_ref(r.ref)} {r.already}; nothing written"
    how = {"merged": f"merged upstream as {r.commits[0][:12]}", "open": f"open, {len(r.commits)} commit(s)"}.get(
        r.kind, "a commit")
    tests = "; ".join(f"{PurePosixPath(t).name} " + ("not run here" if e.get("not_run") else
                                                     "not measured (no sandbox here)" if e.get("not_measured") else
                                                     f"{_counts(e['unpatched'])} -> {_counts(e['patched'])}")
                      for t, e in r.expected.items())
    return (f"{r.fix} ({how}) carried {r.placed} in the demo's copy of patches/{r.target}"
            + (f"; without it -> with the stack: {tests}" if tests else ""))


def _counts(c: dict) -> str:
    return ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in c.items() if n) or "nothing collected"


def _fix_delta(f, not_run: str) -> str:
    """A fix's section of make delta in a few words; not_run: how to say the files not run here."""
    files = {t.split("::")[0] for t in f.not_run} | set(f.not_collected)
    return (f"{len(f.fail_to_pass)} fail->pass, {len(f.pass_to_pass)} pass->pass, {len(f.pass_to_fail)} pass->fail"
            + (not_run.format(len(files)) if files else ""))


def _demo_row(r, target: str) -> list[str]:
    """The summary table's row of a target: its stack of fixes, apply, delta, waivers, lint, PR."""
    by = {st.kind: st.result for st in r.steps if st.target == target}
    fixes = ", ".join(i + (f" ({kind})" if kind != "ours" else "") for i, kind in r.fixes.get(target, []))
    a, d, w, li, p = by["apply"], by["delta"], by["waivers"], by["lint"], by["pr"]
    n = w.narrowing
    pr = "skipped (no sign-off identity)" if isinstance(p, str) else \
        (f"{p.branch}, ready to open" if p.open_with else f"{p.branch} (a tag's: open {p.branch_set or 'a branch set'}'s)")
    return [target, fixes, f"{len(a.outcomes)} patches", ("matches" if d.ok else "MISMATCH") + " ({})".format(
        ", ".join((f"{f.id}: " if len(d.fixes) > 1 else "") + f"{len(f.fail_to_pass)}" for f in d.fixes) + " fail->pass"),
            f"{len(n.removed)} line -> {len(n.added)}" if n is not None and n.changed else "no edit",
            f"{len(li.ran)} hooks pass" if li.ok else f"{len(li.failures)} failing", pr]


def demo_result(r) -> str:
    """make demo: a line per step (what it found, and the command that does it by hand), a table,
    and what to do next (#27 item 4: it printed about 340 lines, two whole PR bodies, and no end)."""
    targets = list(dict.fromkeys(st.target for st in r.steps if st.target))
    rows = [(st.target or "-", st.kind, _demo_said(st)) for st in r.steps]
    widths = [max(len(x[i]) for x in rows) for i in range(2)]
    lines = [f"make demo: the main job on the miniature upstream {Path(r.upstream).as_uri()}", ""]
    for (target, kind, said), st in zip(rows, r.steps):
        lines.append(f"{target:<{widths[0]}}  {kind:<{widths[1]}}  {said}  $ {st.said}")
    bodies = [f"{st.result.out_dir}/body.md" for st in r.steps if st.kind == "pr" and not isinstance(st.result, str)]
    lines += ["", table([_demo_row(r, t) for t in targets], ("target", "fixes", "apply", "delta", "waivers", "lint", "PR")), ""]
    said = {kind: [st.said for st in r.next if st.kind == kind] for kind in ("summary", "upstream")}
    lines += [f"next: read each step's whole output in {r.full}" + (f"; the PR bodies: {', '.join(bodies)}" if bodies else ""),
              "next: run any step above by hand (after the $): it works on the miniature, never on GitHub",
              *(f"next: one table of the demo's reports: {c}" for c in said["summary"]),
              "next: the same on real upstream: " + ", then ".join(said["upstream"])]
    return "\n".join(lines)


"""make demo's text: a line per step with the command that does it by hand, a table, next steps;
and the file with every step's whole output (each command's own text module says its result)."""
from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from .delta.reportplugin import NOT_RUNNABLE
from .delta.text import not_run_files
from .text.table import table
from .text.words import fold, fold_command, shown_ref


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
        return (f"{len(r.outcomes) - ups} patch(es) applied on {shown_ref(r.base_ref)} {r.base[:12]} -> {r.branch}"
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
        said = "; ".join((f"fix {f.id}: " if len(r.fixes) > 1 else "") + _fix_delta(f) for f in r.fixes)
        return f"{'matches' if r.ok else 'DOES NOT MATCH'} the declared delta: {said}"
    if st.kind == "lint":
        return f"{len(r.ran)} hooks pass" if r.ok else f"{len(r.failures)} failing hook(s)"
    if isinstance(r, str):  # pr skipped
        return r
    return f"branch {r.branch}, {len(r.messages)} commits signed off; body {r.out_dir}/body.md"


def _backport_said(r) -> str:
    """make backport's result in a few words: the PR, where it went, what its tests measured."""
    if r.already:
        return f"{r.fix} is already in {shown_ref(r.ref)} {r.already}; nothing written"
    how = {"merged": f"merged upstream as {r.commits[0][:12]}", "open": f"open, {len(r.commits)} commit(s)"}.get(
        r.kind, "a commit")
    tests = "; ".join(f"{PurePosixPath(t).name} " + ("not run here" if e.get("not_run") else
                                                     "not measured (no sandbox here)" if e.get("not_measured") else
                                                     f"{_counts(e['unpatched'])} -> {_counts(e['patched'])}")
                      for t, e in r.expected.items())
    return (f"{r.fix} ({how}) carried {r.placed} in the demo's copy of patches/{r.target}"
            + (f"; without it -> with the stack: {tests}" if tests else "")
            + (f"; {r.target} now needs a wheel build (it changes {', '.join(r.wheel)}): make wheel" if r.wheel else ""))


def _counts(c: dict) -> str:
    return ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in c.items() if n) or "nothing collected"


def _fix_delta(f) -> str:
    """A fix's section of make delta in a few words, with each test file not run here and why
    (#31 item 13: "1 file(s) not run here" named neither)."""
    why = {**{file: _why(reason) for file, reason in not_run_files(f).items()},
           **{file: "pytest does not collect it" for file in f.not_collected}}
    return (f"{len(f.fail_to_pass)} fail->pass, {len(f.pass_to_pass)} pass->pass, {len(f.pass_to_fail)} pass->fail"
            + "".join(f"; not run here: {PurePosixPath(file).name} ({w})" for file, w in sorted(why.items())))


def _why(reason: str) -> str:
    """Why a test file could not run here, in a few words: the module it imports that this machine lacks."""
    missing = re.search(r"No module named '([^']+)'", reason)
    return f"it imports {missing[1]}, which this machine lacks" if missing else reason.removeprefix(f"{NOT_RUNNABLE}: ")


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


WIDTH = 160  # no line of make demo is wider (#34 item 6), nor are there more than 60


def demo_result(r) -> str:
    """make demo: a line per step (what it found) with the command that does it by hand below it,
    a table, and what to do next (#27 item 4: it printed about 340 lines, two whole PR bodies,
    and no end; #31 item 13: each step and its command on one line made lines 300 characters wide).
    A line too long is folded: prose after a clause, a command between its words (` \\`)."""
    targets = list(dict.fromkeys(st.target for st in r.steps if st.target))
    widths = [max(len(x) for x in column) for column in zip(*((st.target or "-", st.kind) for st in r.steps))]
    lines = [*fold(f"make demo: the main job on the miniature upstream {Path(r.upstream).as_uri()}", WIDTH, rest="  "),
             "each step: what it found, then after $ the command that does it by hand (on the miniature, never on GitHub)", ""]
    before = ""
    for st in r.steps:
        head = f"{st.target or '-':<{widths[0]}}  {st.kind:<{widths[1]}}  "
        again = st.said == before  # apply again: the command of the step above
        lines += fold(_demo_said(st) + (" (the command above, again)" if again else ""), WIDTH, head, " " * len(head))
        lines += [] if again else fold_command(st.said, WIDTH, "  $ ", "      ")
        before = st.said
    lines += ["", table([_demo_row(r, t) for t in targets], ("target", "fixes", "apply", "delta", "waivers", "lint", "PR")), ""]
    said = {kind: [st.said for st in r.next if st.kind == kind] for kind in ("summary", "upstream")}
    lines += fold(f"next: read each step's whole output in {r.full}", WIDTH, rest="  ")
    for command in said["summary"]:
        lines += ["next: one table of the demo's reports:", *fold_command(command, WIDTH, "  $ ", "      ")]
    lines += fold("next: the same on real upstream: " + ", then ".join(said["upstream"]), WIDTH, rest="  ")
    return "\n".join(lines)

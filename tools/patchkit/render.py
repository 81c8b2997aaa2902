"""Turn result objects into short aligned tables for people, or JSON for machines."""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import Ask, Hint, UserError


def table(rows: Sequence[Sequence[Any]], header: Sequence[str] | None = None) -> str:
    cells = [[str(c) for c in r] for r in ([header] if header else []) + list(rows)]
    if not cells:
        return ""
    widths = [max(len(r[i]) for r in cells if i < len(r)) for i in range(max(len(r) for r in cells))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)


def to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if f.name not in ("diff", "files", "hunks")}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (datetime.date, datetime.datetime)):
        return obj.isoformat()
    return obj


def as_json(obj: Any) -> str:
    return json.dumps(to_jsonable(obj), indent=2, sort_keys=True)


def outcomes(outs) -> str:
    rows = []
    for o in outs:
        detail = o.drift.one_line() if o.drift else (o.commit[:12] if o.commit else "")
        rows.append((o.patch.name, o.status, detail))
    return table(rows, ("patch", "result", "detail"))


def _found(notes) -> list[str]:
    """What a command found on the way and dealt with (a record whose branch is gone, ...), a line each."""
    return [str(n) for n in notes]


def apply_result(r) -> str:
    found = _found(getattr(r, "notes", []))
    if getattr(r, "checked_out_again", False):
        return "\n".join([f"{r.target}: branch {r.branch} ({r.tip[:12]}) was already built; checked it out again "
                          f"in {r.checkout}", *found])
    if r.already_applied:
        return "\n".join([f"{r.target}: already applied on branch {r.branch} ({r.tip[:12]}) in {r.checkout}; "
                          f"nothing changed", *found])
    lines = [f"{r.target}: {r.base_ref} {r.base[:12]} -> branch {r.branch} {r.tip[:12]}"
             + (" (partial clone)" if r.cloned else ""), *found, outcomes(r.outcomes)]
    if r.waiver is not None:
        lines.append(f"waivers: {r.waiver.why}")
    ups = [o.patch.name for o in r.outcomes if o.status == "already upstream"]
    three = [o.patch.name for o in r.outcomes if o.status == "3-way"]
    if ups:
        lines.append("skipped, already upstream: " + ", ".join(ups))
    if three:
        lines.append("needed a 3-way merge: " + ", ".join(three))
    lines += [f"at an offset: {o.patch.name}: {off.one_line()}" for o in r.outcomes for off in o.offsets]
    return "\n".join(lines)


def check_results(results) -> str:
    from .check import WORDS
    from .series import drift_report
    rows, details, drifts = [], [], []
    # A stack of several fixes: each patch row names its fix (rows come in stack order, so
    # grouped by fix); a one-fix set reads as it always has.
    by_fix = any(len(r.fixes) > 1 for r in results)
    for r in results:
        rows.append((r.target, r.ref, r.base[:12] if r.base else "-", r.verdict))
        owner = {p: f"{f.id} ({f.kind})" for f in r.fixes for p in f.patches}
        for o in r.outcomes:
            said = [o.drift.one_line()] if o.drift else []
            said += [off.one_line() for off in o.offsets]
            details.append((f"  {r.target}", *([owner.get(o.patch.name, "-")] if by_fix else []), o.patch.name,
                            WORDS.get(o.status, o.status), "; ".join(said)))
        drifts += [drift_report([o]) for o in r.outcomes if o.status == "conflict" and o.drift]
        drifts += [f"{r.target}: fix {f.id} needs a wheel build: " + "; ".join(
            f"{name} changes {', '.join(files)}" for name, files in f.wheel.items())
            + "; make container cannot lay that over the installed package (a wheel built from the patched tree would carry it)"
            for f in r.fixes if f.needs_wheel_build]
        if r.upstream_fix is not None:
            fx = r.upstream_fix
            drifts.append(f"{r.target}: {fx.summary()}" + (f"\n{r.target}: to do: {fx.advice()}" if fx.fixed else ""))
    drifts += [f"{r.target}: {r.note}" for r in results if r.base is None and r.note]  # how to fetch it
    text = table(rows, ("target", "ref", "commit", "verdict")) + ("\n" + table(details) if details else "")
    return "\n".join([text, *filter(None, drifts)])


def dco_result(r) -> str:
    head = (f"{r.branch}: {r.checked} commit(s) checked, {r.skipped_merges} merge(s) skipped"
            + (f"; sign-offs added, old tip kept at {r.backup_ref}" if r.fixed else ""))
    if r.ok:
        return head + "; all signed off"
    rows = [(v.commit[:12], v.subject[:50], v.reason) for v in r.violations]
    return head + f"; {len(r.violations)} violation(s):\n" + table(rows, ("commit", "subject", "problem"))


def export_result(r) -> str:
    waiver = (f"\nthe computed waiver edit (recomputed at apply, not part of the set): {r.waiver_patch}"
              if r.waiver_patch else "")
    if r.up_to_date:
        return f"patches/{r.target} is up to date with {r.branch} ({len(r.written)} patch(es), byte-identical)" + waiver
    verb = "differs from" if r.checked_only else "updated from"
    lines = [f"patches/{r.target} {verb} {r.branch}:"]
    lines += [f"  changed: {n}" for n in r.changed] + [f"  removed: {n}" for n in r.removed]
    return "\n".join(lines) + waiver


def short_ref(ref: str) -> str:
    """refs/tags/v1.3.0rc25 -> v1.3.0rc25, refs/remotes/origin/main -> origin/main."""
    for prefix in ("refs/tags/", "refs/remotes/", "refs/heads/"):
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref


def waiver_edit(n) -> list[str]:
    """The set's waives.txt edit as -/+ lines with their line numbers, before and after (#27 item 4:
    'edit: 1 line(s) skipped ...' said a line was edited, not that one line became three)."""
    if n is None or not n.changed:
        return []
    before, after = n.before.splitlines(), n.after.splitlines()
    def number(lines: list[str], text: str) -> str:
        return str(lines.index(text) + 1) if text in lines else "?"
    return ([f"  -{number(before, t)}: {t}" for t in n.removed]
            + [f"  +{number(after, t)}: {t}" for t in n.added])


def waivers_result(r: WaiverReport) -> str:
    ref = short_ref(r.ref)
    lines = [f"waivers {r.target}: {r.waives_file}"]
    for title, rows in ((f"at {ref} (upstream, without the set)", r.before), ("after the set", r.after)):
        lines.append(f"{title}:")
        for tw in rows:
            # a stack of several fixes: each test says whose it is
            test = tw.test + (f" (fix {', '.join(tw.fixes) or 'none: the waiver intent'})" if r.stack > 1 else "")
            if not tw.lines:
                lines.append(f"  {test}: runs (no line waives it)")
            for h in tw.lines:
                lines.append(f"  {test}: waived by line {h['line']} at the {h['level']} level "
                             f"in {', '.join(h['stages'])}: {h['text']}")
    if r.narrowing is not None:
        n = r.narrowing
        a, b = len(n.removed), len(n.added)
        size = f"; {a} line{'s' * (a != 1)} become{'s' * (a == 1)} {b}:" if n.changed else ""
        lines += [f"edit: {n.why}{size}", *waiver_edit(n)]
    return "\n".join(lines)


def workflow_result(r) -> str:
    def state(path: str) -> str:
        changed = path in r.changed_files
        return ("stale: make workflow would change it" if changed else "up to date") if r.check else \
            ("written" if changed else "unchanged")
    out = [f"{r.path}: {state(r.path)}; jobs {', '.join(r.jobs)}; targets {', '.join(r.targets)}"]
    if r.config_path:
        out.append(f"{r.config_path}: {state(r.config_path)}; self-hosted runner labels for actionlint: "
                   f"{', '.join(r.runner_labels) or 'none'}")
    if r.steps_left_out:
        out.append(f"left out (no such make target yet): {', '.join(r.steps_left_out)}")
    return "\n".join(out)


def summary_result(r) -> str:
    skipped = (f"\nskipped, not reports ({len(r.skipped)}): " + ", ".join(r.skipped[:5])
               + (f" and {len(r.skipped) - 5} more (summary.json lists them)" if len(r.skipped) > 5 else "")) if r.skipped else ""
    return r.markdown.rstrip("\n") + skipped + "".join(f"\nwritten: {p}" for p in r.written)


def _expected(expected: dict) -> list[str]:
    """A fix's declared delta, per test file, the modes that declare the same said once."""
    def counts(tree: dict) -> str:
        return ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in tree.items() if n) or "no tests"
    modes: dict[str, list[str]] = {}
    for mode, files in expected.items():
        said = "; ".join(f"{f}: {counts(e.get('unpatched', {}))} -> {counts(e.get('patched', {}))}"
                         for f, e in sorted(files.items()))
        modes.setdefault(said, []).append(mode)
    return [f"expected delta ({', '.join(m)}): {said}" for said, m in modes.items()] or ["expected delta: none declared"]


def targets(sets) -> str:
    """The sets as a table, then what each carries: each fix's title, bug and expected delta (#27 item 4)."""
    out = [table([(s.target, s.upstream.ref, len(s.patches), s.branch) for s in sets],
                 ("target", "ref", "patches", "branch"))]
    out += [""] if sets else []
    for s in sets:
        for f in s.fixes:
            pad = " " * (len(s.target) + 2)
            out += [f"{s.target}  fix {f.id}: {f.title}", f"{pad}bug: {f.bug}",
                    *(pad + line for line in _expected(f.expected))]
    return "\n".join(out)


def miniature_result(r) -> str:
    return f"miniature upstream at {r.path} (tag {r.tag}, branch {r.branch}" + (f", variant {r.variant})" if r.variant else ")")


def lint_line(lint: dict | None) -> str:
    """What the lint a PR was answered from did, in one line: ran or reused, what did not run."""
    if lint is None:
        return "lint: none ran (the coding guidelines item is answered from nothing)"
    if not lint.get("config_found", True):
        return "lint: upstream has no .pre-commit-config.yaml at the ref; no hook ran"
    ran, failing = lint.get("ran", []), {f["hook"] for f in lint.get("failures", [])}
    how = "reused the verdict of an earlier run on exactly these files" if lint.get("memo") else \
        f"ran upstream's hooks on {len(lint.get('paths', []))} file(s)"
    verdict = f"{len(failing)} of {len(ran)} hooks fail ({', '.join(sorted(failing))})" if failing else \
        f"{len(ran)} hooks pass"
    not_run = lint.get("not_run", {})
    return (f"lint: {how}: {verdict}" + (f"; not run here: {', '.join(sorted(not_run))}" if not_run else "")
            + (f"; report: {lint['report']}" if lint.get("report") else ""))


def pr_result(r) -> str:
    if isinstance(r, str):  # the demo's "skipped: ..." when no sign-off identity is set
        return r
    others = [a for a in r.authors if a != r.signer]
    by = (f"; authored by {', '.join(others)}" + ("" if r.author_given else " (the patches' own)")) if others else ""
    lines = [f"branch {r.branch} {r.tip[:12]}: {len(r.messages)} commits, signed off by {r.signer}{by}",
             lint_line(r.lint),
             f"body: {r.template}, checked against upstream's title and checklist rules",
             f"written to {r.out_dir}: title.txt, body.md" + (", lint.json" if r.lint else "")
             + f", patches/ ({len(r.patches)})", *(f"note: {n}" for n in r.notes)]
    text = "\n".join(lines) + f"\n\n{r.title}\n\n{r.body}"
    if r.open_with:
        where = "from your fork" if r.fork_known else "from your fork (<you>: your GitHub user)"
        text += f"\nto open it {where}:\n" + "".join(f"  {c}\n" for c in r.open_with)
    return text


def container_result(r) -> str:
    return (f"{r.image}  ({r.builder}, image {r.image_id[:19]})\nbase {r.base} "
            f"{r.labels['org.opencontainers.image.base.digest']}\n"
            + "\n".join(f"  overlaid {f.path}" for f in r.files) + f"\ncontext: {r.context}")


def push_result(dest: str) -> str:
    return f"pushed {dest}"


def unapply_result(r) -> str:
    where = "is back on" if getattr(r, "moved", True) else "stays on"
    return "\n".join([f"{r.target}: {r.checkout} {where} {r.restored}; branch {r.branch} removed",
                      *_found(getattr(r, "notes", []))])


# What exit 1 means for each command whose exit 1 is a verdict (#27 item 4): the command ran, and
# what it found is above; one line on stderr says so, beside make's own `*** Error 1`.
_EXIT_1 = {
    "radar": lambda r: "the set's status changed between SINCE and UNTIL (verdict and to do above)",
    "delta": lambda r: "the measured delta does not match what the set declares (above)",
    "lint": lambda r: f"{len(r.failures)} hook(s) fail on the series' files (above)" if r.config_found
    else "not linted: upstream has no pre-commit config at the ref",
    "dco": lambda r: f"{len(r.violations)} commit(s) without a valid sign-off (above)",
    "check-export": lambda r: f"patches/{r.target} is out of date with {r.branch} (above)",
    "workflow": lambda r: "the workflow files are stale (above)",
    "summary": lambda r: "not every row is as declared (its verdict in bold, or flagged, above)",
    "demo": lambda r: "a step's verdict is not the declared one (above)",
}


def verdict_line(command: str, result) -> str:
    """The line that says an exit 1 is a verdict, not a failure to run."""
    said = _EXIT_1.get(command)
    return f"exit 1 is {command}'s verdict, not a failure to run: " + (said(result) if said else "see above")


# How each kind of result reads; the demo's sections name theirs.
RESULTS = {"apply": apply_result, "check": check_results, "waivers": waivers_result,
           "pr": pr_result}


# -- the user's vocabulary: hints said as make variables or as flags ------------------------------
_C_ESCAPES = {"\n": "n", "\t": "t", "\r": "r", "\a": "a", "\b": "b", "\f": "f", "\v": "v"}


def shell_word(value: str) -> str:
    """value as one shell word that reads back byte for byte, on one line.

    shlex.quote where that is printable; otherwise ANSI-C quoting ($'h\\nb', bash, zsh,
    ksh and POSIX sh 2024), which spells control characters and undecodable bytes (kept by
    Python as surrogate escapes) as escapes: a newline printed raw would break the one-line
    error, and the hint would name another path (issue #17 item 13).
    """
    if value.isprintable() and not any("\udc80" <= c <= "\udcff" for c in value):
        return shlex.quote(value)
    out = []
    for byte in os.fsencode(value):
        c = chr(byte)
        if c in "\\'":
            out.append("\\" + c)
        elif 32 <= byte < 127:
            out.append(c)
        elif c in _C_ESCAPES:
            out.append("\\" + _C_ESCAPES[c])
        else:
            out.append(f"\\x{byte:02x}")
    return "$'" + "".join(out) + "'"


@dataclass(frozen=True)
class Voice:
    """How the user called us, so that a hint is said their way and runs as printed.

    via_make: through the Makefile (it sets PATCHKIT_VIA_MAKE=1): make variables, else flags.
    given: the settings of this invocation as the user gave them ({setting: value}).
    options: every command's settings ({command: {setting: (flag, make variable or None)}}),
    from the CLI's command table.
    """

    via_make: bool
    command: str
    given: dict[str, Any]
    options: dict[str, dict[str, tuple[str, str | None]]]
    prefix: tuple[str, ...] = ()  # global flags to repeat (--root)

    def _spelling(self, setting: str, command: str | None = None) -> tuple[str, str | None]:
        for cmd in (command or self.command, *self.options):
            if setting in self.options.get(cmd, {}):
                return self.options[cmd][setting]
        return "--" + setting.replace("_", "-"), None

    def name(self, setting: str) -> str:
        """A setting as the user sets it: TRTLLM_SRC through make, --src otherwise."""
        flag, make = self._spelling(setting)
        return make if self.via_make and make else flag

    def command_line(self, command: str, changes: Sequence[tuple[str, Any]]) -> str:
        """The command with the user's own values and the changes, in their vocabulary."""
        accepted = self.options.get(command, {})
        merged = {k: v for k, v in self.given.items() if k in accepted and v not in (None, False, [], "")}
        # Ask: the user's own value when they gave one, else a place for it
        merged.update({k: (merged.get(k) or f"<{v.what}>") if isinstance(v, Ask) else v for k, v in changes})
        merged = {k: v for k, v in merged.items() if v is not False}  # False: that setting left out
        # In the command's own order of settings, then anything it does not list.
        values = {k: merged[k] for k in [*accepted, *merged] if k in merged}
        spelled = {k: self._spelling(k, command) for k in values}
        if self.via_make and all(make for _flag, make in spelled.values()):
            return " ".join(["make", command] + [f"{spelled[k][1]}={shell_word('1' if v is True else str(v))}"
                                                 for k, v in values.items()])
        words = ["patchkit", *map(shell_word, self.prefix), command]
        for k, v in values.items():
            for one in (v if isinstance(v, (list, tuple)) else [v]):
                if one is True:
                    words.append(spelled[k][0])
                elif str(one).startswith("-") or shell_word(str(one)).startswith("$'"):
                    # `--src -d` reads -d as an option: glue it on (and $'...' the way it was given)
                    words.append(f"{spelled[k][0]}={shell_word(str(one))}")
                else:
                    words += [spelled[k][0], shell_word(str(one))]
        return " ".join(words)

    def hint(self, h: Hint) -> str:
        if h.command is None and h.settings and all(v is None for _, v in h.settings):
            # "choose another" a value the user gave; "set" one they did not (FORK, SIGNOFF)
            verb = "choose another" if any(self.given.get(k) not in (None, False, "") for k, _ in h.settings) else "set"
            return f"{verb} {', '.join(self.name(k) for k, _ in h.settings)}" + (f" {h.also}" if h.also else "")
        return f"run: {self.command_line(h.command or self.command, h.settings)}" + (f" ({h.also})" if h.also else "")

    def error(self, exc: UserError) -> str:
        """The one line for a UserError: the setting it is about, the facts, what to do next."""
        text = f"{self.name(exc.setting)}: {exc.message}" if exc.setting else exc.message
        return text + (f"; {self.hint(exc.hint)}" if exc.hint else "")


def lint_result(r) -> str:
    """make lint: one line per failing hook (file, hook id, what it wants), then who ran and who did not."""
    head = f"lint {r.target} on {r.upstream_ref} {r.upstream_commit[:12]}: {len(r.paths)} file(s) the series changes"
    if not r.config_found:
        return "\n".join([head, f"upstream has no .pre-commit-config.yaml at {r.upstream_ref}: no hook ran",
                          f"verdict: not linted; report: {r.report}"])
    lines = [head]
    if r.rewritten:
        lines.append("FIX rewrote: " + ", ".join(r.rewritten))
    lines += [table([(f.file, f.hook, f.wants) for f in r.failures])] if r.failures else []
    lines.append("ran: " + (", ".join(f"{h} ({r.tools[h]})" if h in r.tools else h for h in r.ran) or "none"))
    lines += [f"not run here: {h} ({why})" for h, why in sorted(r.not_run.items())]
    if r.failures:
        verdict = f"{len(r.failures)} failing hook(s)"
    elif r.tool_missing:
        verdict = f"not checked: the pinned tools of {', '.join(r.tool_missing)} are missing here"
    elif not r.checked:
        verdict = "not checked: no hook that selects these files could run here"
    else:
        verdict = "every hook that ran passes"
    if r.memo:
        lines.append("(the verdict of an earlier run on exactly these files, config, settings and tools)")
    lines.append(f"verdict: {verdict}; report: {r.report}")
    return "\n".join(lines)


RESULTS["lint"] = lint_result

"""Turn result objects into short aligned tables for people, or JSON for machines."""
from __future__ import annotations

import dataclasses
import datetime
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import Hint, UserError


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


def apply_result(r) -> str:
    if r.already_applied:
        return (f"{r.target}: already applied on branch {r.branch} ({r.tip[:12]}) in {r.checkout}; nothing changed")
    lines = [f"{r.target}: {r.base_ref} {r.base[:12]} -> branch {r.branch} {r.tip[:12]}"
             + (" (partial clone)" if r.cloned else ""), outcomes(r.outcomes)]
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
    for r in results:
        rows.append((r.target, r.ref, r.base[:12] if r.base else "-", r.verdict))
        for o in r.outcomes:
            said = [o.drift.one_line()] if o.drift else []
            said += [off.one_line() for off in o.offsets]
            details.append((f"  {r.target}", o.patch.name, WORDS.get(o.status, o.status), "; ".join(said)))
        drifts += [drift_report([o]) for o in r.outcomes if o.status == "conflict" and o.drift]
        if r.upstream_fix is not None:
            fx = r.upstream_fix
            drifts.append(f"{r.target}: {fx.summary()}" + (f"\n{r.target}: to do: {fx.advice()}" if fx.fixed else ""))
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


# -- the user's vocabulary: hints said as make variables or as flags ------------------------------
# Each setting of the library (a command's parameter) and the make variable that sets it.
MAKE_VARIABLES = {
    "target": "TRTLLM", "src": "TRTLLM_SRC", "url": "TRTLLM_URL", "threeway": "THREEWAY", "mode": "MODE",
    "report": "REPORT", "branch": "BRANCH", "signoff": "SIGNOFF", "fix": "FIX", "base": "BASE",
    "builder": "BUILDER", "dest": "DEST", "registry": "REGISTRY", "tls_verify": "TLS_VERIFY",
}


@dataclass(frozen=True)
class Voice:
    """How the user called us, so that a hint is said their way and runs as printed.

    via_make: through the Makefile (it sets PATCHKIT_VIA_MAKE=1): make variables, else flags.
    given: the settings of this invocation as the user gave them ({setting: value}).
    options: every command's settings and their flags ({command: {setting: flag}}).
    """

    via_make: bool
    command: str
    given: dict[str, Any]
    options: dict[str, dict[str, str]]
    prefix: tuple[str, ...] = ()  # global flags to repeat (--root)

    def name(self, setting: str) -> str:
        """A setting as the user sets it: TRTLLM_SRC, or --src."""
        if self.via_make and setting in MAKE_VARIABLES:
            return MAKE_VARIABLES[setting]
        flags = next((o[setting] for o in self.options.values() if setting in o), None)
        return flags or setting

    def command_line(self, command: str, changes: Sequence[tuple[str, Any]]) -> str:
        """The command with the user's own values, changes applied, in their vocabulary."""
        accepted = self.options.get(command, {})
        values = {k: v for k, v in self.given.items() if k in accepted and v not in (None, False, [], "")}
        values.update(dict(changes))
        if self.via_make:
            words = ["make", command]
            for k, v in values.items():
                if k in MAKE_VARIABLES:
                    words.append(f"{MAKE_VARIABLES[k]}={shlex.quote('1' if v is True else str(v))}")
            return " ".join(words)
        words = ["patchkit", *map(shlex.quote, self.prefix), command]
        for k, v in values.items():
            flag = accepted.get(k, "--" + k.replace("_", "-"))
            for one in (v if isinstance(v, (list, tuple)) else [v]):
                words += [flag] if one is True else [flag, shlex.quote(str(one))]
        return " ".join(words)

    def hint(self, h: Hint) -> str:
        also = f" ({h.also})" if h.also else ""
        if h.command is None and h.settings and all(v is None for _, v in h.settings):
            return f"choose another {', '.join(self.name(k) for k, _ in h.settings)}" + (f" {h.also}" if h.also else "")
        return f"run: {self.command_line(h.command or self.command, h.settings)}" + also

    def error(self, exc: UserError) -> str:
        """The one line for a UserError: the setting it is about, the facts, what to do next."""
        text = f"{self.name(exc.setting)}: {exc.message}" if exc.setting else exc.message
        return text + (f"; {self.hint(exc.hint)}" if exc.hint else "")

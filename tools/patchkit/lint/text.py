"""make lint's text: one line per failing hook, then what ran and what did not, and the verdict."""
from __future__ import annotations

from ..text.table import table

def lint_result(r) -> str:
    """make lint: one line per failing hook (file, hook id, what it wants), then who ran and who did not."""
    head = f"lint {r.target} on {r.upstream_ref} {r.upstream_commit[:12]}: {len(r.paths)} file(s) the series changes"
    up = [f"upstream: {r.view.said()}"] if getattr(r, "view", None) else []
    if not r.config_found:
        return "\n".join([head, *up, f"upstream has no .pre-commit-config.yaml at {r.upstream_ref}: no hook ran",
                          f"verdict: not linted; report: {r.report}"])
    lines = [head, *up]
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

"""make check's text: a row per set with its verdict, a row per patch (naming its fix in a stack
of several), then the drift, wheel-build and fixed-upstream notes."""
from __future__ import annotations

from .text.table import table

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
            + f" (compiled into the wheel: make wheel TRTLLM={r.target} builds it, make container carries it)"
            for f in r.fixes if f.needs_wheel_build]
        if r.upstream_fix is not None:
            fx = r.upstream_fix
            drifts.append(f"{r.target}: {fx.summary()}" + (f"\n{r.target}: to do: {fx.advice()}" if fx.fixed else ""))
    drifts += [f"{r.target}: {r.note}" for r in results if r.base is None and r.note]  # how to fetch it
    # which upstream commit each set was judged on, and how fresh that view is (#33 item 4)
    drifts = [f"{r.target}: upstream {r.view.said()}" for r in results if r.view is not None] + drifts
    text = table(rows, ("target", "ref", "commit", "verdict")) + ("\n" + table(details) if details else "")
    return "\n".join([text, *filter(None, drifts)])

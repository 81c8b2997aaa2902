"""make waivers' text: which waiver lines skip the set's tests at its ref and after the set, and
the set's edit of waives.txt as -/+ lines."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..text.words import shown_ref

if TYPE_CHECKING:
    from .report import WaiverReport

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
    ref = shown_ref(r.ref)
    lines = [f"waivers {r.target}: {r.waives_file}", *([f"upstream: {r.view.said()}"] if r.view else [])]
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

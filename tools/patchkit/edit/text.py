"""How the verbs that edit a stack read (make backport, new-fix, drop, move, new-set): the
new stack's patches, what a fix's tests measured, and what changed in patches/<set>/."""
from __future__ import annotations

from collections.abc import Sequence

from ..text.table import table


def counts(c: dict) -> str:
    return ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in c.items() if n) or "nothing collected"


def stack_table(rows: Sequence[tuple[str, str, str]]) -> str:
    """(patch file, fix id, how it applied) of the new stack."""
    return table(list(rows), ("patch", "fix", "on the ref"))


def tests_lines(fix: str, expected: dict, unfenced: str, tests_ran: str) -> list[str]:
    """A fix's tests as measured (without it -> with the stack), or why they were not run."""
    if unfenced:
        return [f"tests of {fix}: not run: no sandbox here ({unfenced}); make delta measures them",
                table([(t, "not measured" if e.get("not_measured") else "not run here") for t, e in expected.items()])]
    if not expected:
        return []
    return [f"tests of {fix}, source mode, run {tests_ran.removeprefix('here, ')} (without it -> with the stack):",
            table([(t, "not run here" if e.get("not_run") else
                    f"{counts(e.get('unpatched', {}))} -> {counts(e.get('patched', {}))}") for t, e in expected.items()])]


def written_line(target: str, written: Sequence[str], removed: Sequence[str], unchanged: str) -> str:
    return f"patches/{target}: " + (f"{len(written)} written, {len(removed)} removed" if written or removed
                                    else unchanged)


def view_line(view) -> list[str]:
    """Which upstream commit the verb judged, and how fresh that view is (fresh.View)."""
    return [f"upstream: {view.said()}"] if view is not None else []

"""make apply's and make unapply's text: the base and the branch, each patch's result, what was
skipped, merged 3-way or applied at an offset."""
from __future__ import annotations

from .text.table import table

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
    # which upstream commit apply judged, and how fresh that view is (#33 item 4)
    found = _found(getattr(r, "notes", [])) + ([f"upstream: {r.view.said()}"] if getattr(r, "view", None) else [])
    if getattr(r, "checked_out_again", False):
        return "\n".join([f"{r.target}: branch {r.branch} ({r.tip[:12]}) was already built; checked it out again "
                          f"in {r.checkout}", *found])
    if r.already_applied and r.session is not None:
        return "\n".join([f"{r.target}: the git am -3 session an earlier make apply THREEWAY=keep left is under way "
                          f"on {r.branch} in {r.checkout}; nothing changed", *found, *session_lines(r.session)])
    if r.already_applied:
        return "\n".join([f"{r.target}: already applied on branch {r.branch} ({r.tip[:12]}) in {r.checkout}; "
                          f"nothing changed", *found])
    lines = [f"{r.target}: {r.base_ref} {r.base[:12]} -> branch {r.branch} {r.tip[:12]}"
             + (" (partial clone)" if r.cloned else ""), *found, outcomes(r.outcomes)]
    if r.rebuilt:
        lines.append(f"rebuilt: {r.branch} was apply's own from an earlier apply ({r.rebuilt[:12]}), untouched since; "
                     f"it now holds this apply")
    if r.session is not None:
        return "\n".join(lines + session_lines(r.session))
    if r.waiver is not None:
        lines.append(f"waivers: {r.waiver.why}"
                     + (f"; committed on top of the series as {r.waiver_commit[:12]} (computed at every apply, "
                        f"never part of the set: make export leaves it out)" if r.waiver_commit else ""))
    ups = [o.patch.name for o in r.outcomes if o.status == "already upstream"]
    three = [o.patch.name for o in r.outcomes if o.status == "3-way"]
    if ups:
        lines.append("skipped, already upstream: " + ", ".join(ups))
    if three:
        lines.append("needed a 3-way merge: " + ", ".join(three))
    lines += [f"at an offset: {o.patch.name}: {off.one_line()}" for o in r.outcomes for off in o.offsets]
    return "\n".join(lines)


def session_lines(s) -> list[str]:
    """THREEWAY=keep: where the git am -3 session stopped and what to do there (the commands
    themselves follow as the result's hints)."""
    n = len(s.files)
    return [f"the git am -3 session stopped at patch {s.at} of {s.of} ({s.patch}), merged from {s.base[:12]}, where "
            f"the series applies as written: conflict markers in {n} file{'s' * (n != 1)}:",
            *(f"  {f}" for f in s.files),
            "edit each to the result you want (the patch's side is below =======), then run the first line below; "
            "the second gives the session up"]


def unapply_result(r) -> str:
    where = "is back on" if getattr(r, "moved", True) else "stays on"
    return "\n".join([f"{r.target}: {r.checkout} {where} {r.restored}; branch {r.branch} removed",
                      *_found(getattr(r, "notes", []))])

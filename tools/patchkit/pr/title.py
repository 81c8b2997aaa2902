"""The PR title, checked against upstream's title rule (enforced there by a workflow)."""
from __future__ import annotations

import re

from ..errors import BadInput
from ..model import Fix, PatchSet

TITLE_RULE = re.compile(r"^(\[(None|[A-Z0-9]+-[0-9]+|#[0-9]+|https:\/\/nvbugs\/[0-9]+)\]) *(\[[a-z0-9]+\]) (([^ ].*)?[^ ])$")


def ticket(ps: PatchSet | Fix) -> str:
    """The title's ticket for the set's bug: '#19514' for a GitHub issue URL, an NVBugs URL
    or a JIRA key (ABC-123) as is, else 'None'. The one home of this rule: the waiver
    commit's subject uses it too."""
    bug = ps.bug.strip()
    m = re.fullmatch(r"https://github\.com/[^/]+/[^/]+/issues/(\d+)/?", bug)
    if m:
        return f"#{m.group(1)}"
    if re.fullmatch(r"https://nvbugs/\d+|[A-Z0-9]+-\d+|#\d+", bug):
        return bug
    return "None"


def title(ps: PatchSet, kind: str = "fix") -> str:
    text = f"[{ticket(ps)}][{kind}] {ps.title}"
    check(text)
    return text


def check(text: str) -> None:
    if not TITLE_RULE.match(text):
        raise BadInput(f"PR title {text!r} does not match upstream's rule "
                       "'[ticket][type] Summary' (ticket: None, ABC-123, #123 or an nvbugs URL; type lowercase)")

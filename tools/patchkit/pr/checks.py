"""Upstream's PR checks, re-stated in our own code: the title rule and the checklist rule.

Upstream runs .github/scripts/pr_title_check.py on the title and
.github/scripts/pr_checklist_check.py on the body (with ENFORCE_PR_HAS_CHECKLIST on).
A body passes when every task line (`- [ ]` or `* [ ]`, anywhere in the body, indented or
not) is ticked (`[x]`/`[X]`) or has its whole text struck through (`~~...~~`), and, with
enforcement, the `## PR Checklist` header, at least one task and the final box
("Please check this after reviewing the above items...") are present. make pr runs these
before it writes anything, so a body that upstream's CI would reject never leaves us.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .title import TITLE_RULE

# A task line as upstream's checker reads it: bullet, one box, then the text.
TASK = re.compile(r"^\s*[-*]\s+\[( |x|X)\]\s*(.*)")
HEADER = re.compile(r"^##\s+PR\s+Checklist", re.IGNORECASE | re.MULTILINE)
FINAL_BOX_TEXT = "Please check this after reviewing the above items"
FINAL_BOX = re.compile(r"^\s*[-*]\s+\[( |x|X)\]\s+" + re.escape(FINAL_BOX_TEXT), re.MULTILINE)


@dataclass(frozen=True)
class Task:
    line: int  # 1-based line of the body
    checked: bool
    text: str

    @property
    def struck(self) -> bool:
        """Struck through as a whole: upstream's 'not applicable'."""
        t = self.text.strip()
        return t.startswith("~~") and t.endswith("~~")

    @property
    def resolved(self) -> bool:
        return self.checked or self.struck


def tasks(body: str) -> list[Task]:
    """Every task line of the body, in order."""
    out = []
    for n, line in enumerate(body.splitlines(), 1):
        m = TASK.match(line)
        if m:
            out.append(Task(n, m.group(1) in "xX", m.group(2)))
    return out


def checklist_problems(body: str, enforce: bool = True, reviewer_left: bool = False) -> list[str]:
    """Why upstream's checklist check would fail on this body (empty when it passes).
    reviewer_left: the final box, a person's attestation, is left open for the reviewer of
    record (make pr's body): not a problem until they have reviewed the items."""
    if enforce:
        if not HEADER.search(body):
            return ["no '## PR Checklist' header"]
        if not FINAL_BOX.search(body):
            return [f"no final box '- [ ] {FINAL_BOX_TEXT} as appropriate for this PR.'"]
    found = tasks(body)
    if enforce and not found:
        return ["no checklist item"]
    return [f"line {t.line}: unresolved item '{_short(t.text)}'" for t in found
            if not t.resolved and not (reviewer_left and t.text.startswith(FINAL_BOX_TEXT))]


def title_problems(title: str) -> list[str]:
    """Why upstream's title check would fail on this title (empty when it passes)."""
    if not title.strip():
        return ["the title is empty"]
    if TITLE_RULE.fullmatch(title):
        return []
    return [f"{title!r} does not match '[ticket][type] Summary' (ticket: None, ABC-123, #123 or "
            "https://nvbugs/<id>; type: lowercase letters and digits; one space before a summary "
            "that neither starts nor ends with a space)"]


def _short(text: str, most: int = 72) -> str:
    text = " ".join(text.split())
    return text if len(text) <= most else text[:most - 3] + "..."

"""Answer the items of upstream's PR checklist, honestly, from what was measured.

Each item of the template's checklist is matched to a question we can settle from facts
(the delta report, the series' files, the checkout at the ref); an item that no fact
settles takes the set author's answer from patchset.yaml (pr.checklist), and is left
open otherwise. An item is ticked only when done, struck through only when it does not
apply, and a fact that says "not done" is never overridden by a declaration. The final
box ("Please check this after reviewing the above items...") attests what a person did,
the review of the items above: it is never ticked here (#33 item 7), and a line under it
says that the reviewer of record ticks it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from ..model import ChecklistAnswer
from .checks import FINAL_BOX_TEXT, TASK

DONE, NA, OPEN = "done", "n/a", "open"


@dataclass(frozen=True)
class Facts:
    """What the checklist's questions are settled from."""

    explained: bool  # the description says what the fix does and why (from its commit messages)
    new_tests: tuple[str, ...]  # added or declared regression tests that fail without the fix and pass with it
    mode: str  # the delta report's mode
    neighbours: dict[str, bool]  # existing tests declared next to the change -> passed with the fix, none failing
    neighbours_why: dict[str, str] = field(default_factory=dict)  # why one did not run
    dependency_files: tuple[str, ...] = ()  # files of the series that declare dependencies
    codeowners_changed: bool = False
    new_dirs: tuple[str, ...] = ()  # directories the series creates
    docs_changed: tuple[str, ...] = ()  # files under docs/ the series changes
    docs_phrases: tuple[str, ...] = ()  # the set's phrases for docs that describe the changed behaviour
    docs_describing: tuple[str, ...] = ()  # files under docs/ at the ref with one of those phrases
    ref: str = ""
    # make lint's report for this series at this commit (None: it did not run): upstream's own
    # pre-commit hooks are what "coding guidelines" can be measured by.
    lint: dict | None = None


@dataclass(frozen=True)
class Answer:
    item: str  # the item's text as the template has it
    state: str  # DONE, NA or OPEN
    why: str
    by: str  # "measured", "declared" or "" (nobody settled it)


def _existing_tests(f: Facts) -> tuple[str, str] | None:
    if not f.neighbours:
        return None
    if f.mode != "container":
        return OPEN, (f"only a container-mode delta shows it; this report is {f.mode} mode, where "
                      + "; ".join(f"{n}: {f.neighbours_why.get(n) or 'not passed'}" for n in sorted(f.neighbours)))
    bad = sorted(n for n, ok in f.neighbours.items() if not ok)
    if bad:
        return OPEN, f"not every existing test passed with the fix in container mode: {', '.join(bad)}"
    return DONE, f"{', '.join(sorted(f.neighbours))} passed with the fix, in container mode"


def _new_tests(f: Facts) -> tuple[str, str] | None:
    if f.new_tests:
        return DONE, f"{', '.join(f.new_tests)} fail without the fix and pass with it"
    return OPEN, "no regression test fails without the fix and passes with it"


def _dependencies(f: Facts) -> tuple[str, str] | None:
    if f.dependency_files:
        return None  # a scan is the author's to vouch for
    return NA, "the series changes no file that declares dependencies"


def _codeowners(f: Facts) -> tuple[str, str] | None:
    if f.codeowners_changed:
        return DONE, "the series updates .github/CODEOWNERS"
    if not f.new_dirs:
        return NA, "the series adds files only to existing directories, so ownership does not change"
    return None


def _docs(f: Facts) -> tuple[str, str] | None:
    stale = [d for d in f.docs_describing if d not in f.docs_changed]
    if stale:
        return OPEN, f"{', '.join(stale)} at {f.ref} describes the changed behaviour and the series does not update it: add that update to the series"
    if f.docs_describing:
        return DONE, f"the series updates {', '.join(f.docs_describing)}"
    if f.docs_changed:
        return DONE, f"the series updates {', '.join(f.docs_changed)}"
    if f.docs_phrases:
        return NA, f"no file under docs/ at {f.ref} describes the changed behaviour"
    return None


def _guidelines(f: Facts) -> tuple[str, str] | None:
    if f.lint is None:
        return OPEN, "make lint did not run on this series at this commit"
    if not f.lint.get("config_found", True):
        return OPEN, f"upstream has no .pre-commit-config.yaml at {f.ref}, so no hook could check the series"
    if f.lint.get("error"):
        return OPEN, f"make lint could not check the series: {f.lint['error']}"
    bad = f.lint.get("failures") or []
    if bad:
        # The command that mends it is said by the CLI, as the user runs lint (pr/branch.py).
        return OPEN, "upstream's pre-commit hooks fail: " + "; ".join(f"{x['file']} {x['hook']}" for x in bad)
    not_run = f.lint.get("not_run") or {}
    if not_run:  # a judge that could not run is "not checked", never "pass"
        return OPEN, ("not every upstream hook that selects the series' files ran here: "
                      + "; ".join(f"{h} ({why})" for h, why in sorted(not_run.items())))
    if not f.lint.get("ran"):
        return DONE, "none of upstream's pre-commit hooks selects the series' files"
    return DONE, "upstream's pre-commit hooks pass on the series' files: " + ", ".join(f.lint["ran"])


def _description(f: Facts) -> tuple[str, str] | None:
    if f.explained:
        return DONE, "the Description gives the fix's commit messages: what it changes and why"
    return None


# First match wins: the item's text (any case) -> the question that settles it.
RULES: tuple[tuple[re.Pattern[str], Callable[[Facts], tuple[str, str] | None]], ...] = (
    (re.compile(r"coding.?guidelines", re.I), _guidelines),
    (re.compile(r"existing tests|tests? (still )?pass|regress", re.I), _existing_tests),
    (re.compile(r"test cases?|tests? for new|new code paths?", re.I), _new_tests),
    (re.compile(r"dependenc", re.I), _dependencies),
    (re.compile(r"CODEOWNERS|ownership", re.I), _codeowners),
    (re.compile(r"documentation|\bdocs?\b", re.I), _docs),
    (re.compile(r"description|explain", re.I), _description),
)


def is_guidelines(item: str) -> bool:
    """Whether the item is the one make lint settles ("coding guidelines")."""
    return RULES[0][1] is _guidelines and bool(RULES[0][0].search(item))


def answer(item: str, facts: Facts, declared: tuple[ChecklistAnswer, ...], where: str = "patchset.yaml") -> Answer:
    """The answer to one item (not the final box)."""
    plain = re.sub(r"~~", "", item)
    for pattern, rule in RULES:
        if pattern.search(plain):
            got = rule(facts)
            if got is not None:
                return Answer(item, got[0], got[1], "measured")
            break
    for d in declared:
        if _words(d.item) in _words(plain):
            return Answer(item, DONE if d.answer == "done" else NA, d.why, "declared")
    return Answer(item, OPEN, f"nothing measured settles it; answer it under pr.checklist in {where}", "")


def _words(text: str) -> str:
    """Lowercase words, so that 'coding guidelines' matches CODING_GUIDELINES.md too."""
    return " ".join(re.split(r"[\s_\-]+", text.lower()))


def fill(text: str, facts: Facts, declared: tuple[ChecklistAnswer, ...],
         where: str = "patchset.yaml") -> tuple[str, list[Answer]]:
    """The checklist section's text with every item answered, and the answers in order."""
    lines = text.splitlines(keepends=True)
    answers: list[Answer] = []
    final: list[int] = []
    for i, line in enumerate(lines):
        m = TASK.match(line.rstrip("\n"))
        if not m:
            continue
        if m.group(2).startswith(FINAL_BOX_TEXT):
            final.append(i)
            continue
        a = answer(m.group(2).strip(), facts, declared, where)
        answers.append(a)
        lines[i] = _mark(line, m, a.state)
    for i in reversed(final):
        m = TASK.match(lines[i].rstrip("\n"))
        answers.append(Answer(m.group(2).strip(), OPEN, REVIEWER, ""))
        lines[i] = _mark(lines[i], m, OPEN)
        if not lines[i].endswith("\n"):
            lines[i] += "\n"
        lines.insert(i + 1, f"\n{REVIEWER_LINE}\n")
    return "".join(lines), answers


# The final box is a person's: what the body says under it, and the answer's why.
REVIEWER = "the reviewer of record ticks it after reviewing the items above: it attests what a person did"
REVIEWER_LINE = ("The last box is the reviewer of record's to tick, once they have reviewed the items above; "
                 "it is left open for them.")


def _mark(line: str, m: re.Match[str], state: str) -> str:
    """The task line with its box ticked, or its text struck through (N/A), or left open."""
    end = "\n" if line.endswith("\n") else ""
    head = line[:m.start(1)]  # indentation, bullet and '['
    text = m.group(2).strip()
    if state == DONE:
        return f"{head}x] {text}{end}"
    if state == NA:
        text = text.strip("~")
        return f"{head} ] ~~{text}~~{end}"
    return f"{head} ] {text}{end}"

"""Our re-statement of upstream's PR checks (.github/scripts/pr_checklist_check.py with
ENFORCE_PR_HAS_CHECKLIST on, and pr_title_check.py), on bodies and titles that pass and fail
there for each rule."""
from __future__ import annotations

import pytest

from patchkit.pr import checks

FINAL = "Please check this after reviewing the above items as appropriate for this PR."


def body(*items: str, header: str = "## PR Checklist", final: str = f"- [x] {FINAL}") -> str:
    return "\n".join(["@coderabbitai summary", "", "## Description", "", "Text.", "", header, "",
                      *items, final, "", "## GitHub Bot Help", ""])


@pytest.mark.parametrize("items", [
    ["- [x] Done."],
    ["- [X] Done, upper-case box."],
    ["* [x] A star bullet."],
    ["  - [x] Indented."],
    ["- [ ] ~~Not applicable.~~"],
    ["- [ ]   ~~Struck, with spaces around.~~  "],
    ["- [ ] ~~Struck~~ in two ~~parts~~"],  # starts and ends with ~~: upstream counts it as struck
    [],  # only the final box: still one item
])
def test_bodies_upstream_accepts(items):
    assert checks.checklist_problems(body(*items)) == []


@pytest.mark.parametrize("items, problem", [
    (["- [ ] Open."], "line 9: unresolved item 'Open.'"),
    (["* [ ] Open with a star."], "unresolved item 'Open with a star.'"),
    (["- [ ] ~~Half~~ struck."], "unresolved item '~~Half~~ struck.'"),
    (["- [ ] Struck at the end ~~only~~"], "unresolved item"),
    (["    - [ ] A nested open item."], "unresolved item 'A nested open item.'"),
])
def test_open_items_fail(items, problem):
    problems = checks.checklist_problems(body(*items))
    assert len(problems) == 1 and problem in problems[0]


def test_an_open_final_box_fails_like_any_item():
    problems = checks.checklist_problems(body("- [x] Done.", final=f"- [ ] {FINAL}"))
    assert problems == [f"line 10: unresolved item '{FINAL[:69]}...'"]


def test_every_open_item_is_listed():
    assert len(checks.checklist_problems(body("- [ ] One.", "- [x] Two.", "- [ ] Three."))) == 2


def test_items_anywhere_count_as_upstream_reads_the_whole_body():
    text = body("- [x] Done.") + "<details>\n\n- [ ] hidden in the bot help\n\n</details>\n"
    assert "unresolved item 'hidden in the bot help'" in checks.checklist_problems(text)[0]


def test_the_header_is_required_in_any_case():
    assert checks.checklist_problems(body("- [x] Done.", header="## pr checklist")) == []
    assert checks.checklist_problems(body("- [x] Done.", header="## Checklist")) == ["no '## PR Checklist' header"]
    assert checks.checklist_problems(body("- [x] Done.", header="### PR Checklist")) == ["no '## PR Checklist' header"]


def test_the_final_box_is_required():
    problems = checks.checklist_problems(body("- [x] Done.", final=""))
    assert problems and problems[0].startswith("no final box")
    # the text must follow the box after whitespace, as upstream's pattern says
    assert checks.checklist_problems(body(final=f"- [x] Note: {FINAL}"))[0].startswith("no final box")


def test_without_enforcement_only_open_items_matter():
    assert checks.checklist_problems("Just text.\n", enforce=False) == []
    assert checks.checklist_problems("- [ ] open\n", enforce=False) == ["line 1: unresolved item 'open'"]
    assert checks.checklist_problems("Just text.\n") == ["no '## PR Checklist' header"]


@pytest.mark.parametrize("title", [
    "[None][fix] Size the cross pool",
    "[#19514][fix] Size the cross pool",
    "[TRTLLM-1234][feat] Add a thing",
    "[https://nvbugs/1234567][fix] Fix it",
    "[None]  [chore] Spaces between the brackets are allowed",
    "[None][doc] x",
])
def test_titles_upstream_accepts(title):
    assert checks.title_problems(title) == []


@pytest.mark.parametrize("title", [
    "", "   ", "Fix the cross pool",
    " [None][fix] Leading space",
    "[none][fix] Lower-case None",
    "[trtllm-1][fix] Lower-case JIRA key",
    "[nvbugs/1234567][fix] Not the full URL",
    "[#][fix] No number",
    "[None][Fix] Upper-case type",
    "[None][fix-up] Hyphen in the type",
    "[None][fix]No space",
    "[None][fix]  Two spaces",
    "[None][fix] Trailing space ",
    "[None][fix] ",
    "[None] Missing type",
])
def test_titles_upstream_refuses(title):
    assert checks.title_problems(title)

"""The README guides and docs/ answers, and both stay true (#27): every command, make variable and
patchset.yaml key is documented, the docs name none that does not exist, the README's command
table is `make help`'s text, and its first ten minutes run as written."""
from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path

import pytest

import walkthrough
from helpers import ROOT
from patchkit import patchset, schema as S
from patchkit.cli import COMMANDS

DOCS = ROOT / "docs"
MAKEFILE = (ROOT / "Makefile").read_text()
# Variables of the Makefile's own plumbing, not settings a user gives.
PLUMBING = {"VENV", "SETUP", "TEST_SETUP", "HOOKS", "PATCHKIT", "PYTEST"}


def make_help() -> list[tuple[str, str]]:
    """(command, text) of every `name: ... ## text` line: what `make help` prints."""
    return re.findall(r"^([a-z-]+):.*## (.*)$", MAKEFILE, re.M)


def variables() -> set[str]:
    return set(re.findall(r"^([A-Z][A-Z0-9_]*)\s*\?=", MAKEFILE, re.M)) - PLUMBING


def pages() -> dict[Path, str]:
    return {p: p.read_text() for p in sorted(DOCS.rglob("*.md"))}


def code(text: str) -> list[str]:
    """The lines of fenced blocks and the inline code spans of a Markdown text."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```[a-z]*\n.*?^```", "", text, flags=re.M | re.S))
    return [line for b in blocks for line in b.splitlines()] + spans


def test_every_command_and_make_variable_is_documented():
    text = "\n".join(pages().values())
    missing = [f"make {name}" for name, _ in make_help() if f"make {name}" not in text]
    missing += [f"docs/commands/{name}.md" for name in COMMANDS if not (DOCS / "commands" / f"{name}.md").is_file()]
    missing += [f"`{v}`" for v in sorted(variables()) if f"`{v}`" not in text]
    for name, command in COMMANDS.items():  # each command's page names each of its settings
        page = DOCS / "commands" / f"{name}.md"
        said = page.read_text() if page.is_file() else ""
        missing += [f"{page.name}: {a.make or a.flag}" for a in command.args if f"`{a.make or a.flag}`" not in said]
    assert missing == [], f"undocumented: {missing}"


def wrong_names(texts: dict[Path, str]) -> list[str]:
    """Each `make X` in command position (a line's start, after `$ `, `&& `, `; `, `run: `) in a
    fenced block or code span whose X is no command, or whose `VAR=` is no variable of the Makefile."""
    commands, known = {n for n, _ in make_help()}, variables() | PLUMBING
    wrong = []
    for where, text in texts.items():
        for line in code(text):
            for m in re.finditer(r"(?:^\s*|\$ |&& |; |run: )make ((?:[A-Z][A-Z0-9_]*=\S+\s+)*)([a-z][a-z-]*)"
                                 r"((?:\s+[A-Z][A-Z0-9_]*=\S*)*)", line):
                if m[2] not in commands:
                    wrong.append(f"{where}: make {m[2]}")
                wrong += [f"{where}: {v}= (make {m[2]})" for v in re.findall(r"([A-Z][A-Z0-9_]*)=", m[1] + m[3])
                          if v not in known]
    return wrong


def test_the_docs_and_readme_name_no_command_or_variable_that_does_not_exist():
    """A `make X` that is no command, or a `VAR=` on a make line that is no variable of the
    Makefile, is a hint a reader copies and make ignores."""
    texts = {**{p.relative_to(ROOT): t for p, t in pages().items()}, Path("README.md"): (ROOT / "README.md").read_text()}
    assert wrong_names(texts) == []


def test_the_checker_sees_a_command_or_variable_that_does_not_exist():
    """The rule above can fail."""
    said = wrong_names({Path("x.md"): "run `make aply TRTLLM=main THREWAY=1`, then\n```sh\nmake apply THREWAY=1\n```\n"})
    assert said == ["x.md: THREWAY= (make apply)", "x.md: make aply", "x.md: THREWAY= (make aply)"]


def _documented_keys() -> set[str]:
    """The key paths docs/patch-sets.md's tables document: `<anything>` is a mapping's own key,
    `{a,b}` several keys at once."""
    out = set()
    tables = re.findall(r"^\| key \|.*\n\|[- |]+\n((?:\|.*\n)+)", (DOCS / "patch-sets.md").read_text(), re.M)
    for key in re.findall(r"^\| `([^`]+)` \|", "".join(tables), re.M):
        key = re.sub(r"<[^>]+>", "<name>", key)
        parts = [p.split(",") if p else [""] for p in re.split(r"\{([^}]*)\}", key)[1::2]]
        fixed = re.split(r"\{[^}]*\}", key)
        for choice in itertools.product(*parts):
            out.add("".join(f + c for f, c in itertools.zip_longest(fixed, choice, fillvalue="")))
    return out


def test_patch_set_docs_match_the_schema_the_loader_uses():
    """docs/patch-sets.md documents every key the loader accepts, in both forms of patchset.yaml
    and in waivers/<set>.yaml, and no key it refuses."""
    documented = _documented_keys()
    stack, waivers = S.keys(patchset.STACK_SCHEMA), S.keys(patchset.WAIVERS_SCHEMA)
    one_fix = S.keys(patchset.PATCHSET_SCHEMA)  # the fix's keys at the top level: documented under fixes[]
    missing = [k for k in stack + waivers if k not in documented]
    missing += [k for k in one_fix if k not in documented and f"fixes[].{k}" not in documented]
    assert missing == [], f"keys the loader accepts, not in docs/patch-sets.md: {missing}"
    accepted = set(stack) | set(waivers) | set(one_fix)
    assert sorted(documented - accepted) == [], "docs/patch-sets.md documents keys the loader refuses"


def _readme_table() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text().split("## Commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `make ([a-z-]+)` \| (.*) \|$", text, re.M)


def test_the_readme_command_table_is_make_help():
    """One source: the Makefile's `## ` lines are what `make help` prints and what the README's
    table says, row for row."""
    assert _readme_table() == make_help()
    said = subprocess.run(["make", "-s", "-C", str(ROOT), "help"], capture_output=True, text=True, check=True).stdout
    assert [tuple(line.split(None, 1)) for line in said.splitlines()] == make_help()


def test_the_readme_is_a_guide_a_newcomer_reads_in_minutes():
    """#27 item 1: at most about 1,200 words; the two commands first; the reference is docs/."""
    text = (ROOT / "README.md").read_text()
    assert len(text.split()) <= 1300, len(text.split())
    first = [line for line in text.splitlines() if line.startswith("make ")][:2]
    assert [line.split()[1] for line in first] == ["demo", "test"]
    for heading in ("## Your first ten minutes", "## The weekly loop", "## Commands", "## Exit codes", "## Read more"):
        assert heading in text
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link


def first_ten_minutes() -> list[walkthrough.Step]:
    """The README's walkthrough: the `$ ` lines of its console block, as a reader types them."""
    return walkthrough.steps((ROOT / "README.md").read_text(), after="## Your first ten minutes")


@pytest.mark.slow  # every command once, end to end through make: make test-slow (.ci/run)
def test_the_readme_first_ten_minutes_run_as_written(tmp_path):
    """#27 acceptance: the block a newcomer copies runs, step by step, each ending as the block
    shows (exit 0; radar's exit 1 is its verdict, shown as make's Error 1). It runs in the
    project (make's cwd) on a private copy of the sets (PATCHKIT_ROOT), its folder W in the
    test's temporary folder: nothing is written into the project's build/. #33 item 9: radar is
    shown where it teaches something, on a main that moved on, not on a tag against itself."""
    steps = first_ten_minutes()
    assert steps[0].command == "W=build/first" and len(steps) >= 9
    ran = walkthrough.run(steps, tmp_path)
    assert all(r.as_shown() for r in ran), walkthrough.report(ran)
    out = "".join(r.stdout for r in ran)
    assert "matches the declared delta" in out and "1 line becomes 3" in out
    [radar] = [r for r in ran if r.step.command.startswith("make radar")]
    assert radar.step.exit == 1 and "verdict: fixed upstream at" in radar.stdout and "(#20918)" in radar.stdout

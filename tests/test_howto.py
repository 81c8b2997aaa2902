"""The how-to pages run as written (#33 item 9): each page's console block is typed, step by
step, into one shell in the project, on the miniature, each step ending as the page shows
(exit 0, or the verdict or refusal the page teaches: make's `Error N`). And the how-tos come
before the reference: first in the docs' navigation, linked from the README."""
from __future__ import annotations

import re

import pytest

import walkthrough
from helpers import ROOT

HOWTO = ROOT / "docs" / "how-to"
PAGES = sorted(p.name for p in HOWTO.glob("*.md") if p.name != "index.md")
# A person's edit in the resolve page's `${EDITOR:-vi} <file>` step: each conflict resolved to
# the patch's side (below =======), as the page says.
EDITOR = r'''import re, sys
path = sys.argv[1]
text = open(path).read()
text, n = re.subn(r"^<<<<<<< [^\n]*\n.*?^=======\n(.*?)^>>>>>>> [^\n]*\n", r"\1", text, flags=re.M | re.S)
assert n, "no conflict markers in " + path
open(path, "w").write(text)
'''


@pytest.mark.slow  # every step of a page through make: make test-slow (.ci/run)
@pytest.mark.parametrize("page", PAGES)
def test_each_how_to_runs_as_written(page, tmp_path, monkeypatch):
    steps = walkthrough.steps((HOWTO / page).read_text())
    assert len(steps) >= 6
    editor = tmp_path / "editor"
    editor.write_text(f"#!{__import__('sys').executable}\n{EDITOR}")
    editor.chmod(0o755)
    # The page's upstream commit is made now, as a reader's is: after the sets' verified_on day,
    # where radar's range starts (the suite's fixed commit dates are that very day).
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    ran = walkthrough.run(steps, tmp_path, {"EDITOR": str(editor)})
    assert len(ran) == len(steps) - 1 and all(r.as_shown() for r in ran), walkthrough.report(ran)


def test_the_how_tos_come_before_the_reference():
    """In mkdocs' navigation the how-to section precedes the commands, every page is in it,
    and the README sends a newcomer there."""
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    assert nav.index("How-to") < nav.index("Commands")
    assert all(f"how-to/{p}" in nav for p in [*PAGES, "index.md"])
    assert "(docs/how-to/index.md)" in (ROOT / "README.md").read_text()
    for page in PAGES:
        assert re.search(rf"\]\(({re.escape(page)})\)", (HOWTO / "index.md").read_text()), page

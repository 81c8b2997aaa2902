"""The how-to pages run as written (#33 item 9): each page's console block is typed, step by
step, into one shell in the project, on the miniature, each step ending as the page shows
(exit 0, or the verdict or refusal the page teaches: make's `Error N`). And the how-tos come
before the reference: first in the docs' navigation, linked from the README."""
from __future__ import annotations

import json
import re

import pytest

import walkthrough
from helpers import ROOT

HOWTO = ROOT / "docs" / "how-to"
PAGES = sorted(p.name for p in HOWTO.glob("*.md") if p.name != "index.md")
# Pages that need images (a builder, the devel and release stand-ins): run by their own test
# beside the container tests' images (tests/container/test_howto_cpp.py).
IMAGES = {"get-a-cpp-fix-into-an-image.md"}
# A person's edit in a page's `${EDITOR:-vi} <file>...` step: the edits the page shows (a ```diff
# block's -/+ lines, a ```python block that opens with `# <path>`: the file's new content) in the
# files they are for; elsewhere each conflict resolved to the patch's side (below =======), as
# the resolve page says.
EDITOR = r'''import json, os, re, sys
edits = json.loads(os.environ["HOWTO_EDITS"])
for path in sys.argv[1:]:
    mine = [e for e in edits if path.endswith("/" + e["path"])]
    if mine:
        for e in mine:
            if "content" in e:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                open(path, "w").write(e["content"])
            else:
                text = open(path).read()
                assert text.count(e["old"]) == 1, (path, e["old"])
                open(path, "w").write(text.replace(e["old"], e["new"]))
        continue
    text = open(path).read()
    text, n = re.subn(r"^<<<<<<< [^\n]*\n.*?^=======\n(.*?)^>>>>>>> [^\n]*\n", r"\1", text, flags=re.M | re.S)
    assert n, "no conflict markers in " + path
    open(path, "w").write(text)
'''


def edits(page: str) -> list[dict]:
    """The edits a page shows for its editor step (see EDITOR)."""
    out = []
    for block in re.findall(r"^```diff\n(.*?)^```", page, re.M | re.S):
        path = re.search(r"^\+\+\+ b/(\S+)$", block, re.M).group(1)
        minus = [line[1:] for line in block.splitlines() if line.startswith("-") and not line.startswith("---")]
        plus = [line[1:] for line in block.splitlines() if line.startswith("+") and not line.startswith("+++")]
        out += [{"path": path, "old": o + "\n", "new": n + "\n"} for o, n in zip(minus, plus)]
    for block in re.findall(r"^```python\n# (\S+)\n(.*?)^```", page, re.M | re.S):
        out.append({"path": block[0], "content": block[1]})
    return out


@pytest.mark.slow  # every step of a page through make: make test-slow (.ci/run)
@pytest.mark.parametrize("page", [p for p in PAGES if p not in IMAGES])
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
    ran = walkthrough.run(steps, tmp_path, {"EDITOR": str(editor),
                                            "HOWTO_EDITS": json.dumps(edits((HOWTO / page).read_text()))})
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

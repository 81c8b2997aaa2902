"""The ground floor's text helpers (patchkit/text/): long lines folded so that prose reads and a
command still runs as printed (#31 item 13: make demo's lines were 300 characters wide)."""
from __future__ import annotations

import subprocess

from patchkit.text.words import fold, fold_command, shell_word, shell_words


def test_a_folded_command_runs_as_the_whole_line_does_and_keeps_its_quoted_values_whole():
    words = ["printf", "%s\\n", "TRTLLM_URL=file:///a/long/path/to/the/miniature/upstream", "SIGNOFF=Jo Doe <jo@x.org>",
             "odd=tab\there", "back\\slash", "quote'd", "x" * 70, "last"]
    line = " ".join(map(shell_word, words))
    assert shell_words(line) == [shell_word(w) for w in words]
    folded = fold_command(line, 40, "  $ ", "      ")
    assert len(folded) > 3 and all(len(f) <= 40 or " " not in f.strip(" \\$") for f in folded)
    assert all(f.endswith(" \\") for f in folded[:-1]) and not folded[-1].endswith("\\")

    def run(text: str) -> str:
        return subprocess.run(["bash", "-c", text], capture_output=True, text=True, check=True).stdout
    assert run("\n".join(folded)[len("  $ "):]) == run(line) == "".join(w + "\n" for w in words[2:])
    assert fold_command("make targets", 40) == ["$ make targets"]


def test_folded_prose_breaks_after_clauses_and_loses_no_word():
    text = ("matches the declared delta: fix 19450: 3 fail->pass, 1 pass->pass, 0 pass->fail; fix 19514: 23 "
            "fail->pass, 7 pass->pass, 0 pass->fail; not run here: test_x.py (it imports torch, which this machine lacks)")
    folded = fold(text, 110, "rc25  delta  ", " " * 13)
    assert all(len(f) <= 110 for f in folded) and folded[0].startswith("rc25  delta  matches")
    assert [f[13:].split(":")[0] for f in folded] == ["matches the declared delta", "fix 19514", "not run here"]
    for width in (110, 70, 30):  # narrower: after a part of a clause (", "), then between words
        folded = fold(text, width, "rc25  delta  ", " " * 13)
        assert all(len(f) <= width for f in folded) and " ".join(f[13:].strip() for f in folded) == text
    assert fold("short", 70, "> ") == ["> short"]

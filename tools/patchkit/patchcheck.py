"""What no patch may carry, ours or upstream's: the checks patchset.parse_patch runs on every
file of patches/ and make backport runs on a change taken from upstream (its commits before
they become patch files, and those files as the loader reads them).

A symlink (a patch through one can write outside the tree; the image must never get one), a
submodule, a file made executable, a binary file, a commit message over 64 KiB, and a message
with a line git reads as the start of a patch: git am (git mailinfo) ends the message at the
first such line and hands the rest to git apply, so the message a reviewer reads would not be
the one git keeps, and its tail could pass for a diff; a message with a control character (C0,
C1, a bidi override: text.words.control), which would reach terminals and our trailers. Pure: text in, what is wrong in a few
words out (None when nothing is); the callers name the file or the commit.
"""
from __future__ import annotations

import re

from .text.words import control

MAX_MESSAGE = 64 * 1024  # bytes of one commit message
LINK, GITLINK, EXECUTABLE = "120000", "160000", "100755"
_C_SPACE = " \t\n\v\f\r"  # C's isspace(), which git's patchbreak() uses
# Format-patch's separator after the message ('---' alone) and its diffstat (lines that start
# with white space), up to the diff: what a patch file holds between its message and its diff.
_SEPARATOR = re.compile(r"(?:^|\n)---[ \t]*\n(?:[ \t][^\n]*\n|\n)*\Z")
_DIFF = re.compile(r"^diff --git ", re.M)
_BINARY = ("Binary files ", "GIT binary patch")


def patch_break(line: str) -> bool:
    """Whether git mailinfo (git am) reads this line of a message as the start of the patch:
    'diff -...', 'Index: ...', '--- <name>', or '---' with nothing but white space after it.
    tests/test_patchcheck.py holds this against git mailinfo itself."""
    if line.startswith(("diff -", "Index: ")):
        return True
    if not line.startswith("---"):
        return False
    rest = line[3:]
    if rest[:1] == " " and rest[1:2] and rest[1] not in _C_SPACE:  # '--- a/file'
        return True
    return rest.strip(_C_SPACE) == ""


def message(text: str) -> str | None:
    """What is wrong with a commit message as git stores it (subject, blank line, body)."""
    if len(text.encode("utf-8", "surrogateescape")) > MAX_MESSAGE:
        return f"its message is over {MAX_MESSAGE // 1024} KiB"
    if not text.split("\n", 1)[0].strip():
        return "its message has no subject"
    if found := control(text, allow="\t\n"):  # a tab and the line ends are text
        return f"its message contains a control character ({found})"
    line = next((ln for ln in text.split("\n") if patch_break(ln)), None)
    if line is not None:
        return f"its message has a line git reads as the start of a patch ({line[:60]!r})"
    return None


def file_message(subject: str, before_diff: str) -> tuple[str, str | None]:
    """A patch file's message body (the text between its headers and its diff, without
    format-patch's '---' separator and diffstat), and what is wrong with the message."""
    cut = _SEPARATOR.search(before_diff)
    body = before_diff[:cut.start()] if cut else before_diff
    return body, message(f"{subject}\n\n{body}")


def mode(path: str, old: str, new: str) -> str | None:
    """What is wrong with a file's change of mode ('' where the file is absent)."""
    if LINK in (old, new):
        return f"{path} is a symlink"
    if GITLINK in (old, new):
        return f"{path} is a submodule"
    if new == EXECUTABLE and old != EXECUTABLE:
        return f"{path} becomes an executable file"
    return None


def diff(text: str) -> str | None:
    """What is wrong with a git diff: the first file that is a symlink, a submodule, made
    executable or binary, read from each file's extended header lines."""
    starts = [m.start() for m in _DIFF.finditer(text)]
    for at, end in zip(starts, [*starts[1:], len(text)]):
        head, *lines = text[at:end].split("\n")
        path = head.rsplit(" b/", 1)[-1]  # 'diff --git a/x b/x': the path after the change
        old = new = ""
        for line in lines:
            if line.startswith(_BINARY):
                return f"{path} is a binary file ({line[:80]})"
            if line.startswith(("--- ", "+++ ", "@@ ")):
                break  # the hunks: no header line follows
            word, _, value = line.rpartition(" ")
            if word in ("old mode", "deleted file mode"):
                old = value
            elif word in ("new mode", "new file mode"):
                new = value
            elif word.startswith("index ") and ".." in word:  # 'index <old>..<new> <mode>': unchanged
                old = new = value
        if problem := mode(path, old, new):
            return problem
    return None

"""What no patch may carry (patchcheck.py, #26): our own patch files get the checks a pull
request's patches get. make check (which loads every set first) refuses each, exit 2, with one
line naming the file and what is wrong; make backport's own cases are in test_backport.py."""
from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import ROOT, copy_root, sh, tiered
from patchkit import patchcheck

TEST_PATCH = "0002-19514-test-Cover-the-cross-KV-pool-length-of-encoder.patch"  # rc25's: a new test file
NEW_FILE = "new file mode 100644\n"
TEST_FILE = "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"


def _binary(text: str) -> str:
    """A second file in the patch, a binary one, as git diff writes it without --binary."""
    at = text.index("diff --git ")
    return (text[:at] + "diff --git a/tests/unittest/blob.bin b/tests/unittest/blob.bin\n" + NEW_FILE
            + "Binary files /dev/null and b/tests/unittest/blob.bin differ\n" + text[at:])


def _long_message(text: str) -> str:
    return text.replace("Fixes #19514\n", "Fixes #19514\n\n" + ("All work and no play. " * 3 + "\n") * 1000, 1)


CASES = tiered(
    (lambda t: t.replace(NEW_FILE, "new file mode 160000\n"), f"{TEST_FILE} is a submodule"),
    (lambda t: t.replace(NEW_FILE, "new file mode 120000\n"), f"{TEST_FILE} is a symlink"),
    (lambda t: t.replace(NEW_FILE, "new file mode 100755\n"), f"{TEST_FILE} becomes an executable file"),
    (_binary, "tests/unittest/blob.bin is a binary file (Binary files /dev/null and b/tests/unittest/blob.bin differ)"),
    (lambda t: t.replace("Fixes #19514\n", "Fixes #19514\n--- a/the/rest\n", 1),
     "its message has a line git reads as the start of a patch ('--- a/the/rest')"),
    (_long_message, "its message is over 64 KiB"),
)


@pytest.mark.parametrize("edit, said", CASES, ids=["submodule", "symlink", "executable", "binary", "patch-start", "64KiB"])
def test_make_check_refuses_our_own_patch_carrying_it_in_one_line(tmp_path, edit, said):
    root = copy_root(tmp_path)
    patch = root / "patches" / "rc25" / TEST_PATCH
    text = patch.read_text()
    assert edit(text) != text
    patch.write_text(edit(text))
    res = sh("make", "-s", "-C", ROOT, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit --root {root}",
             f"TRTLLM_SRC={tmp_path}/nowhere", "check", check=False)
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines()[0] == f"patchkit: error: {TEST_PATCH}: {said}; refusing"
    assert res.stderr.splitlines()[1:] == [line for line in res.stderr.splitlines()[1:] if line.startswith("make")]


LINES = ["---", "--- ", "---  x", "--- x", "---\tx", "--- \t", "----", "---x", "diff -u a b", "diff --git a/x b/x",
         "Index: x", "Index:x", "  ---", " diff -u", "-- ", "Signed-off-by: A <a@b>"]


@pytest.mark.parametrize("line", LINES)
def test_a_patch_break_is_where_git_mailinfo_ends_the_message(tmp_path, line):
    """git am reads a message through git mailinfo, which stops at its patchbreak(): the judge."""
    mail = f"From: A <a@b.c>\nSubject: s\nDate: Mon, 1 Jan 2024 00:00:00 +0000\n\nbody\n{line}\nafter\n"
    subprocess.run(["git", "mailinfo", tmp_path / "msg", tmp_path / "patch"], input=mail, text=True,
                   capture_output=True, check=True)
    ended = (tmp_path / "msg").read_text() == "body\n"
    assert patchcheck.patch_break(line) == ended


def test_the_separator_and_diffstat_git_format_patch_writes_are_not_the_message():
    body, wrong = patchcheck.file_message("s", "Body.\n\nOrigin: x\n---\n a/x | 2 +-\n 1 file changed\n\n")
    assert (body, wrong) == ("Body.\n\nOrigin: x", None)
    body, wrong = patchcheck.file_message("s", "Body.\n---\nhidden from git am\n---\n a/x | 2 +-\n\n")
    assert wrong == "its message has a line git reads as the start of a patch ('---')"


@pytest.mark.parametrize("old, new, said", [
    ("", "120000", "x is a symlink"), ("120000", "100644", "x is a symlink"), ("160000", "160000", "x is a submodule"),
    ("100644", "100755", "x becomes an executable file"), ("", "100755", "x becomes an executable file"),
    ("100755", "100755", None), ("100755", "100644", None), ("100755", "", None), ("", "100644", None),
])
def test_modes(old, new, said):
    assert patchcheck.mode("x", old, new) == said


def test_an_unchanged_mode_on_the_index_line_is_read_too():
    diff = "diff --git a/sub b/sub\nindex 1111111..2222222 160000\n--- a/sub\n+++ b/sub\n@@ -1 +1 @@\n-Subproject commit 1\n+Subproject commit 2\n"
    assert patchcheck.diff(diff) == "sub is a submodule"
    assert patchcheck.diff(diff.replace("160000", "100755")) is None

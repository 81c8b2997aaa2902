"""Nothing from an untrusted message reaches a terminal unescaped (#31 item 9): a C1 control
(U+009B, the 8-bit CSI a terminal reads as an escape) in a PR title was accepted and printed raw
by make targets, bidi overrides (U+202E) in its body too.

Two lines of defence. At intake: C0 and C1 controls and the bidi overrides and isolates are
refused in a PR's message (patchcheck), in a patch's headers and in every one-line value of a
set's YAML (schema), naming the character as U+XXXX. At the terminal: whatever we print goes
through text.words.visible at the CLI (and progress lines), so the invisible characters intake
lets through (zero-width, soft hyphen, ...) and a patch's own content read as text are shown as
escapes (\\u200b), never sent raw."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers import ROOT, copy_root, push_pr, sh, state_of, tiered
from patchkit import patchset
from patchkit.text.words import control, visible

SCHEDULER = "tensorrt_llm/_torch/pyexecutor/scheduler.py"
CSI, RLO, ZWSP = "\u009b", "\u202e", "\u200b"
RAW = (CSI, RLO, "\u2066", "\x1b", ZWSP)  # what must never reach the terminal as itself


def make(root: Path, *argv: str) -> tuple[int, bytes, bytes]:
    """make, as a user runs it, on a copy of the project: exit code, stdout, stderr (bytes)."""
    res = sh("make", "-s", "-C", ROOT, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit --root {root}", *argv,
             check=False)
    return res.returncode, res.stdout.encode("utf-8", "surrogateescape"), res.stderr.encode("utf-8", "surrogateescape")


def shows_nothing_raw(*outputs: bytes) -> None:
    for out in outputs:
        text = out.decode("utf-8", "replace")
        assert not [c for c in RAW if c in text], text
        assert b"\x9b" not in out.replace(CSI.encode(), b"")  # nor as the bare 8-bit byte


def test_visible_escapes_what_a_terminal_would_act_on_or_hide():
    assert visible(f"a{CSI}31m b{RLO}c\u2069d\x1b[2Je{ZWSP}f\u00adg\u2028h\udc9bi") == \
        "a\\x9b31m b\\u202ec\\u2069d\\x1b[2Je\\u200bf\\xadg\\u2028h\\x9bi"
    assert visible("lines\n\tand tabs, é, 中文, emoji 🙂") == "lines\n\tand tabs, é, 中文, emoji 🙂"
    assert (control("fine é"), control(f"x{CSI}"), control(f"{RLO}"), control("a\tb"), control("a\tb", allow="\t")) == \
        (None, "U+009B", "U+202E", "U+0009", None)


def _pr_with(upstream: Path, number: str, message: str) -> str:
    def change(work: Path) -> str:
        with open(work / SCHEDULER, "a") as fh:
            fh.write("\n\ndef tripled(x):\n    return 3 * x\n")
        return message
    return push_pr(upstream, number, change)


@pytest.mark.parametrize("message, char", tiered((f"[None][fix] Evil {CSI}31m title", "U+009B"),
                                                  (f"[None][fix] Fine\n\nbody with {RLO}override", "U+202E")))
def test_a_pr_message_with_controls_is_refused_and_said_escaped(tmp_path, upstream, checkout, message, char):
    sha = _pr_with(upstream, "4250", message)
    root = copy_root(tmp_path)
    before = sorted(p.read_bytes() for p in (root / "patches" / "rc25").iterdir()), state_of(checkout)
    code, out, err = make(root, "TRTLLM=rc25", f"TRTLLM_SRC={checkout}", "PR=4250", "backport")
    assert code == 2, err
    assert err.decode().splitlines()[0] == (f"patchkit: error: commit {sha[:12]}: its message contains a control "
                                            f"character ({char}); refusing")
    shows_nothing_raw(out, err)
    assert (sorted(p.read_bytes() for p in (root / "patches" / "rc25").iterdir()), state_of(checkout)) == before


@pytest.mark.parametrize("title, char", tiered((f"Evil {CSI}31m title", "U+009B"), (f"Evil {RLO}eltit", "U+202E")))
def test_a_set_whose_title_holds_a_control_is_refused_by_make_targets(tmp_path, title, char):
    """A title written by an earlier make backport (which let U+009B through) or by hand."""
    root = copy_root(tmp_path)
    meta = root / "patches" / "rc25" / "patchset.yaml"
    was = patchset.load(root, "rc25").fixes[0].title
    # as YAML writes it: an escape inside double quotes (a raw C1 is no character YAML reads)
    meta.write_text(meta.read_text().replace(was, title.encode("unicode_escape").decode(), 1))
    code, out, err = make(root, "targets")
    assert code == 2, err
    assert f"title: must be one line without control characters ({char})" in err.decode()
    shows_nothing_raw(out, err)


def test_what_intake_lets_through_is_shown_escaped_by_make_targets_and_make_backport(tmp_path, upstream, checkout):
    """A zero-width space is no control: the title keeps it, every terminal line shows it as \\u200b."""
    _pr_with(upstream, "4251", f"[None][fix] Tri{ZWSP}pled")
    root = copy_root(tmp_path)
    code, out, err = make(root, "TRTLLM=rc25", f"TRTLLM_SRC={checkout}", "PR=4251", "backport")
    assert code == 0, err
    assert patchset.load(root, "rc25").fix("4251").title == f"[None][fix] Tri{ZWSP}pled"
    shows_nothing_raw(out, err)
    code, out, err = make(root, "targets")
    assert code == 0, err
    assert "rc25  fix 4251: [None][fix] Tri\\u200bpled" in out.decode().splitlines()
    shows_nothing_raw(out, err)


@pytest.mark.slow
def test_a_patchs_own_lines_are_shown_escaped_in_make_backports_range_diff(tmp_path, upstream, checkout):
    """A PR's code is not refused for what it holds (a C1 control and a bidi override in a
    comment, Trojan Source's shape), but its lines, quoted by the range-diff of a PR that moved,
    reach the terminal escaped."""
    def code(work: Path) -> str:
        with open(work / SCHEDULER, "a") as fh:
            fh.write(f"\n\ndef tripled(x):\n    return 3 * x  # {CSI}31m {RLO}red\n")
        return "[None][fix] Tripled"
    push_pr(upstream, "4252", code)
    root = copy_root(tmp_path)
    assert make(root, "TRTLLM=rc25", f"TRTLLM_SRC={checkout}", "PR=4252", "backport")[0] == 0
    work = upstream.parent / "pr-4252"  # its author force-pushes the commit, amended
    with open(work / SCHEDULER, "a") as fh:
        fh.write(f"# moved {RLO}on\n")
    sh("git", "-C", work, "commit", "-q", "--amend", "-a", "--no-edit")
    sh("git", "-C", work, "push", "-qf", "origin", "HEAD:refs/pull/4252/head")
    code_, out, err = make(root, "TRTLLM=rc25", f"TRTLLM_SRC={checkout}", "PR=4252", "backport")
    assert code_ == 0, err
    assert "+# moved \\u202eon" in out.decode() and "return 3 * x  # \\x9b31m \\u202ered" in out.decode(), out
    shows_nothing_raw(out, err)

"""The maintainer's daily verbs on a stack (#33 items 1 and 2): make new-fix makes commits of
the user's a fix of ours (the docs' only answer was YAML by hand, and export folded such a
commit into fix 19514 without trailers, a set make check then refused); make drop and make move
take a fix out or put it elsewhere (there was no command: git checkout -- patches/). Each is all
or nothing, numbers the series 0001..000N, and writes only a set that make check passes."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from helpers import ROOT, sh, state_of, tiered
from patchkit import patchset
from patchkit.cli import main
from patchkit.edit import metadata
from patchkit.git import Repo
from patchkit.pr import export as export_mod
from stacks import STACK_PR, own_entry, own_fix

ISSUE = "https://github.com/NVIDIA/TensorRT-LLM/issues/{}"
SCHEDULER = "tensorrt_llm/_torch/pyexecutor/scheduler.py"  # no pull request of the miniature touches it
TEST = "tests/unittest/_torch/executor/test_block_budget.py"
FIX_TEST = '''# SPDX-FileCopyrightText: Copyright (c) 2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: Apache-2.0
"""A negative reservation hands out no block the pool does not have."""

import pytest

from tensorrt_llm._torch.pyexecutor.scheduler import block_budget

pytestmark = pytest.mark.cpu_only


@pytest.mark.parametrize("reserved", [-1, -5])
def test_a_negative_reservation_adds_no_block(reserved):
    assert block_budget(10, reserved) == 10
'''


def commit_a_fix(src, subject="[#20001][fix] No block from a negative reservation"):
    """What a maintainer commits on overlay/rc25: a guard in the package and its test, no trailers."""
    path = src / SCHEDULER
    text = path.read_text()
    assert "return max(free_blocks - reserved, 0)" in text
    path.write_text(text.replace("return max(free_blocks - reserved, 0)", "return max(free_blocks - max(reserved, 0), 0)"))
    (src / TEST).write_text(FIX_TEST)
    sh("git", "-C", src, "add", "-A")
    sh("git", "-C", src, "commit", "-q", "-m", f"{subject}\n\nA negative reservation handed out blocks the pool lacks.")
    return sh("git", "-C", src, "rev-parse", "HEAD").stdout.strip()


def make(root, *args):
    """make in the project, on the copy (PATCHKIT_ROOT), as a user runs it."""
    env = dict(os.environ, PATCHKIT_ROOT=str(root), SETUP="", PATCHKIT=f"{sys.executable} -m patchkit")
    argv = list(args) if len(args) > 1 else shlex.split(args[0])
    return subprocess.run(["make", "-s", "--no-print-directory", *argv[1:]] if argv[0] == "make" else argv,
                          cwd=ROOT, env=env, text=True, capture_output=True)


def files(root):
    return {p.name: p.read_bytes() for p in sorted((root / "patches" / "rc25").iterdir())}


def test_a_commit_on_the_branch_becomes_a_fix_of_ours_and_export_is_a_no_op_after(stacked):
    """The acceptance of #33 item 1: export names the commit and prints the make new-fix line;
    that line makes it fix 20001 (trailers, its tests measured, last in the stack); make check
    passes, and export afterwards changes nothing."""
    root, src = stacked
    sha = commit_a_fix(src)
    before = files(root)
    res = make(root, "make", "export", "TRTLLM=rc25", f"TRTLLM_SRC={src}")
    assert res.returncode == 2 and files(root) == before, res.stderr
    assert f"1 commit(s) belong to no fix of the rc25 stack (no Origin trailer naming one): {sha[:12]}" in res.stderr
    hint = re.search(r"run: (make new-fix .*)$", res.stderr, re.M)[1]
    assert hint == f"make new-fix TRTLLM=rc25 TRTLLM_SRC={src} BRANCH=overlay/rc25 FIXID=20001"
    res = make(root, hint)
    assert res.returncode == 0, res.stderr
    ps = patchset.load(root, "rc25")
    assert [(f.id, f.kind) for f in ps.fixes] == [(f"{STACK_PR}", "backport"), ("19514", "ours"), ("20001", "ours")]
    fix = ps.fix("20001")
    [patch] = fix.patches
    url = ISSUE.format(20001)
    assert patch.name.startswith("0004-20001-fix-No-block-from-a-negative-reservation") and fix.bug == url
    assert [(k, v) for k, v in patch.trailers if k != "Last-Update"] == [
        ("Origin", f"vendor, {url}"), ("Bug", url), ("Forwarded", "no")]
    assert re.search(r"^index [0-9a-f]{40}\.\.[0-9a-f]{40} 100644$", patch.diff, re.M)  # git am -3 can find its base
    assert fix.tests.regression == (TEST,)
    got = {k: {o: n for o, n in v.items() if n} for k, v in fix.expected["source"][TEST].items() if k != "not_run"}
    assert got == {"unpatched": {"failed": 2}, "patched": {"passed": 2}}  # measured, as make backport measures
    assert f"{TEST}  2 failed -> 2 passed" in res.stdout
    assert f"run: make delta TRTLLM=rc25 TRTLLM_SRC={src} FIXID=20001" in res.stdout
    assert main(["--root", str(root), "check", "--src", str(src), "--target", "rc25"]) == 0
    again = export_mod.export(patchset.load(root, "rc25"), Repo(src), "overlay/rc25")
    assert again.up_to_date, (again.changed, again.removed)


def test_after_new_fix_apply_rebuilds_and_unapply_drops_the_branch_it_wrote_into_the_set(stacked):
    """An attack of #33 item 1: after make new-fix wrote the user's commit into the set (export a
    no-op), make apply and make unapply refused it as "1 commit(s) made after apply" and told the
    user to rename the branch: nothing of the user's was at stake, the set holds the commit."""
    root, src = stacked
    commit_a_fix(src)
    assert make(root, "make", "new-fix", "TRTLLM=rc25", f"TRTLLM_SRC={src}", "FIXID=20001", "FETCH=0").returncode == 0
    res = make(root, "make", "apply", "TRTLLM=rc25", f"TRTLLM_SRC={src}", "FETCH=0")
    assert res.returncode == 0, res.stderr
    assert "made after apply" not in res.stderr
    applied = Repo(src)
    assert applied.symbolic_head() == "refs/heads/overlay/rc25"
    assert "20001" in applied.commit_info(applied.commits("v1.3.0rc25..overlay/rc25")[-2]).subject  # the new fix, then the waiver commit
    assert export_mod.export(patchset.load(root, "rc25"), applied, "overlay/rc25", check_only=True).up_to_date
    res = make(root, "make", "unapply", "TRTLLM=rc25", f"TRTLLM_SRC={src}")
    assert res.returncode == 0, res.stderr
    assert applied.rev_parse("refs/heads/overlay/rc25") is None


def test_a_set_with_two_fixes_of_ours_applies_on_a_fresh_checkout(stacked, upstream, tmp_path):
    """An attack of #33 item 1: once make new-fix made 20001 a second fix of ours, make apply on
    any other checkout was exit 70 (the waiver commit's subject asked the set for its one bug:
    "rc25 carries 2 fixes; name one"). The waiver edit is the commit of the fix whose test CI
    must run: 19514's."""
    root, src = stacked
    commit_a_fix(src)
    assert make(root, "make", "new-fix", "TRTLLM=rc25", f"TRTLLM_SRC={src}", "FIXID=20001", "FETCH=0").returncode == 0
    fresh = tmp_path / "fresh"
    sh("git", "clone", "-q", upstream.as_uri(), fresh)
    res = make(root, "make", "apply", "TRTLLM=rc25", f"TRTLLM_SRC={fresh}")
    assert res.returncode == 0, res.stderr
    repo = Repo(fresh)
    assert repo.commit_info("overlay/rc25").subject.startswith("[#19514][test] Narrow the waiver that skipped")


def test_a_commit_in_no_fix_still_stops_apply_and_unapply(stacked):
    """The other side of the above: a commit on top that the set does not hold is the user's, kept."""
    root, src = stacked
    sha = commit_a_fix(src)
    for verb in ("apply", "unapply"):
        res = make(root, "make", verb, "TRTLLM=rc25", f"TRTLLM_SRC={src}", *(["FETCH=0"] if verb == "apply" else []))
        assert res.returncode == 2 and f"1 commit(s) made after apply on top of the series (the last: {sha[:12]}" in res.stderr
        assert Repo(src).rev_parse("refs/heads/overlay/rc25") == sha


@pytest.mark.slow  # make test keeps the acceptance above; this runs the delta and the PR it points to
def test_the_new_fix_has_its_own_delta_and_pr(stacked, tmp_path):
    root, src = stacked
    commit_a_fix(src)
    assert make(root, "make", "new-fix", "TRTLLM=rc25", f"TRTLLM_SRC={src}", "FIXID=20001").returncode == 0
    # what only its author can say: the checklist's documentation item (new-fix says so)
    meta = metadata.Meta((root / "patches/rc25/patchset.yaml").read_text(), "patchset.yaml")
    meta.set_fix_value("20001", ("pr", "checklist"), [{"item": "documentation of the changed behaviour",
                                                       "answer": "n/a", "why": "no page describes the budget"}])
    (root / "patches/rc25/patchset.yaml").write_text(meta.text())
    report = tmp_path / "delta.json"
    res = make(root, "make", "delta", "TRTLLM=rc25", f"TRTLLM_SRC={src}", "FIXID=20001", f"REPORT={report}")
    assert res.returncode == 0 and "every fix matches the declared delta" in res.stdout, res.stdout + res.stderr
    res = make(root, "make", "pr", "TRTLLM=rc25", f"TRTLLM_SRC={src}", "FIXID=20001", f"REPORT={report}",
               "SIGNOFF=Jane Developer <jane@example.com>")
    assert res.returncode == 0, res.stderr
    [title] = [p.read_text() for p in (root / "build" / "pr").glob("*/title.txt")]
    assert title.strip() == "[#20001][fix] No block from a negative reservation"


def _renumbered(old: bytes) -> bytes:
    return re.sub(rb"^Subject: \[PATCH[^\]]*\]", b"Subject: [PATCH]", old, count=1, flags=re.M)


def test_drop_and_move_renumber_the_series_and_keep_every_other_patch(stacked, capsys):
    """#33 item 2: the stack applies after each, numbered 0001..000N, every patch's change as it
    was (only its number and [PATCH n/m] follow its place); drop says whose expectations it
    measured again and which it could not (container mode: marked stale in patchset.yaml)."""
    root, src = stacked
    was = {p.subject: _renumbered(p.file.read_bytes()) for p in patchset.load(root, "rc25").patches}
    assert main(["--root", str(root), "move", "--target", "rc25", "--src", str(src), "--fix-id", "19514",
                 "--before", f"{STACK_PR}"]) == 0
    ps = patchset.load(root, "rc25")
    assert [f.id for f in ps.fixes] == ["19514", f"{STACK_PR}"]
    assert [p.name[:4] for p in ps.patches] == ["0001", "0002", "0003"]
    assert {p.subject: _renumbered(p.file.read_bytes()) for p in ps.patches} == was
    assert main(["--root", str(root), "drop", "--target", "rc25", "--src", str(src), "--fix-id", f"{STACK_PR}"]) == 0
    out = capsys.readouterr().out
    ps = patchset.load(root, "rc25")
    assert [f.id for f in ps.fixes] == ["19514"] and [p.name[:4] for p in ps.patches] == ["0001", "0002"]
    assert {p.subject: _renumbered(p.file.read_bytes()) for p in ps.patches} == {
        s: b for s, b in was.items() if s in {p.subject for p in ps.patches}}
    assert "fix 19514: source mode measured again: as declared; stale, not measurable here: container" in out
    meta = (root / "patches/rc25/patchset.yaml").read_text()
    assert (f"# stale: measured on a stack where fix {STACK_PR} was still carried" in meta
            and "make delta MODE=container FIXID=19514 measures it again" in meta)
    assert main(["--root", str(root), "check", "--src", str(src), "--target", "rc25"]) == 0


def test_a_move_that_cannot_apply_changes_nothing_and_names_the_hunk(stacked, miniature_template, tmp_path, capsys):
    """A fix of ours that edits a line 19514 adds cannot go before 19514."""
    root, src = stacked
    names = own_fix(root, "rc25", miniature_template, tmp_path, "20002", "v1.3.0rc25",
                    {"tensorrt_llm/_torch/pyexecutor/_util.py": ("max_input_len > 0:", "max_input_len >= 1:")}, {}, 4)
    meta = root / "patches/rc25/patchset.yaml"
    meta.write_text(meta.read_text() + own_entry("20002", names, []))
    before, checkout = files(root), state_of(src)
    code = main(["--root", str(root), "move", "--target", "rc25", "--src", str(src), "--fix-id", "20002",
                 "--before", "19514"])
    out, err = capsys.readouterr()
    assert code == 3 and err.count("\n") == 1, err
    assert re.search(r"the stack with fix 20002 before 19514 does not apply on v1.3.0rc25 \([0-9a-f]{12}\): fix 20002: "
                     r"0004-20002-fix-A-fix-of-ours-on-the-stack.patch: tensorrt_llm/_torch/pyexecutor/_util.py hunk #1 ", err)
    assert "nothing written" in err and "expected (-) beside found" in out
    assert (files(root), state_of(src)) == (before, checkout)


@pytest.mark.parametrize("argv, code, said", tiered(
    (["new-fix", "--fix-id", "19514"], 2, "rc25 carries a fix 19514 already"),
    (["new-fix", "--fix-id", "20001"], 4, "overlay/rc25 has no commit beyond the rc25 stack"),
    (["new-fix", "--fix-id", "x y"], 2, "is not a fix id"),
    (["new-fix", "--fix-id", "ABC-1"], 2, "fix ABC-1 is not a bug's number: say its bug"),
    (["new-fix", "--fix-id", "20001", "--commit", "deadbeef"], 4, "'deadbeef' is no commit"),
    (["drop", "--fix-id", "7"], 4, f"rc25 carries no fix '7' (it carries: {STACK_PR}, 19514)"),
    (["move", "--fix-id", "19514"], 2, "say where: BEFORE=<a fix> or AFTER=<a fix>, one of them"),
    (["move", "--fix-id", "19514", "--after", "19514"], 2, f"fix 19514 cannot go after itself (the others: {STACK_PR})"),
))
def test_bad_requests_change_nothing(stacked, argv, code, said, capsys):
    root, src = stacked
    before, checkout = files(root), state_of(src)
    got = main(["--root", str(root), argv[0], "--target", "rc25", "--src", str(src), *argv[1:]])
    err = capsys.readouterr().err
    assert got == code and said in err and err.count("\n") == 1, err
    assert (files(root), state_of(src)) == (before, checkout)


def test_a_second_new_fix_that_waited_for_the_first_is_refused_as_a_set_that_moved(stacked, monkeypatch):
    """An attack of #33 item 1 (two at once): the second make new-fix, having waited for the
    checkout's lock while the first wrote fix 20001, read patchset.yaml as the first left it but
    the stack as it began, and was refused with a wrong reason ("... is in the series of fixes
    20001 and 20002", exit 2). The set is read as the run began: it moved, so nothing is
    written and the reason says so."""
    import contextlib
    from patchkit.edit import newfix
    from patchkit.errors import Conflict
    root, src = stacked
    commit_a_fix(src)
    real, first = newfix.upstream.held, []

    @contextlib.contextmanager
    def after_the_first(*args, **kw):
        if not first:  # the other run held the lock first, and wrote its fix
            first.append("20001")
            newfix.new_fix(patchset.load(root, "rc25"), root=root, src=src, fix_id="20001", fetch=False)
        with real(*args, **kw) as got:
            yield got
    monkeypatch.setattr(newfix.upstream, "held", after_the_first)
    with pytest.raises(Conflict, match=r"^patches/rc25 changed while new-fix rc25 ran; nothing written"):
        newfix.new_fix(patchset.load(root, "rc25"), root=root, src=src, fix_id="20002", fetch=False)
    assert [f.id for f in patchset.load(root, "rc25").fixes][-1] == "20001"


def test_every_next_step_new_fix_prints_runs_as_printed(stacked):
    """An attack of #33 item 8: make new-fix printed `run: make pr ... FIXID=20001`, which exits 1
    as printed (its checklist's open item, which new-fix itself says to answer first). What it
    prints to run, runs; make pr is named in the line that says what to answer first."""
    root, src = stacked
    commit_a_fix(src)
    res = make(root, "make", "new-fix", "TRTLLM=rc25", f"TRTLLM_SRC={src}", "FIXID=20001", "FETCH=0")
    assert res.returncode == 0, res.stderr
    steps = re.findall(r"^run: (make .*?) \(", res.stdout, re.M)
    assert steps and "then make pr renders its PR" in res.stdout, res.stdout
    for step in steps:
        ran = make(root, step)
        assert ran.returncode == 0, (step, ran.stdout + ran.stderr)

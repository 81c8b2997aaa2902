"""make pr on a stack (#26 item 5): the PR is one own fix's, never a backport's; its commits drop
the overlay's DEP-3 trailers and keep the sign-off; it names its fix on a stack of several; and it
says "Depends on #<n>" when the fix, measured, needs a backport beneath it."""
from __future__ import annotations

import json

import pytest

from helpers import copy_project, sh
from patchkit import patchset
from patchkit.cli import main
from patchkit.delta import command as delta_cmd
from patchkit.git import Repo
from patchkit.pr import command as pr_cmd, depends
from stacks import TARGET_FIELDS, top_level_blocks, entry, backport_files, own_entry, own_fix, stacked

SIGNOFF = "Jane Developer <jane.developer@example.com>"
SCHEDULER = "tensorrt_llm/_torch/pyexecutor/scheduler.py"
REUSE_POLICY = "tensorrt_llm/_torch/pyexecutor/reuse_policy.py"
REUSE_TEST = "tests/unittest/_torch/executor/test_reuse_policy.py"


def _pr(root, target, checkout, tmp_path, **kw):
    report = tmp_path / "delta.json"
    ps = patchset.load(root, target)
    assert delta_cmd.delta(ps, repo=Repo(checkout), mode="source", report=report).ok
    return pr_cmd.run(root, ps, Repo(checkout), report=report, out=tmp_path / "pr", signoff=SIGNOFF, **kw)


def _messages(checkout, rng):
    return sh("git", "-C", checkout, "log", "--reverse", "--format=%B%x00", rng).stdout.split("\0\n")[:-1]


@pytest.mark.slow  # a delta, a lint and a PR: make test keeps test_pr's golden PR (its commits without the trailers)
def test_the_pr_carries_our_fix_alone_without_its_dep3_trailers(miniature_template, checkout, tmp_path):
    """rc25 carries upstream's #19302 beneath our fix: the PR branch is our fix's commits (and the
    waiver commit) on the tag, signed off, as they read without a stack."""
    root = copy_project(tmp_path / "project", "overlay")
    stacked(root, "rc25", miniature_template, tmp_path)
    res = _pr(root, "rc25", checkout, tmp_path)
    ours = patchset.load(root, "rc25").fix("19514")
    messages = _messages(checkout, f"v1.3.0rc25..{res.branch}")
    assert [m.split("\n", 1)[0] for m in messages[:-1]] == [p.subject for p in ours.patches]
    assert "Narrow the waiver" in messages[-1]
    assert sh("git", "-C", checkout, "diff", "--name-only", "v1.3.0rc25", res.branch).stdout.split() == [
        "tensorrt_llm/_torch/pyexecutor/_util.py", "tests/integration/test_lists/waives.txt",
        "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"]  # nothing of #19302
    for m, p in zip(messages, ours.patches):
        assert "Origin:" not in m and "Forwarded:" not in m and "Last-Update:" not in m
        assert m.rstrip("\n").endswith(f"Fixes #19514\n\nSigned-off-by: {SIGNOFF}")
        assert m.startswith(p.message.split("\n\nOrigin: ")[0])
    assert "Depends on" not in res.body  # measured: our fix needs nothing of #19302


def _two_own_fixes(root, miniature, work, target="main"):
    """The target's own fix and a second own fix of ours after it (19514, then 99999)."""
    set_dir = root / "patches" / target
    n = len(list(set_dir.glob("*.patch")))
    ref = patchset.load(root, target).upstream.ref
    files = own_fix(root, target, miniature, work, "99999", ref, {SCHEDULER: ("max(free", "max(0 + free")}, {}, n + 1)
    stacked(root, target, miniature, work, pulls=(), after=own_entry("99999", files, []))


def test_on_a_stack_of_several_own_fixes_the_pr_must_name_one(miniature_template, checkout, tmp_path, capsys):
    root = copy_project(tmp_path / "project", "overlay")
    _two_own_fixes(root, miniature_template, tmp_path)
    code = main(["--root", str(root), "pr", "--target", "main", "--src", str(checkout), "--signoff", SIGNOFF])
    err = capsys.readouterr().err
    assert code == 2 and err == ("patchkit: error: --fix-id: main carries 2 own fixes (19514 (ours), 99999 (ours)); "
                                 "name one\n")
    assert not sh("git", "-C", checkout, "branch", "--list", "pr/*").stdout  # nothing made


def _only_own(root, target, miniature, work, edits, new, tests):
    """patches/<target> as a stack of #19302's backport and one own fix 99999 made on top of it."""
    set_dir = root / "patches" / target
    for p in set_dir.glob("*.patch"):
        p.unlink()
    back = backport_files(miniature, "19302", set_dir, 1, work)
    meta = set_dir / "patchset.yaml"
    head = "".join(b for b in top_level_blocks(meta.read_text()) if b.split(":", 1)[0] in TARGET_FIELDS)
    meta.write_text(head + "fixes:\n" + entry("19302", back))
    files = own_fix(root, target, miniature, work, "99999", "v1.3.0rc25", edits, new, len(back) + 1)
    meta.write_text(head + "fixes:\n" + entry("19302", back) + own_entry("99999", files, tests))
    (root / "waivers" / f"{target}.yaml").unlink()


@pytest.mark.slow  # a delta, a lint and the measurement of two trees: make test-slow (.ci/run)
def test_a_fix_whose_tests_need_a_backport_says_depends_on_it(miniature_template, checkout, tmp_path):
    """Our fix (a reuse budget is never empty) has a test that also exercises #19302's reuse
    policy: its delta (without it: the stack beneath it and its test) shows the budget case
    fail -> pass; on the tag alone only 2 of its 3 cases pass, with #19302 beneath it all 3. The
    PR still carries only our fix, and says it depends on #19302."""
    root = copy_project(tmp_path / "project", "overlay")
    test = ("from types import SimpleNamespace\n\n"
            "from tensorrt_llm._torch.pyexecutor.reuse_policy import block_reuse_enabled, reuse_budget\n\n\n"
            "def test_feature_fed_encoder_turns_reuse_off():\n"
            "    kv = SimpleNamespace(enable_block_reuse=True)\n"
            "    assert block_reuse_enabled(kv, SimpleNamespace(encoder_input_is_features=True)) is False\n\n\n"
            "def test_token_fed_model_keeps_the_setting():\n"
            "    assert block_reuse_enabled(SimpleNamespace(enable_block_reuse=True), SimpleNamespace()) is True\n\n\n"
            "def test_a_budget_is_never_empty():\n    assert reuse_budget(2, reserved=5) == 1\n")
    again = REUSE_TEST.replace("test_reuse_policy", "test_prefix_reuse_again")
    _only_own(root, "rc25", miniature_template, tmp_path, {REUSE_POLICY: ("reserved, 0)", "reserved, 1)")},
              {again: test}, [again])
    res = _pr(root, "rc25", checkout, tmp_path)
    assert ("Depends on #19302: its tests give what it declares only with it (test_prefix_reuse_again.py 2 of 3 "
            "passed with this change alone, source mode).") in res.body
    changed = sh("git", "-C", checkout, "diff", "--name-only", "v1.3.0rc25", res.branch).stdout.split()
    assert changed == [REUSE_POLICY, again]
    policy = sh("git", "-C", checkout, "show", f"{res.branch}:{REUSE_POLICY}").stdout
    assert "reserved, 1)" in policy and "encoder_input_is_features" not in policy  # ours, without #19302's guard


@pytest.mark.slow  # as above
def test_a_fix_made_on_a_backports_lines_goes_on_3_way_and_says_depends_on_it(miniature_template, checkout, tmp_path):
    """Our fix changes a line beside #19302's guard (and its test checks it): it does not apply on
    the tag alone; it goes onto the tag 3-way, from the stack beneath it, and the PR says it
    depends on #19302."""
    root = copy_project(tmp_path / "project", "overlay")
    line = "    if not enabled:\n"
    said = REUSE_TEST.replace("test_reuse_policy", "test_reuse_says_why")
    test = ("import inspect\n\nfrom tensorrt_llm._torch.pyexecutor.reuse_policy import block_reuse_enabled\n\n\n"
            "def test_it_says_why_nothing_is_shared():\n"
            "    assert \"nothing is shared\" in inspect.getsource(block_reuse_enabled)\n")
    _only_own(root, "rc25", miniature_template, tmp_path,
              {REUSE_POLICY: (line, "    if not enabled:  # reuse is off: nothing is shared\n")}, {said: test}, [said])
    ps = patchset.load(root, "rc25")
    base = sh("git", "-C", checkout, "rev-parse", "v1.3.0rc25^{commit}").stdout.strip()
    measured = depends.measure(ps, ps.fix("99999"), Repo(checkout), base)
    assert measured.on == ("#19302",) and measured.why == "this change does not apply on v1.3.0rc25 without it"
    res = _pr(root, "rc25", checkout, tmp_path)
    assert "Depends on #19302: this change does not apply on v1.3.0rc25 without it." in res.body
    # make delta: the tree without #19302 cannot carry our fix either (made on its lines): it is cut there, and said
    graded = json.loads((tmp_path / "delta.json").read_text())["fixes"]
    assert {f["id"]: f["left_out"] for f in graded} == {"19302": ["99999"], "99999": []}
    after = sh("git", "-C", checkout, "show", f"{res.branch}:{REUSE_POLICY}").stdout
    assert "nothing is shared" in after and "encoder_input_is_features" not in after

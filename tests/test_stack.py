"""A target's stack of fixes: loading both forms of patchset.yaml, trailers as git reads them,
and stack.py's order, splitting and classification (#26)."""
from __future__ import annotations

import subprocess

import pytest

from helpers import ROOT, copy_project
from stacks import top_level_blocks
from patchkit import patchset, stack
from patchkit.errors import BadInput, NotFound
from patchkit.model import BACKPORT, OURS


def _copy(tmp_path):
    return copy_project(tmp_path / "project")


def test_a_one_fix_set_is_a_stack_of_one_own_fix_named_by_its_bug():
    for target in patchset.targets(ROOT):
        ps = patchset.load(ROOT, target)
        [fix] = ps.fixes
        assert fix.kind == OURS and fix.id == fix.bug.rstrip("/").rsplit("/", 1)[-1]
        assert ps.patches == fix.patches and ps.primary is fix and ps.title == fix.title


def _stacked(root, target="rc25", second=None):
    """patches/<target>/patchset.yaml rewritten in the stack form, our fix second after `second`."""
    meta = root / "patches" / target / "patchset.yaml"
    text = meta.read_text()
    head, fix = [], []
    for block in top_level_blocks(text):
        (head if block.split(":", 1)[0] in ("upstream", "branch", "container", "extra_paths") else fix).append(block)
    body = "".join("    " + line if line.strip() else line for b in fix for line in b.splitlines(keepends=True))
    out = "".join(head) + "fixes:\n" + (second or "") + "  - id: \"19514\"\n    kind: ours\n" + body
    meta.write_text(out)
    return meta


def test_the_stack_form_loads_the_same_fix_as_the_one_fix_form(tmp_path):
    root = _copy(tmp_path)
    before = patchset.load(root, "rc25")
    _stacked(root)
    after = patchset.load(root, "rc25")
    assert after.fixes[0].id == "19514"
    assert [p.name for p in after.patches] == [p.name for p in before.patches]
    assert after.fixes[0].expected == before.fixes[0].expected and after.upstream == before.upstream


def _backport_patch(root, target, name, paths):
    """A format-patch file of our own that adds the given files, with DEP-3 trailers."""
    diff = "".join(f"diff --git a/{p} b/{p}\nnew file mode 100644\n--- /dev/null\n+++ b/{p}\n@@ -0,0 +1 @@\n+x = 1\n"
                   for p in paths)
    (root / "patches" / target / name).write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: Up Stream <up@example.com>\nDate: Sun, 20 Sep 2026 12:00:00 +0000\n"
        "Subject: [PATCH] [#18609][fix] Guard the scheduler\n\nA guard.\n\n"
        "Origin: backport, https://github.com/NVIDIA/TensorRT-LLM/pull/19450\n"
        "Forwarded: not-needed\n---\n" + diff)


BACKPORT_ENTRY = """  - id: "19450"
    kind: backport
    title: "Guard the scheduler"
    bug: https://github.com/NVIDIA/TensorRT-LLM/issues/18609
    origin: https://github.com/NVIDIA/TensorRT-LLM/pull/19450
    series:
      - file: 0001-18609-fix-Guard-the-scheduler.patch
    tests:
      regression:
        - tests/unittest/_torch/executor/test_guard.py
"""


def test_a_stack_orders_fixes_and_each_has_its_own_tests(tmp_path):
    root = _copy(tmp_path)
    _backport_patch(root, "rc25", "0001-18609-fix-Guard-the-scheduler.patch",
                    ["tensorrt_llm/_torch/pyexecutor/guard.py", "tests/unittest/_torch/executor/test_guard.py"])
    _stacked(root, second=BACKPORT_ENTRY)
    ps = patchset.load(root, "rc25")
    assert [(f.id, f.kind) for f in ps.fixes] == [("19450", BACKPORT), ("19514", OURS)]
    assert ps.patches[0].provenance == {"Origin": "backport, https://github.com/NVIDIA/TensorRT-LLM/pull/19450",
                                        "Forwarded": "not-needed"}
    assert ps.primary.id == "19514"  # the only own fix
    assert ps.tests.regression == ("tests/unittest/_torch/executor/test_guard.py",
                                   "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py")
    assert stack.find(ps, None, ours=True).id == "19514"
    with pytest.raises(BadInput, match="carries 2 fixes"):
        stack.find(ps, None)
    with pytest.raises(NotFound, match=r"no fix '7' \(it carries: 19450 \(backport\), 19514 \(ours\)\)"):
        stack.find(ps, "7")
    with pytest.raises(BadInput, match="is a backport"):
        stack.find(ps, "19450", ours=True)


def test_the_tree_without_a_fix_keeps_the_rest_of_the_stack_and_the_fix_s_test_files(tmp_path):
    """A squash commit mixes code and tests in one patch: the tree without it gets its test part."""
    root = _copy(tmp_path)
    _backport_patch(root, "rc25", "0001-18609-fix-Guard-the-scheduler.patch",
                    ["tensorrt_llm/_torch/pyexecutor/guard.py", "tests/unittest/_torch/executor/test_guard.py"])
    _stacked(root, second=BACKPORT_ENTRY)
    ps = patchset.load(root, "rc25")
    back, ours = ps.fixes
    without_back = stack.without(ps, back)
    assert [p.paths for p in without_back] == [("tests/unittest/_torch/executor/test_guard.py",),
                                               *[p.paths for p in ours.patches]]
    assert "pyexecutor/guard.py" not in without_back[0].diff and "test_guard.py" in without_back[0].diff
    assert [p.name for p in stack.without(ps, ours)] == [back.patches[0].name, ours.patches[1].name]


def test_git_applies_the_test_part_of_a_mixed_patch(tmp_path):
    root = _copy(tmp_path)
    _backport_patch(root, "rc25", "0001-x.patch", ["pkg/a.py", "tests/test_a.py", "docs/a.md"])
    part = stack.test_part(patchset.parse_patch(root / "patches" / "rc25" / "0001-x.patch"))
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "p.diff").write_text(part.diff)
    subprocess.run(["git", "-C", str(repo), "apply", "p.diff"], check=True)
    assert sorted(str(p.relative_to(repo)) for p in repo.rglob("*.py")) == ["tests/test_a.py"]


@pytest.mark.parametrize("path, kind", [
    ("tensorrt_llm/_torch/pyexecutor/_util.py", stack.PACKAGE), ("tests/unittest/x/test_y.py", stack.TEST),
    ("cpp/tests/unit_tests/batch_manager/capacitySchedulerTest.cpp", stack.TEST),
    ("cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp", stack.WHEEL), ("CMakeLists.txt", stack.WHEEL),
    ("setup.py", stack.WHEEL), ("requirements.txt", stack.WHEEL), ("docs/source/models/encoder-decoder.md", stack.DOCS),
    ("examples/models/core/whisper/run.py", stack.DOCS), (".pre-commit-config.yaml", stack.DOCS), ("README.md", stack.DOCS),
])
def test_what_each_path_is_to_an_image(path, kind):
    assert stack.classify(path, "tensorrt_llm") == kind


def test_a_new_fix_goes_before_our_own_unless_told(tmp_path):
    root = _copy(tmp_path)
    ps = patchset.load(root, "rc25")
    ours = ps.fixes[0]
    import dataclasses
    new = dataclasses.replace(ours, id="19450", kind=BACKPORT, patches=())
    assert [f.id for f in stack.insert(ps, new)] == ["19450", "19514"]
    assert [f.id for f in stack.insert(ps, new, after="19514")] == ["19514", "19450"]
    with pytest.raises(NotFound, match="no fix '1'"):
        stack.insert(ps, new, before="1")
    replaced = dataclasses.replace(ours, title="moved")
    assert stack.insert(ps, replaced) == (replaced,)


def test_tests_only_must_agree_with_the_files(tmp_path):
    root = _copy(tmp_path)
    meta = root / "patches" / "rc25" / "patchset.yaml"
    meta.write_text(meta.read_text().replace(".patch\n  - file: 0002", ".patch\n    tests_only: true\n  - file: 0002", 1))
    with pytest.raises(BadInput, match=r"series\[0\]: tests_only: true, but 0001-.* changes tensorrt_llm/.*, which is "
                                       r"not a test file; remove the key"):
        patchset.load(root, "rc25")


MESSAGES = [
    "Body.\n\nOrigin: vendor\nBug: https://x/1\n",
    "Body.\n\nFixes #19514\n\nOrigin: upstream, https://x/pull/2\nForwarded: not-needed\n",
    "Body.\n\nFixes #19514\n",
    "Body.\n\nOrigin: a\n  continued here\nLast-Update: 2026-11-29\n",
    "Body.\n\nSome words here\nSigned-off-by: A <a@b>\n",
    "Body.\n\nSome words here\nmore words\nand more\nand more still\nSigned-off-by: A <a@b>\n",
    "Body.\n\nKey : spaced\nOther:tight\n",
    "Only a body line.\n",
]


@pytest.mark.parametrize("body", MESSAGES)
def test_trailers_are_read_as_git_interpret_trailers_reads_them(body):
    said = subprocess.run(["git", "-c", "trailer.separators=:", "interpret-trailers", "--parse"],
                          input=f"Subject\n\n{body}", capture_output=True, text=True, check=True).stdout
    git = [tuple(line.split(": ", 1)) for line in said.splitlines()]
    assert [(k, v) for k, v in patchset.trailers(body)] == git

"""Loading the patch sets: the real ones load; every kind of broken input is refused by name."""
from __future__ import annotations

import re

import pytest

from patchkit import patchset
from patchkit.errors import BadInput, NotFound

from helpers import ROOT, copy_root


@pytest.mark.parametrize("target", ["rc25", "main"])
def test_real_sets_load_with_fix_and_test_patches(target):
    ps = patchset.load(ROOT, target)
    assert [p.tests_only for p in ps.patches[:2]] == [False, True]
    assert "tensorrt_llm/_torch/pyexecutor/_util.py" in ps.patches[0].paths
    assert ps.patches[1].paths == ("tests/unittest/_torch/executor/test_cross_kv_cache_layout.py",)
    # after the fix and its test, only documentation (main's 0003: the encoder-decoder guide)
    assert all(not p.tests_only and all(f.startswith("docs/") for f in p.paths) for p in ps.patches[2:])
    for p in ps.patches:
        assert "Fixes #19514" in p.body
        assert p.author_email and p.date
    assert ps.waivers and ps.waivers.must_run == ps.tests.regression


def test_unknown_target_is_named():
    with pytest.raises(NotFound, match="unknown patch set 'nope'.*main, rc25"):
        patchset.load(ROOT, "nope")


def _break(tmp_path, edit):
    root = copy_root(tmp_path)
    patch = sorted((root / "patches" / "rc25").glob("0001-*.patch"))[0]
    patch.write_text(edit(patch.read_text()))
    return root


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("a/tensorrt_llm/_torch", "a/../outside"), "outside the tree"),
    (lambda t: t.replace("b/tensorrt_llm/_torch", "/etc/tensorrt_llm/_torch"), "outside the tree"),
    (lambda t: t.replace("a/tensorrt_llm/_torch", "a/.git/hooks").replace("b/tensorrt_llm/_torch", "b/.git/hooks"), "into .git"),
    (lambda t: t.replace("Subject:", "X-Subject:"), "not a git format-patch"),
    (lambda t: t.split("diff --git")[0], "contains no diff"),
    (lambda t: re.sub(r"@@ -1798,19 \+1798,\d+ @@", "@@ -1798,19 +1798,99 @@", t, count=1), "malformed diff"),
])
def test_broken_patch_is_refused(tmp_path, edit, message):
    root = _break(tmp_path, edit)
    with pytest.raises(BadInput, match=message):
        patchset.load(root, "rc25")


def test_symlink_creating_patch_is_refused(tmp_path):
    root = _break(tmp_path, lambda t: t)
    patch = sorted((root / "patches" / "rc25").glob("0002-*.patch"))[0]
    patch.write_text(patch.read_text().replace("new file mode 100644", "new file mode 120000"))
    with pytest.raises(BadInput, match="symlink"):
        patchset.load(root, "rc25")


@pytest.mark.parametrize("text, message", [
    ("series: [\n", "not valid YAML"),
    ("- just a list\n", "must be a YAML mapping"),
    ("title: t\nbug: b\nupstream: {url: u, ref: r}\nseries: []\n", r"patchset.yaml: series: must not be empty"),
    ("title: t\nbug: b\nupstream: {url: u, ref: r}\nseries: [missing.patch]\ntests: {regression: []}\ncontainer: {base: b, site_packages: s}\n", "does not exist"),
    ("title: t\nbug: b\nupstream: {url: u}\nseries: [x]\n", r"patchset.yaml: upstream.ref: is required"),
])
def test_broken_metadata_is_refused(tmp_path, text, message):
    root = copy_root(tmp_path)
    (root / "patches" / "rc25" / "patchset.yaml").write_text(text)
    with pytest.raises(BadInput, match=message):
        patchset.load(root, "rc25")


def test_each_set_says_which_form_of_the_fix_it_carries():
    """#25: rc25 carries the form verified on hardware; main a stated difference from it."""
    rc25, main = patchset.load(ROOT, "rc25").variant, patchset.load(ROOT, "main").variant
    assert rc25 is not None and rc25.name == "as-verified" and rc25.differs == ""
    assert main is not None and main.name != rc25.name
    assert main.differs.startswith("Unlike the form verified") and "v1.3.0rc25" in main.differs


@pytest.mark.parametrize("variant, message", [
    ("variant: {name: As Verified}\n", r"variant.name: 'As Verified' must be lower-case words joined by '-'"),
    ("variant: {differs: x.}\n", r"variant.name: is required"),
    ("variant: {name: ours, colour: red}\n", r"variant.colour: unknown key"),
    ("variant: {name: ours, differs: \"It differs. It also does more.\"}\n", r"variant.differs: must be one sentence"),
    ("variant: {name: ours, differs: \"It differs\"}\n", r"variant.differs: must be one sentence ending in '.'"),
    ("variant: {name: ours, differs: \"a\\nb.\"}\n", r"variant.differs: must be one line"),
])
def test_a_malformed_variant_is_refused_by_name(tmp_path, variant, message):
    root = copy_root(tmp_path)
    meta = root / "patches" / "rc25" / "patchset.yaml"
    text = meta.read_text()
    assert "variant:\n  name: as-verified\n" in text
    meta.write_text(text.replace("variant:\n  name: as-verified\n", variant))
    with pytest.raises(BadInput, match=message):
        patchset.load(root, "rc25")


def test_a_set_without_a_variant_loads_without_one(tmp_path):
    root = copy_root(tmp_path)
    meta = root / "patches" / "rc25" / "patchset.yaml"
    meta.write_text(meta.read_text().replace("variant:\n  name: as-verified\n", ""))
    assert patchset.load(root, "rc25").variant is None


def test_a_malformed_variant_in_a_stack_is_named_by_its_fix(tmp_path):
    from test_stack import _stacked
    root = copy_root(tmp_path)
    meta = _stacked(root)
    meta.write_text(meta.read_text().replace("name: as-verified", "name: As_Verified"))
    with pytest.raises(BadInput, match=r"fixes\[0\]\.variant\.name: 'As_Verified' must be lower-case"):
        patchset.load(root, "rc25")

"""Source mode: the real regression test, unmodified, against the miniature's real source.

The counts are measured by pytest (JUnit XML) and compared with what the patch set declares,
so the "23 of 30 fail unpatched, 30 of 30 pass patched" claim is checked, not typed in.
"""
from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from patchkit import patchset
from patchkit.delta import trees
from patchkit.git import Repo, resolve_target_ref
from helpers import ROOT, sh

MODULE = "tensorrt_llm._torch.pyexecutor._util"


def run_pytest(tree: Path, tests: list[str], tmp_path: Path):
    xml = tmp_path / f"{tree.name}.xml"
    res = sh(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "patchkit.delta.sourcemode",
             "--continue-on-collection-errors", "--source-root", tree, "--source-module", MODULE,
             "--rootdir", tree, f"--junitxml={xml}", *[tree / t for t in tests], cwd=tree, check=False)
    outcomes = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        status = "failed" if "failure" in kinds else "error" if "error" in kinds else \
            "skipped" if "skipped" in kinds else "passed"
        outcomes[(case.get("classname"), case.get("name"))] = (status, case)
    return res, outcomes


@pytest.fixture(params=["rc25", "main"])
def delta_trees(request, miniature_template, tmp_path):
    ps = patchset.load(ROOT, request.param)
    repo = Repo(miniature_template)
    _, base = resolve_target_ref(repo, ps.upstream.ref)
    return ps, trees.build(repo, base, ps, tmp_path / "trees")


def test_regression_test_gives_the_declared_delta_on_the_miniature(delta_trees, tmp_path):
    ps, tr = delta_trees
    [regression] = ps.tests.regression
    declared = ps.expected["source"][regression]
    for name, tree in (("unpatched", tr.unpatched), ("patched", tr.patched)):
        _, outcomes = run_pytest(tree, [regression], tmp_path)
        counts = Counter(status for status, _ in outcomes.values())
        assert dict(counts) == declared[name], name
    assert not (Path(tr.unpatched) / "tensorrt_llm/_torch/pyexecutor/_util.py").read_text().count("max_source_positions")


@pytest.mark.parametrize("delta_trees", ["main"], indirect=True)  # main declares the neighbour
def test_a_test_file_that_imports_torch_is_not_graded_against_placeholders(delta_trees, tmp_path):
    ps, tr = delta_trees
    assert ps.tests.neighbours
    res, outcomes = run_pytest(tr.patched, list(ps.tests.all), tmp_path)
    assert "not runnable in source mode" in res.stdout and "No module named 'torch'" in res.stdout
    neighbour = [k for k in outcomes if "dual_pool" in (k[0] or "") + k[1]]
    assert neighbour and all(outcomes[k][0] == "error" for k in neighbour)


def test_placeholders_do_not_leak_to_the_test_process(tmp_path):
    """Once the source module is loaded, 'import torch' from a test must still fail."""
    tree = tmp_path / "t"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "mod.py").write_text(
        "import torch\nfrom .sibling import Base\n\n@torch.no_grad()\ndef f(x):\n    return x + 1\n\n"
        "class C(Base):\n    dtype = torch.float16\n    table = {torch.int8: 1}\n")
    (tree / "test_it.py").write_text(
        "import importlib, pytest\nfrom pkg.mod import f, C\n\n"
        "def test_source_code_runs():\n    assert f(1) == 2 and C.dtype is not None\n\n"
        "def test_torch_is_not_there_for_tests():\n    with pytest.raises(ImportError):\n        importlib.import_module('torch')\n")
    res = sh(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "patchkit.delta.sourcemode",
             "--source-root", tree, "--source-module", "pkg.mod", "--rootdir", tree, tree / "test_it.py",
             cwd=tree, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 passed" in res.stdout

"""#31 item 15: the container-mode delta would fail on real upstream's conftest. Upstream's
tests/unittest/conftest.py appends tests/ to sys.path and imports
integration.defs.test_list_parser (and torch, tqdm, mpi4py); a release image installs no tests,
and the tree the delta mounts held only the test files and their conftest.py, so collection
failed in the image ("No module named 'integration'"). The miniature's conftest now imports as
upstream's does; the delta lays out the tree's modules it imports, found by following the
imports (pyimports), and the test images' stand-ins cover only what the tree does not hold.
The real run in the stand-in images: tests/container/test_container_delta.py (make test-slow)."""
from __future__ import annotations

import pytest

from helpers import ROOT, copy_project, sh
from stacks import own_entry, own_fix, stacked
from patchkit import patchset, pyimports
from patchkit.container.bases import stand_ins
from patchkit.delta import trees
from patchkit.git import Repo

DEFS = "tests/integration/defs"


def test_the_delta_lays_out_what_the_conftest_imports(miniature_template):
    ps = patchset.load(ROOT, "rc25")
    repo = Repo(miniature_template)
    base = sh("git", "-C", miniature_template, "rev-parse", "v1.3.0rc25^{commit}").stdout.strip()
    wanted = sorted(set(ps.touched_paths) | set(ps.tests.all))
    paths = trees.existing_paths(repo, base, ps, wanted, conftests=True)  # container mode: pytest imports them
    # the conftest on the way, the package it imports from tests/ (its __init__), the parser, and
    # the helper the parser imports in turn (a relative import)
    assert {"tests/unittest/conftest.py", f"{DEFS}/__init__.py", f"{DEFS}/test_list_parser.py",
            f"{DEFS}/trt_test_alternative.py"} <= set(paths)
    # never the package's files beyond those the set touches (the image's are under test), nor
    # anything of the tree's that nothing imports
    assert [p for p in paths if p.startswith("tensorrt_llm/")] == sorted(
        p for p in ps.touched_paths if p.startswith("tensorrt_llm/"))
    assert not [p for p in paths if p.startswith("tests/integration/test_lists")]
    # source mode runs --noconftest: what only the conftest imports is not laid out there
    assert not [p for p in trees.existing_paths(repo, base, ps, wanted) if p.startswith(DEFS)]


def test_a_test_file_a_fix_adds_brings_the_modules_it_imports(miniature_template, tmp_path):
    """A test file the stack adds is not at the ref: its imports are read from its patch."""
    root = copy_project(tmp_path / "project")
    new = "tests/unittest/_torch/executor/test_with_a_helper.py"
    files = own_fix(root, "rc25", miniature_template, tmp_path, "99998", "v1.3.0rc25", {},
                    {new: "from integration.defs.trt_test_alternative import print_info\n\n\n"
                          "def test_it():\n    print_info('hi')\n"}, 3)
    stacked(root, "rc25", miniature_template, tmp_path, pulls=(), after=own_entry("99998", files, [new]))
    ps = patchset.load(root, "rc25")
    base = sh("git", "-C", miniature_template, "rev-parse", "v1.3.0rc25^{commit}").stdout.strip()
    paths = trees.existing_paths(Repo(miniature_template), base, ps, sorted(set(ps.touched_paths) | {new}))
    assert {new, f"{DEFS}/__init__.py", f"{DEFS}/trt_test_alternative.py"} <= set(paths)
    assert f"{DEFS}/test_list_parser.py" not in paths


def test_the_images_stand_ins_leave_the_trees_own_modules_to_it(miniature_template, tmp_path):
    """A stand-in for integration.defs in site-packages comes before the tests/ the conftest
    appends to sys.path: it would hide the tree's own parser (and the bug above with it)."""
    trees.archive(Repo(miniature_template), "v1.3.0rc25", tmp_path / "tree", None)
    made = stand_ins(tmp_path / "tree")
    assert not [f for f in made if f.split("/")[0] == "integration"]
    assert {"torch.py", "tqdm.py", "mpi4py/__init__.py", "mpi4py/futures.py"} <= set(made)


TREE = pyimports.Tree([
    "pkg/__init__.py", "pkg/mod.py", "tests/helpers.py", "tests/unit/conftest.py", "tests/unit/test_a.py",
    "tests/defs/__init__.py", "tests/defs/parser.py", "tests/defs/alt.py", "tests/ns/inner.py"])


@pytest.mark.parametrize("path, source, loads", [
    ("tests/unit/conftest.py", "from defs import parser", ["tests/defs/__init__.py", "tests/defs/parser.py"]),
    ("tests/defs/parser.py", "from .alt import x", ["tests/defs/__init__.py", "tests/defs/alt.py"]),
    ("tests/defs/parser.py", "from . import alt", ["tests/defs/__init__.py", "tests/defs/alt.py"]),
    ("tests/unit/test_a.py", "import helpers", ["tests/helpers.py"]),
    ("tests/unit/test_a.py", "from ns import inner", ["tests/ns/inner.py"]),  # a namespace package
    ("tests/unit/test_a.py", "import torch", None),  # not the tree's: the image's
    ("tests/unit/test_a.py", "from pkg.mod import f", None),  # the tree's top is never searched
])
def test_an_import_resolves_from_the_nearest_folder_above_the_file_that_has_it(path, source, loads):
    [imp] = pyimports.imports(source, path.split("/")[:-1])
    assert TREE.resolve(path, imp, with_top=False) == loads

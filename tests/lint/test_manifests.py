"""The local mirrors' hook manifests are the real ones at upstream's pinned revs (#16).

pre-commit merges a repository's manifest under the config's hook: what upstream's config does
not say (default args, which files a hook selects) comes from the manifest, so ours must hold
the same values. Neither PyPI sdist (autoflake 2.3.1, isort 5.12.0) ships .pre-commit-hooks.yaml;
the facts below were read with the search tools on 2026-12-01, where each is from.
"""
from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from patchkit.lint import mirrors

# Each repository's manifest at the rev upstream's config pins: the values, and where they come from.
FACTS = {
    ("https://github.com/PyCQA/autoflake", "v2.3.1"): (
        # PyCQA/autoflake .pre-commit-hooks.yaml @ 21284234d58c (the one indexed version)
        {"id": "autoflake", "name": "autoflake", "entry": "autoflake", "language": "python", "types": ["python"],
         "require_serial": True,
         "args": ["--in-place", "--expand-star-imports", "--remove-duplicate-keys", "--remove-unused-variables"]},),
    ("https://github.com/pycqa/isort", "5.12.0"): (
        # PyCQA/isort: `types: [python]` @ 30e15ab8251b, then `files: '.pxd$|.py$'` with --filter-files
        # @ 0179b07d680a (PR #1549, 2020-10), then types_or cython/pyi/python (PR #1612, 2020-12) with
        # minimum_pre_commit_version 2.9.2, as a copy of the 5.10 manifest shows; `stages` and 3.2.0
        # came with pre-commit 3.2 (2023-03), after 5.12.0 (2023-01).
        {"id": "isort", "name": "isort", "entry": "isort", "require_serial": True, "language": "python",
         "types_or": ["cython", "pyi", "python"], "args": ["--filter-files"],
         "minimum_pre_commit_version": "2.9.2"},),
}


@pytest.mark.parametrize(("url", "rev"), sorted(FACTS))
def test_the_mirrors_manifest_is_the_repositorys_own_at_the_rev(url, rev, tmp_path):
    """autoflake's mirror ran with --in-place alone and isort's lacked its version floor: a config
    that keeps a hook's default args would have run other tools than upstream's CI does."""
    mirror = mirrors.ensure(tmp_path, url, rev)
    manifest = mirror / ".pre-commit-hooks.yaml"
    assert yaml.safe_load(manifest.read_text()) == list(FACTS[url, rev])
    # pre-commit itself judges the manifest we wrote.
    res = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest", str(manifest)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr

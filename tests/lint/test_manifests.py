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
    # The repositories #24 added (upstream's config at 01a5640e8632 pins mirrors-clang-format
    # v16.0.0, cmake-format-precommit v0.6.10 and mdformat 0.7.17; older configs mirrors-yapf).
    ("https://github.com/pre-commit/mirrors-clang-format", "v16.0.0"): (
        # @ 579d9fe3b1ee: pre-commit-mirror-maker's output with `--entry='clang-format -i'`,
        # textproto among the types (its PR #22, merged 2023-03-11, before clang-format 16.0.0 was
        # published); the hand-written form with `-i` in args and four types (@ 02f28487ccf3) is later.
        {"id": "clang-format", "name": "clang-format", "description": "", "entry": "clang-format -i",
         "language": "python",
         "types_or": ["c++", "c", "c#", "cuda", "java", "javascript", "json", "objective-c", "proto", "textproto"],
         "args": ["-style=file"], "require_serial": False, "additional_dependencies": [],
         "minimum_pre_commit_version": "2.9.2"},),
    ("https://github.com/cheshirekow/cmake-format-precommit", "v0.6.10"): (
        # @ 0da752293ed0 (its setup.py pins the tool of the tag: cmake_format, cmakelang from 0.6.12)
        {"id": "cmake-format", "name": "cmake-format",
         "description": "cmake-format can format your listfiles nicely so that they don't look like crap.",
         "entry": "cmake-format --in-place", "language": "python", "types": ["cmake"]},
        {"id": "cmake-lint", "name": "cmake-lint",
         "description": "cmake-lint will check your listfiles for style violations, common mistakes, and "
                        "anti-patterns.", "entry": "cmake-lint", "language": "python", "types": ["cmake"]}),
    ("https://github.com/executablebooks/mdformat", "0.7.17"): (
        # @ 11bf1813bea5 (the one indexed version; the repository is the package itself)
        {"id": "mdformat", "name": "mdformat", "description": "CommonMark compliant Markdown formatter",
         "entry": "mdformat", "language": "python", "language_version": "python3", "types": ["markdown"],
         "minimum_pre_commit_version": "1.0.0"},),
    ("https://github.com/pre-commit/mirrors-yapf", "v0.32.0"): (
        # @ 1f4cc3b9e2a8 (upstream's older configs pin it; the same tool as google/yapf's hook)
        {"id": "yapf", "name": "yapf", "entry": "yapf", "language": "python", "types": ["python"], "args": ["-i"],
         "require_serial": False, "additional_dependencies": [], "minimum_pre_commit_version": "0"},),
    ("https://github.com/pre-commit/mirrors-mypy", "v1.13.0"): (
        # @ 5ecfb11dc5d2, one of three forms in the index (args and types differ between them; which
        # tags carry which is not recorded there). Upstream's config at 01a5640e8632 runs mypy from a
        # local hook over the whole repository, which this lint does not run.
        {"id": "mypy", "name": "mypy", "entry": "mypy", "language": "python", "types_or": ["python", "pyi"],
         "args": ["--ignore-missing-imports", "--scripts-are-modules"], "require_serial": True,
         "additional_dependencies": [], "minimum_pre_commit_version": "2.9.2"},),
}


FIRST = {("https://github.com/PyCQA/autoflake", "v2.3.1"), ("https://github.com/pycqa/isort", "5.12.0")}


@pytest.mark.parametrize(("url", "rev"), [pytest.param(*k, marks=() if k in FIRST else pytest.mark.slow)  # make test: two
                                          for k in sorted(FACTS)])
def test_the_mirrors_manifest_is_the_repositorys_own_at_the_rev(url, rev, tmp_path):
    """autoflake's mirror ran with --in-place alone and isort's lacked its version floor: a config
    that keeps a hook's default args would have run other tools than upstream's CI does."""
    mirror = mirrors.ensure(tmp_path, url, rev, mirrors.pin(mirrors.MIRRORS[mirrors.key(url)], rev.lstrip("v")))
    manifest = mirror / ".pre-commit-hooks.yaml"
    assert yaml.safe_load(manifest.read_text()) == list(FACTS[url, rev])
    # pre-commit itself judges the manifest we wrote.
    res = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest", str(manifest)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr

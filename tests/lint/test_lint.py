"""make lint: upstream's own pre-commit hooks (the real tools from PyPI) on the series' files (#16)."""
from __future__ import annotations

import json
import time
import re
from pathlib import Path

import pytest

from helpers import HOOK_ENVS_BY_UV, ROOT, WHEELHOUSE, closed_port, copy_root, needs_hook_tools, sh, tiered
from patchkit.cli import main
from patchkit.lint import config as lint_config, mirrors, run as lint_run
from robust.test_upstream_moves import only

TEST_PATCH = "0002-19514-test-Cover-the-cross-KV-pool-length-of-encoder.patch"
TEST_FILE = "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"

pytestmark = needs_hook_tools


def _lint(root, src, cache, report, *extra):
    return main(["--root", str(root), "lint", "--target", "main", "--src", str(src), "--cache", str(cache),
                 "--report", str(report), *extra])


@pytest.mark.slow  # FIX=1 rewrites the series and the delta runs again: make test-slow (.ci/run); make test lints in test_cold and the PR goldens
def test_a_misformatted_test_patch_fails_ruff_format_and_fix_mends_it(miniature_template, tmp_path, lint_cache,
                                                                      capsys):
    """The test file in yapf's style failed upstream's ruff-format hook, and nothing told us."""
    root = copy_root(tmp_path)
    patch = root / "patches" / "main" / TEST_PATCH
    good = patch.read_bytes()
    line = b'+GENERIC_LENGTH_NAMES = ("max_position_embeddings", "n_positions")\n'
    assert line in good
    patch.write_bytes(good.replace(line, b'+GENERIC_LENGTH_NAMES = ( "max_position_embeddings",  "n_positions" )\n'))
    report = tmp_path / "lint.json"

    assert _lint(root, miniature_template, lint_cache, report) == 1
    out = capsys.readouterr().out
    failing = [ln for ln in out.splitlines() if ln.startswith(TEST_FILE)]
    assert len(failing) == 1 and re.match(rf"{re.escape(TEST_FILE)}\s+ruff-format\s+rewrites the file", failing[0]), out
    data = json.loads(report.read_text())
    assert not data["ok"] and [f["hook"] for f in data["failures"]] == ["ruff-format"]
    assert data["tools"]["ruff-format"] == "ruff==0.9.4"

    assert _lint(root, miniature_template, lint_cache, report, "--fix") == 0
    out = capsys.readouterr().out
    assert f"FIX rewrote: {TEST_PATCH}" in out and "every hook that ran passes" in out
    # ruff-format's version of the line is the set's own: the mended patch is the committed one
    # (whose export round trip and declared delta the export and delta tests hold), but what an
    # export writes on a patch it changed: the new file's index line and today's Last-Update.
    mended = patch.read_text()
    assert re.search(r"^Last-Update: \d{4}-\d\d-\d\d$", mended, re.M), mended
    assert re.search(r"^index 0{40}\.\.[0-9a-f]{40}$", mended, re.M), mended
    assert _unstamped(mended) == _unstamped(good.decode())


def _unstamped(patch: str) -> str:
    return "".join(ln for ln in patch.splitlines(True) if not ln.startswith(("index ", "Last-Update: ")))


def test_a_hook_that_cannot_run_is_named_not_run_and_only_when_it_selects_a_file(tmp_path):
    """Selection stays pre-commit's own: a repository we cannot mirror becomes a failing stand-in
    with the same files/types, so pre-commit says whether it would have checked our files."""
    text = ("repos:\n"
            "-   repo: https://github.com/jumanjihouse/pre-commit-hooks\n    rev: 3.0.0\n"
            "    hooks:\n    -   id: forbid-binary\n"
            "-   repo: local\n    hooks:\n"
            "    -   id: waive-check\n        entry: ./scripts/check_test_list.py\n        language: script\n"
            "        pass_filenames: false\n"
            "    -   id: md-only\n        entry: ./scripts/md.py\n        language: script\n        files: \\.md$\n"
            "-   repo: https://github.com/astral-sh/ruff-pre-commit\n    rev: v0.9.4\n"
            "    hooks:\n    -   id: ruff-format\n")
    plan = lint_config.plan(text, wheelhouse=WHEELHOUSE, exists=lambda p: False)
    assert set(plan.not_run) == {"forbid-binary", "waive-check", "md-only"}
    assert "no package on PyPI" in plan.not_run["forbid-binary"]
    url = "https://github.com/astral-sh/ruff-pre-commit"
    assert plan.redirects == {url: (mirrors.mirror_rev(url, "v0.9.4"), "ruff==0.9.4")}
    stand_in = {h["id"]: h for r in plan.config["repos"] if r["repo"] == "local" for h in r["hooks"]}
    assert stand_in["md-only"]["language"] == "fail" and stand_in["md-only"]["files"] == "\\.md$"


def test_mirrors_pin_the_tool_at_the_rev():
    assert mirrors.key("https://github.com/PyCQA/autoflake.git") == "github.com/pycqa/autoflake"
    assert mirrors.pin(mirrors.MIRRORS["github.com/google/yapf"], "0.43.0") == "yapf==0.43.0"
    assert mirrors.pin(mirrors.MIRRORS["github.com/pycqa/isort"], "5.12.0") == "isort==5.12.0"
    # cmake-format-precommit pinned cmake_format, then cmakelang (PyPI has cmakelang from 0.6.12 on)
    cmake = mirrors.MIRRORS["github.com/cheshirekow/cmake-format-precommit"]
    assert (mirrors.pin(cmake, "0.6.10"), mirrors.pin(cmake, "0.6.13")) == ("cmake-format==0.6.10", "cmakelang==0.6.13")


def test_pre_commit_output_is_read_per_hook():
    out = ("isort....................................................................Passed\n"
           "- hook id: isort\n- duration: 0.1s\n"
           "ruff-format..............................................................Failed\n"
           "- hook id: ruff-format\n- duration: 0.01s\n- files were modified by this hook\n\n1 file reformatted\n\n"
           "mdformat.............................................(no files to check)Skipped\n- hook id: mdformat\n")
    runs = lint_run.parse(out)
    assert [(r.id, r.status, r.modified) for r in runs] == [
        ("isort", "passed", False), ("ruff-format", "failed", True), ("mdformat", "not_selected", False)]
    assert lint_run.wants(runs[1], Path("/w")) == "rewrites the file (1 file reformatted)"


@pytest.mark.slow  # four lint runs: make test-slow (.ci/run)
def test_an_unchanged_series_reuses_its_passing_verdict_and_a_failing_one_always_runs(miniature_template, tmp_path,
                                                                                     lint_cache, capsys):
    """make pr lints again right after make lint: the same inputs keep their passing verdict (and
    say so); any change to a file runs the hooks again, and a failing verdict is never kept."""
    root = copy_root(tmp_path)
    patch = root / "patches" / "main" / TEST_PATCH
    first = b'+"""Cross-attention KV pool length for encoder-decoder models (#19514).\n'
    assert first in patch.read_bytes()
    unique = f"+\"\"\"Cross-attention KV pool length for encoder-decoder models (#19514, {time.time_ns()}).\n"
    patch.write_bytes(patch.read_bytes().replace(first, unique.encode()))
    report = tmp_path / "lint.json"
    said = "(the verdict of an earlier run on exactly these files, config, settings and tools)"
    assert _lint(root, miniature_template, lint_cache, report) == 0
    assert said not in capsys.readouterr().out and json.loads(report.read_text())["memo"] is False
    assert _lint(root, miniature_template, lint_cache, report) == 0
    assert said in capsys.readouterr().out and json.loads(report.read_text())["memo"] is True
    patch.write_bytes(patch.read_bytes().replace(b'+GENERIC_LENGTH_NAMES = (', b'+GENERIC_LENGTH_NAMES = ( '))
    for _ in range(2):
        assert _lint(root, miniature_template, lint_cache, report) == 1
        assert said not in capsys.readouterr().out and json.loads(report.read_text())["memo"] is False


def test_remove_crlf_is_imitated_and_says_so(tmp_path):
    """Lucas-C/pre-commit-hooks has no package on PyPI, and upstream runs its remove-crlf on every
    file: the hook runs as patchkit's imitation, named as such, and does what the hook does."""
    text = ("repos:\n-   repo: https://github.com/Lucas-C/pre-commit-hooks.git\n    rev: v1.5.5\n"
            "    hooks:\n    -   id: remove-crlf\n")
    plan = lint_config.plan(text, wheelhouse=WHEELHOUSE, exists=lambda p: False)
    assert plan.not_run == {} and plan.pins == {"remove-crlf": "patchkit's imitation; no package on PyPI at v1.5.5"}
    namespace: dict = {}
    exec(mirrors.MIRRORS["github.com/lucas-c/pre-commit-hooks"].imitation, namespace)
    crlf, lf = tmp_path / "crlf.py", tmp_path / "lf.py"
    crlf.write_bytes(b"a = 1\r\nb = 2\r\n")
    lf.write_bytes(b"a = 1\nb = 2\n")
    assert namespace["main"]([str(lf)]) == 0 and lf.read_bytes() == b"a = 1\nb = 2\n"
    assert namespace["main"]([str(lf), str(crlf)]) == 1 and crlf.read_bytes() == b"a = 1\nb = 2\n"


@pytest.mark.parametrize("route", tiered("uv", "virtualenv and pip"))
def test_hook_environments_are_built_from_the_wheelhouse_alone_whatever_index_is_configured(upstream, tmp_path,
                                                                                            monkeypatch, route):
    """#34 item 1: pre-commit builds the hook environments with uv (pre-commit-uv, which make setup
    installs with uv), offline, from the wheelhouse alone: neither the user's index settings (pip's,
    uv's own, their uv.toml) nor upstream's pyproject.toml [tool.uv], which pre-commit-uv's
    `uv --project <workspace>` would read, reach it. All of them name a closed port here, and a
    cold hook environment is built, its mirror's package by the mirror's own backend, and its
    hooks run; so too with virtualenv and pip (make setup's fallback, or pre-commit-uv turned off)."""
    if route != "uv":
        monkeypatch.setenv("DISABLE_PRE_COMMIT_UV_PATCH", "1")  # pre-commit-uv's own switch
    dead = f"http://127.0.0.1:{closed_port()}/simple"
    only(upstream, "astral-sh/ruff-pre-commit")
    pyproject = upstream / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + f'\n[tool.uv]\nindex-url = "{dead}"\n[tool.uv.pip]\nindex-url = "{dead}"\n')
    sh("git", "-C", upstream, "commit", "-q", "-am", "uv's index in pyproject.toml")
    for var in ("PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX"):
        monkeypatch.setenv(var, dead)
    (tmp_path / "config" / "uv").mkdir(parents=True)
    (tmp_path / "config" / "uv" / "uv.toml").write_text(f'index-url = "{dead}"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    cache, report = tmp_path / "lint-cache", tmp_path / "lint.json"  # cold: no hook environment yet
    assert main(["--root", str(ROOT), "lint", "--target", "main", "--src", str(upstream), "--cache", str(cache),
                 "--report", str(report)]) == 0
    assert json.loads(report.read_text())["ran"] == ["ruff", "ruff-format"]
    (made,) = (cache / "pre-commit").glob("repo*/py_env-*/pyvenv.cfg")
    assert ("uv = " in made.read_text()) == (HOOK_ENVS_BY_UV and route == "uv"), made.read_text()

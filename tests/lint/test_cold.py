"""make lint on a cold clone: the blobs upstream's hooks need beyond the set's, fetched alone (#16).

A cold make apply is a one-commit, blobless, sparse clone of the set's paths. The miniature's
main has a local hook in the shape of upstream's copyright-header hook: a script of the
repository (`language: script`) that reads a baseline file beside it. make lint must fetch the
config, the script and that baseline, and no other blob of the tree; a script the remote
cannot send makes its hook "not run", named with git's reason, never passed.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT, WHEELHOUSE, needs_hook_tools, sh
from patchkit.cli import main
from patchkit.lint import config as lint_config
from test_fetch import blobs_at, of_type, received

CONFIG = ".pre-commit-config.yaml"
SCRIPT = "scripts/check_copyright_header.py"
BASELINE = "scripts/copyright_header_baseline.txt"
HOOK = "copyright-header"

pytestmark = needs_hook_tools


def _cold(upstream: Path, tmp_path: Path) -> tuple[Path, set[str]]:
    """make apply's cold clone of upstream's main, and the blobs it received."""
    src = tmp_path / "trtllm"
    assert main(["--root", str(ROOT), "--quiet", "apply", "--target", "main", "--src", str(src),
                 "--url", upstream.as_uri()]) == 0
    assert sh("git", "-C", src, "config", "remote.origin.promisor").stdout.strip() == "true"
    return src, of_type(received(src), "blob")


def _lint(src: Path, cache: Path, report: Path) -> int:
    return main(["--root", str(ROOT), "lint", "--target", "main", "--src", str(src), "--cache", str(cache),
                 "--report", str(report)])


def test_a_local_hooks_script_and_the_file_it_reads_are_fetched_alone_and_the_hook_runs(upstream, tmp_path,
                                                                                         lint_cache, capsys):
    src, before = _cold(upstream, tmp_path)
    tip = sh("git", "-C", upstream, "rev-parse", "main").stdout.strip()
    assert not blobs_at(upstream, tip, [SCRIPT, BASELINE]) & before  # apply did not bring them
    report = tmp_path / "lint.json"
    assert _lint(src, lint_cache, report) == 0
    data = json.loads(report.read_text())
    assert HOOK in data["ran"] and HOOK not in data["not_run"], data
    assert "ran: " in capsys.readouterr().out
    fetched = of_type(received(src), "blob") - before
    # The config, the tools' settings the set's paths did not bring, the script and its baseline:
    # nothing else of the tree.
    needed = blobs_at(upstream, tip, [CONFIG, "pyproject.toml", SCRIPT, BASELINE]) - before
    assert fetched == needed and blobs_at(upstream, tip, [SCRIPT, BASELINE]) <= fetched
    assert len(fetched) < len(sh("git", "-C", upstream, "ls-tree", "-r", tip).stdout.splitlines()) / 5


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_the_hook_fails_a_source_file_without_a_header_unless_the_baseline_has_it(upstream, tmp_path, lint_cache,
                                                                                   capsys):
    """The hook really runs the script on our files (and the script reads its baseline): a
    baseline without _util.py makes it fail on _util.py, which has no header."""
    util = "tensorrt_llm/_torch/pyexecutor/_util.py"
    text = (upstream / BASELINE).read_text()
    assert util in text
    (upstream / BASELINE).write_text(text.replace(util + "\n", ""))
    sh("git", "-C", upstream, "commit", "-q", "-am", "Backfill: _util.py is no longer grandfathered")
    src, _ = _cold(upstream, tmp_path)
    report = tmp_path / "lint.json"
    assert _lint(src, lint_cache, report) == 1
    out = capsys.readouterr().out
    assert any(ln.startswith(util) and HOOK in ln and "no copyright header" in ln for ln in out.splitlines()), out


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_script_the_remote_cannot_send_is_named_not_run_never_passed(upstream, tmp_path, lint_cache, capsys):
    tip = sh("git", "-C", upstream, "rev-parse", "main").stdout.strip()
    (blob,) = blobs_at(upstream, tip, [SCRIPT])
    src, _ = _cold(upstream, tmp_path)
    objects = upstream / ".git" / "objects"
    for pack in list((objects / "pack").glob("*.pack")):  # the miniature's are packed (conftest): loose again
        data = pack.read_bytes()
        for part in pack.parent.glob(f"{pack.stem}.*"):
            part.unlink()
        subprocess.run(["git", "-C", upstream, "unpack-objects", "-q"], input=data, check=True)
    loose = objects / blob[:2] / blob[2:]
    assert loose.is_file()
    loose.unlink()  # the server no longer has the script's blob
    report = tmp_path / "lint.json"
    assert _lint(src, lint_cache, report) == 0  # the hooks that ran pass; the one that could not is named
    out = capsys.readouterr().out
    data = json.loads(report.read_text())
    assert HOOK not in data["ran"] and data["not_run"][HOOK].startswith(f"{SCRIPT} could not be fetched (")
    assert blob in data["not_run"][HOOK]  # git's own reason names the object
    assert f"not run here: {HOOK} ({SCRIPT} could not be fetched" in out


def test_a_python_hook_run_by_python3_names_its_script():
    """`entry: python3 scripts/x.py` was taken for a command outside the repository."""
    text = ("repos:\n-   repo: local\n    hooks:\n"
            "    -   id: mine\n        entry: python3 scripts/mine.py --strict\n        language: python\n"
            "    -   id: gone\n        entry: ./scripts/gone.py\n        language: script\n")
    plan = lint_config.plan(text, wheelhouse=WHEELHOUSE, exists=lambda p: True,
                            unavailable={"scripts/gone.py": "scripts/gone.py could not be fetched (x)"})
    assert plan.scripts == {"scripts/mine.py"}
    assert plan.not_run == {"gone": "scripts/gone.py could not be fetched (x)"}

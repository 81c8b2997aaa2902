"""End to end through make, the way a user runs it (the venv step is skipped: SETUP=)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from helpers import ROOT, sh


def make(*args, cwd=ROOT):
    return sh("make", "-s", "-C", cwd, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit", *args, check=False)


@pytest.mark.slow  # the whole demo (both sets, lint, pr): make test-slow; .ci/run also runs make test-slow
def test_make_demo_is_a_line_per_step_then_a_table_and_next_steps(tmp_path):
    """#27 item 4: make demo printed about 340 lines (two whole PR bodies), headings that left
    out the URL and path they used (copied, they reached GitHub), and no summary or next step.
    Now: a line per step with what it found and the command that does it by hand, a table, and
    next steps; each step's whole output and the PR bodies in files it names (golden: its shape)."""
    build = tmp_path / "build"
    ours = {p: p.read_bytes() for p in sorted((ROOT / "patches").rglob("*")) if p.is_file()}
    res = make(f"BUILD={build}", "demo")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) <= 60, len(lines)
    shape = re.sub(r"\b[0-9a-f]{12}\b", "<commit>", res.stdout.replace(str(tmp_path), "<tmp>"))
    golden("demo.txt", re.sub(r"\b\d+ hooks pass\b", "<n> hooks pass", shape))  # upstream's config decides n
    for target in ("main", "rc25"):  # n: what the lint report says ran
        ran = len(json.loads((build / "demo" / f"lint-{target}.json").read_text())["ran"])
        assert f"{target}  lint         {ran} hooks pass  $ " in res.stdout
    # It ends with the table and the next steps.
    table = lines.index(next(line for line in lines if line.startswith("target  fixes  ")))
    assert [line.split()[0] for line in lines[table + 1:table + 3]] == ["main", "rc25"] and lines[table + 3] == ""
    assert all(line.startswith("next: ") for line in lines[table + 4:]) and len(lines) - table - 4 == 4
    # The files it names hold what it left out: every step's whole output, the PR bodies.
    full = (build / "demo" / "demo.txt").read_text()
    assert "verdict: matches the declared delta" in full and full.count("== ") == len(lines[2:table - 1])
    assert "1 line becomes 3:" in full and "[#19514][fix] Size the cross-attention KV cache" in full
    for target in ("main", "rc25"):
        assert (build / "demo" / "pr" / target / "body.md").read_text().startswith("@coderabbitai summary")
    # A step's command, copied, runs as printed on the miniature (its URL and paths in it).
    waivers = next(line for line in lines if line.startswith("rc25  waivers")).split("  $ ", 1)[1]
    assert f"TRTLLM_SRC={build}/demo/trtllm-rc25" in waivers
    env = dict(os.environ, SETUP="", PATCHKIT=f"{sys.executable} -m patchkit")
    again = subprocess.run(["bash", "-c", waivers], cwd=ROOT, env=env, text=True, capture_output=True)
    assert again.returncode == 0 and "edit: 1 line(s) of" in again.stdout, again.stderr
    assert all("github.com" not in line.split("  $ ", 1)[1] for line in lines if "  $ " in line)
    # #26 item 7: rc25 carries PR 19450 beneath our fix, in the demo's copy of the sets, never in
    # the project's own patches/; its backport line, copied, runs as printed (nothing moved: unchanged).
    project = build / "demo" / "project"
    assert {p: p.read_bytes() for p in sorted((ROOT / "patches").rglob("*")) if p.is_file()} == ours
    assert "id: \"19450\"" in (project / "patches" / "rc25" / "patchset.yaml").read_text()
    backport = next(line for line in lines if line.startswith("rc25  backport")).split("  $ ", 1)[1]
    assert backport.startswith(f"PATCHKIT_ROOT={project} make backport TRTLLM=rc25 ") and "PR=19450" in backport
    again = subprocess.run(["bash", "-c", backport], cwd=ROOT, env=env, text=True, capture_output=True)
    assert again.returncode == 0 and again.stdout.splitlines()[-1] == "patches/rc25: unchanged (nothing moved upstream)", \
        again.stdout + again.stderr
    # The PR branch carries our fix alone: no commit of the backport.
    rc25 = build / "demo" / "trtllm-rc25"
    subjects = sh("git", "-C", rc25, "log", "--format=%s", "v1.3.0rc25..pr/rc25").stdout.splitlines()
    assert subjects and all("19514" in s or "waive" in s.lower() for s in subjects), subjects
    # #27 item 6: make summary over the demo's folder, as its next line says (on the demo's copy of
    # the sets, which its reports were made on: the project's own rc25 carries no fix 19450).
    said = next(line for line in lines if line.startswith("next: one table")).split(": ", 2)[2]
    assert said == f"PATCHKIT_ROOT={project} make summary REPORTS={build}/demo"
    summary = subprocess.run(["bash", "-c", f"{said} BUILD={build}"], cwd=ROOT, env=env, text=True, capture_output=True)
    assert summary.returncode == 0, summary.stdout + summary.stderr
    assert f"skipped, not reports (3): {build}/demo/trtllm-main/ (a git checkout)" in summary.stdout


def golden(name: str, text: str) -> None:
    path = ROOT / "tests" / "golden" / name
    if os.environ.get("PATCHKIT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from tests/golden (PATCHKIT_UPDATE_GOLDEN=1 to accept)"


def test_make_apply_then_unapply_on_a_local_url(tmp_path, upstream):
    src = tmp_path / "src"
    res = make(f"TRTLLM_SRC={src}", f"TRTLLM_URL={upstream.as_uri()}", "TRTLLM=rc25", "apply")
    assert res.returncode == 0, res.stderr
    assert sh("git", "-C", src, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() == "overlay/rc25"
    res = make(f"TRTLLM_SRC={src}", "TRTLLM=rc25", "unapply")
    assert res.returncode == 0, res.stderr
    assert sh("git", "-C", src, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() == "HEAD"


def test_make_apply_with_bad_target_fails_with_one_line(tmp_path):
    res = make(f"TRTLLM_SRC={tmp_path}/x", "TRTLLM=../etc", "apply")
    assert res.returncode != 0
    assert "patchkit: error: invalid patch set name '../etc'" in res.stderr


def test_make_passes_the_defaults_it_declares(tmp_path):
    """`export VAR` before `VAR ?= default` defined VAR as empty, so the default never applied:
    `make container-push REGISTRY=...` died on --tls-verify='' and export got --branch=''."""
    argv_file, recorder = tmp_path / "argv", tmp_path / "record-argv"
    recorder.write_text(f"#!/bin/sh\nfor a; do printf '%s\\n' \"$a\"; done > {argv_file}\n")
    recorder.chmod(0o755)

    def argv(*args):
        res = sh("make", "-s", "-C", ROOT, "SETUP=", f"PATCHKIT={recorder}", *args, check=False)
        assert res.returncode == 0, res.stderr
        return argv_file.read_text().splitlines()

    assert "--tls-verify=true" in argv("TRTLLM=rc25", "REGISTRY=localhost:5000/x", "container-push")
    assert "--branch=overlay/rc25" in argv("TRTLLM=rc25", "export")
    assert "--branch=overlay/main" in argv("check-export")
    assert "--tls-verify=false" in argv("REGISTRY=r/x", "TLS_VERIFY=false", "container-push")


def test_a_verdicts_exit_1_says_so_beside_makes_own_error(checkout):
    """#27 item 4: a command whose exit 1 is its verdict (radar "changed", a delta mismatch, dco
    violations...) left `make: *** [...] Error 1` as the only word on stderr."""
    sh("git", "-C", checkout, "checkout", "-q", "-b", "work")
    (checkout / "NOTES.md").write_text("unsigned\n")
    sh("git", "-C", checkout, "add", "NOTES.md")
    sh("git", "-C", checkout, "commit", "-q", "-m", "An unsigned commit")
    res = make(f"TRTLLM_SRC={checkout}", "BRANCH=work", "dco")
    assert res.returncode == 2 and "1 violation(s)" in res.stdout, res.stderr
    said, make_said = res.stderr.splitlines()
    assert said == "patchkit: exit 1 is dco's verdict, not a failure to run: 1 commit(s) without a valid sign-off (above)"
    assert re.fullmatch(r"make(\[\d+\])?: \*\*\* \[.*\] Error 1", make_said), make_said  # make[1] under make test

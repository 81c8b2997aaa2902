"""End to end through make, the way a user runs it (the venv step is skipped: SETUP=)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT, sh


def make(*args, cwd=ROOT):
    return sh("make", "-s", "-C", cwd, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit", *args, check=False)


def command_under(lines: list[str], step: str) -> str:
    """The command printed under a step's line (after `  $ `, with its ` \\` continuation lines), as printed."""
    at = next(i for i, line in enumerate(lines) if line.startswith(step))
    start = next(i for i in range(at + 1, len(lines)) if lines[i].startswith("  $ "))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith(" \\"))
    return "\n".join(lines[start:end + 1])[len("  $ "):]


@pytest.mark.slow  # the whole demo (both sets, lint, pr): make test-slow; .ci/run also runs make test-slow
def test_make_demo_is_a_line_per_step_then_a_table_and_next_steps(tmp_path):
    """#27 item 4: make demo printed about 340 lines (two whole PR bodies), headings that left
    out the URL and path they used (copied, they reached GitHub), and no summary or next step.
    Now: a line per step with what it found and under it the command that does it by hand, a
    table, and next steps; each step's whole output and the PR bodies in files it names (golden:
    its shape). #31 item 13 (#34 item 6): at most 60 lines, none wider than 160 characters (its
    lines were about 300 wide); main's pr said `patchkit pr` where every other step said `make`;
    "1 file(s) not run here" named neither the file nor why."""
    build = tmp_path / "build"
    ours = {p: p.read_bytes() for p in sorted((ROOT / "patches").rglob("*")) if p.is_file()}
    res = make(f"BUILD={build}", "demo")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) <= 60 and max(map(len, lines)) <= 160, (len(lines), max(lines, key=len))
    shape = re.sub(r"\b[0-9a-f]{12}\b", "<commit>", res.stdout.replace(str(tmp_path), "<tmp>"))
    golden("demo.txt", re.sub(r"\b\d+ hooks pass\b", "<n> hooks pass", shape))  # upstream's config decides n
    project = build / "demo" / "project"  # every step works on the demo's copy of the sets
    for target in ("main", "rc25"):  # n: what the lint report says ran
        ran = len(json.loads((project / "build" / "lint" / f"{target}.json").read_text())["ran"])
        assert f"{target}  lint         {ran} hooks pass" in lines
    # Each file not run here is named, with why (the reason its delta report gives).
    for target in ("main", "rc25"):
        delta = json.loads((project / "build" / "delta" / f"{target}.json").read_text())
        said = " ".join(line.strip() for line in lines[lines.index(next(x for x in lines if x.startswith(f"{target}  delta"))):]
                        if not line.startswith("  $ ")).split(f"{target}  lint")[0]
        for fix in delta["fixes"]:
            for tid, reason in fix["not_run"].items():
                module = re.search(r"No module named '([^']+)'", reason)[1]
                assert f"not run here: {tid.split('::')[0].rsplit('/', 1)[-1]} (it imports {module}, which this machine lacks)" \
                    in said, said
    assert "not run here: test_dual_pool_kv_cache.py (it imports torch" in res.stdout  # main's: the case exists
    # Every step said through make, with make's words: main's pr too (it said `patchkit pr --out ...`).
    steps = [line for line in lines[lines.index("") + 1:] if line[:1] not in (" ", "") and not line.startswith("target  ")]
    steps = steps[:next(i for i, line in enumerate(steps) if line.startswith("main    "))]
    commands = [command_under(lines, step) for step in steps if not step.endswith("(the command above, again)")]
    assert commands and all(" make " in c.split("\n")[0] or c.startswith("make ") for c in commands), commands
    assert all("github.com" not in c for c in commands)
    # It ends with the table and the next steps.
    table = lines.index(next(line for line in lines if line.startswith("target  fixes  ")))
    assert [line.split()[0] for line in lines[table + 1:table + 3]] == ["main", "rc25"] and lines[table + 3] == ""
    assert all(line.startswith(("next: ", "  ")) for line in lines[table + 4:])
    assert sum(line.startswith("next: ") for line in lines[table + 4:]) == 3
    # The files it names hold what it left out: every step's whole output, the PR bodies.
    full = (build / "demo" / "demo.txt").read_text()
    assert "verdict: matches the declared delta" in full and full.count("== ") == len(steps)
    assert "1 line becomes 3:" in full and "[#19514][fix] Size the cross-attention KV cache" in full
    for target in ("main", "rc25"):
        body = project / "build" / "pr" / target / "body.md"
        assert body.read_text().startswith("@coderabbitai summary") and str(body) in res.stdout
    # A step's command, copied, runs as printed on the miniature (its URL and paths in it).
    env = dict(os.environ, SETUP="", PATCHKIT=f"{sys.executable} -m patchkit")
    waivers = command_under(lines, "rc25  waivers")
    assert waivers == f"PATCHKIT_ROOT={project} make waivers TRTLLM=rc25"
    again = subprocess.run(["bash", "-c", waivers], cwd=ROOT, env=env, text=True, capture_output=True)
    assert again.returncode == 0 and "edit: 1 line(s) of" in again.stdout, again.stderr
    # #26 item 7: rc25 carries PR 19450 beneath our fix, in the demo's copy of the sets, never in
    # the project's own patches/; its backport command, copied, runs as printed (nothing moved: unchanged).
    assert {p: p.read_bytes() for p in sorted((ROOT / "patches").rglob("*")) if p.is_file()} == ours
    assert "id: \"19450\"" in (project / "patches" / "rc25" / "patchset.yaml").read_text()
    backport = command_under(lines, "rc25  backport")
    assert backport.startswith(f"PATCHKIT_ROOT={project} ") and "make backport TRTLLM=rc25 " in backport \
        and backport.endswith("PR=19450")
    again = subprocess.run(["bash", "-c", backport], cwd=ROOT, env=env, text=True, capture_output=True)
    assert again.returncode == 0 and again.stdout.splitlines()[-1] == "patches/rc25: unchanged (nothing moved upstream)", \
        again.stdout + again.stderr
    # The PR branch carries our fix alone: no commit of the backport.
    rc25 = project / "build" / "trtllm-rc25"
    subjects = sh("git", "-C", rc25, "log", "--format=%s", "v1.3.0rc25..pr/rc25").stdout.splitlines()
    assert subjects and all("19514" in s or "waive" in s.lower() for s in subjects), subjects
    # #27 item 6: make summary over the demo's reports, as its next line says, as printed (on the
    # demo's copy of the sets, which its reports were made on: the project's own rc25 carries no
    # fix 19450; its table lands in that project's build/, not in this one's).
    said = command_under(lines, "next: one table")
    assert said.replace(" \\\n      ", " ") == f"PATCHKIT_ROOT={project} make summary REPORTS={project}/build"
    summary = subprocess.run(["bash", "-c", said], cwd=ROOT, env=env, text=True, capture_output=True)
    assert summary.returncode == 0, summary.stdout + summary.stderr
    assert "reports, all as declared; 2 skipped, not reports" in summary.stdout
    assert (f"skipped, not reports (2): {project}/build/trtllm-main/ (a git checkout), "
            f"{project}/build/trtllm-rc25/ (a git checkout)") in summary.stdout
    assert (project / "build" / "summary" / "summary.md").is_file()


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


def test_make_setups_own_steps_say_a_bad_call_and_a_second_run_in_one_line(tmp_path):
    """#34 item 1: make setup's steps run before .venv exists (tools/setup-env.py, by the system
    Python): a call it does not know is exit 2, and a second setup while one holds the project's
    cache (.cache/) waits, then is exit 3, each in one line; nothing is built."""
    from patchkit import lock
    shutil.copytree(ROOT / "tools", tmp_path / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    script = tmp_path / "tools" / "setup-env.py"
    bad = subprocess.run([sys.executable, script, "venv"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.splitlines() == [
        "patchkit: error: usage: setup-env.py venv VENV | wheelhouse VENV | extra NAME VENV"]
    with lock.hold(tmp_path / ".cache" / "setup.lock", "make setup (venv)", "the test"):
        busy = subprocess.run([sys.executable, script, "venv", tmp_path / ".venv"], capture_output=True, text=True,
                              env={**os.environ, "PATCHKIT_LOCK_WAIT": "0"})
    assert busy.returncode == 3, busy.stderr
    assert re.fullmatch(rf"patchkit: error: {re.escape(str(tmp_path / '.cache'))} is busy: pid {os.getpid()} "
                        r"\(make setup \(venv\)\) is working on it; wait for it to finish, then run again\n", busy.stderr)
    assert not (tmp_path / ".venv").exists()

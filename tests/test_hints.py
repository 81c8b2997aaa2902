"""Every hint runs as printed, in the user's vocabulary, with the user's own values (#10).

The library says what went wrong and which setting would change it; the CLI says it as make
variables when make runs it and as flags otherwise. Each test here takes the printed command
and runs it, unchanged, the way the user would: through make in the project directory, or
`patchkit` from a shell.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REWRITE, ROOT, copy_root, sh, tiered, upstream_moves

UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"
SIGNOFF = "Jane Developer <jane@example.com>"


@pytest.fixture
def shell_env(tmp_path):
    """A user's shell: patchkit on PATH; make's setup step already done (SETUP=, PATCHKIT=)."""
    root = copy_root(tmp_path)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               PATCHKIT_ROOT=str(root), SETUP="", PATCHKIT=f"{sys.executable} -m patchkit")
    return root, env


def run(line: str | list[str], env: dict) -> subprocess.CompletedProcess:
    argv = shlex.split(line) if isinstance(line, str) else [str(a) for a in line]
    return subprocess.run(argv, cwd=ROOT, env=env, text=True, capture_output=True)


def hint_in(text: str) -> str:
    """The printed command after 'run: ' (to the end of the line, or to a ' (' aside)."""
    m = re.search(r"run: (.+?)(?: \(.*\))?$", text, re.M)
    assert m, text
    return m.group(1)


def _drift(upstream: Path, tmp_path: Path) -> Path:
    util = upstream / UTIL
    util.write_text(util.read_text().replace("encoder_hidden_size // encoder_num_heads\n",
                                             "encoder_hidden_size // max(encoder_num_heads, 1)\n"))
    sh("git", "-C", upstream, "commit", "-qam", "Guard the head size division")
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    return clone


@pytest.mark.slow  # make test keeps check-export's hint, run as printed through make
@pytest.mark.parametrize("via", ["make", "cli"])
def test_drift_hint_turns_threeway_on_and_runs(via, upstream, tmp_path, shell_env):
    _root, env = shell_env
    clone = _drift(upstream, tmp_path)
    first = (["make", "-s", "apply", "TRTLLM=main", f"TRTLLM_SRC={clone}"] if via == "make"
             else ["patchkit", "apply", "--target", "main", "--src", clone])
    res = run(first, env)
    assert res.returncode == (2 if via == "make" else 3), res.stderr  # make says 2 for any failing recipe
    hint = hint_in(res.stderr)
    assert hint == (f"make apply TRTLLM=main TRTLLM_SRC={clone} THREEWAY=1" if via == "make"
                    else f"patchkit apply --target main --src {clone} --threeway")
    again = run(hint, env)
    assert again.returncode == 0, again.stderr
    assert "needed a 3-way merge: 0001-" in again.stdout


@pytest.mark.parametrize("via", tiered("make", "cli"))  # one in make test, the other in make test-slow
def test_check_export_hint_keeps_the_users_checkout_and_runs(via, checkout, shell_env):
    root, env = shell_env
    sh("git", "-C", checkout, "checkout", "-q", "-b", "mine")
    assert run(["patchkit", "apply", "--target", "main", "--src", checkout], env).returncode == 0
    message = sh("git", "-C", checkout, "log", "-1", "--format=%B").stdout.split("\n", 1)[1]  # its trailers kept
    sh("git", "-C", checkout, "commit", "-q", "--amend", "-m", "[#19514][test] A reworded test commit\n" + message)
    first = (["make", "-s", "check-export", "TRTLLM=main", f"TRTLLM_SRC={checkout}"] if via == "make"
             else ["patchkit", "check-export", "--target", "main", "--src", checkout])
    res = run(first, env)
    assert res.returncode == (2 if via == "make" else 1) and "differs from overlay/main" in res.stdout
    hint = hint_in(res.stdout)
    assert f"{checkout}" in hint  # the user's TRTLLM_SRC, without which export would look elsewhere
    assert run(hint, env).returncode == 0
    assert run(first, env).returncode == 0  # now up to date
    assert "reworded" in sorted((root / "patches" / "main").glob("0*.patch"))[-1].read_text()  # the last commit


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
@pytest.mark.parametrize("via", ["cli", "make"])
def test_pr_without_a_report_says_to_run_delta_with_the_users_report(via, checkout, tmp_path, shell_env):
    _root, env = shell_env
    report = tmp_path / "reports" / "rc25.json"
    first = (["make", "-s", "pr", "TRTLLM=rc25", f"TRTLLM_SRC={checkout}", f"REPORT={report}", f"SIGNOFF={SIGNOFF}"]
             if via == "make" else
             ["patchkit", "pr", "--target", "rc25", "--src", checkout, "--report", report, "--signoff", SIGNOFF])
    res = run(first, env)
    assert res.returncode == (2 if via == "make" else 4) and f"no delta report at {report}" in res.stderr
    hint = hint_in(res.stderr)
    assert hint == (f"make delta TRTLLM=rc25 TRTLLM_SRC={checkout} REPORT={report}" if via == "make"
                    else f"patchkit delta --target rc25 --src {checkout} --report {report}")
    assert run(hint, env).returncode == 0
    done = run(first, env)
    assert done.returncode == 0, done.stderr
    assert "branch pr/rc25" in done.stdout


def test_a_wrong_setting_is_named_as_the_user_set_it(tmp_path, shell_env):
    _root, env = shell_env
    dest = tmp_path / "taken"
    dest.mkdir()
    (dest / "file").write_text("x\n")
    res = run(["make", "-s", "miniature", f"DEST={dest}"], env)
    assert res.returncode == 2 and res.stderr.splitlines()[0].endswith("not empty; choose another DEST")
    res = run(["patchkit", "miniature", "--dest", dest], env)
    assert res.returncode == 2 and res.stderr.splitlines() == [
        f"patchkit: error: {dest} already exists and is not empty; choose another --dest"]


@pytest.mark.parametrize("via", tiered("cli", "make"))  # one in make test, the other in make test-slow
def test_dco_hint_adds_fix_and_keeps_a_quoted_signoff(via, checkout, shell_env):
    """A value with spaces and angle brackets (SIGNOFF) comes back quoted, so the hint still runs."""
    _root, env = shell_env
    sh("git", "-C", checkout, "checkout", "-q", "-b", "work")
    # authored by who signs it off: a sign-off is its author's to add (#33 item 7)
    sh("git", "-C", checkout, "commit", "-q", "--allow-empty", "--author", SIGNOFF, "-m", "unsigned")
    first = (["make", "-s", "dco", f"TRTLLM_SRC={checkout}", "BRANCH=work", f"SIGNOFF={SIGNOFF}"] if via == "make"
             else ["patchkit", "dco", "--src", checkout, "--branch", "work", "--signoff", SIGNOFF])
    res = run(first, env)
    assert res.returncode == (2 if via == "make" else 1) and "1 violation(s)" in res.stdout
    hint = hint_in(res.stdout)
    assert hint == (f"make dco TRTLLM_SRC={checkout} BRANCH=work FIX=1 SIGNOFF='{SIGNOFF}'" if via == "make"
                    else f"patchkit dco --src {checkout} --branch work --fix --signoff '{SIGNOFF}'")
    fixed = run(hint, env)
    assert fixed.returncode == 0, fixed.stderr
    assert "sign-offs added" in fixed.stdout
    assert f"Signed-off-by: {SIGNOFF}" in sh("git", "-C", checkout, "log", "-1", "--format=%B", "work").stdout


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
@pytest.mark.parametrize("via", ["cli", "make"])
def test_a_branch_apply_did_not_make_is_moved_aside_as_the_hint_says(via, checkout, shell_env):
    """The hint was `run: patchkit unapply ...`, which refuses such a branch (exit 4)."""
    _root, env = shell_env
    sh("git", "-C", checkout, "branch", "overlay/main")
    first = (["make", "-s", "apply", "TRTLLM=main", f"TRTLLM_SRC={checkout}"] if via == "make"
             else ["patchkit", "apply", "--target", "main", "--src", checkout])
    res = run(first, env)
    assert res.returncode == (2 if via == "make" else 3) and "was not made by apply" in res.stderr
    keep = re.search(r"keeping your branch under another name: (.+)\)$", res.stderr, re.M).group(1)
    assert sh(*shlex.split(keep), check=False).returncode == 0
    again = run(hint_in(res.stderr), env)
    assert again.returncode == 0, again.stderr
    assert sh("git", "-C", checkout, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() == "overlay/main"
    assert sh("git", "-C", checkout, "rev-parse", "-q", "--verify", "overlay/main-mine", check=False).returncode == 0


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
@pytest.mark.parametrize("name, spelled", [("x y\t'", "--src=$'x y\\t\\''"), ("-d", "--src=-d"), ("h\nb", "--src=$'h\\nb'")])
def test_a_value_a_shell_or_argparse_would_misread_is_printed_so_the_hint_runs(name, spelled, upstream, tmp_path,
                                                                                 shell_env):
    """#17.13: `--src=-d` came back as `--src -d` (argparse: expected one argument, exit 2), and a
    newline in a path as a space, which names another directory; both hints failed as printed."""
    _root, env = shell_env
    clone = _drift(upstream, tmp_path)
    here = tmp_path / "here"
    here.mkdir()
    clone.rename(here / name)
    res = subprocess.run(["patchkit", "apply", "--target", "main", f"--src={name}"], cwd=here, env=env,
                         text=True, capture_output=True)
    assert res.returncode == 3 and res.stderr.count("\n") == 1, res.stderr
    hint = hint_in(res.stderr)
    assert hint == f"patchkit apply --target main {spelled} --threeway"
    again = subprocess.run(["bash", "-c", hint], cwd=here, env=env, text=True, capture_output=True)
    assert again.returncode == 0, again.stderr
    assert "needed a 3-way merge: 0001-" in again.stdout


@pytest.mark.slow  # make test keeps the CLI's ANSI-C quoted value
def test_a_make_variable_with_a_newline_comes_back_ansi_c_quoted_and_runs(upstream, tmp_path, shell_env):
    """#17.13 through make: TRTLLM_SRC with a newline in it is printed $'...'-quoted on one line."""
    _root, env = shell_env
    clone = _drift(upstream, tmp_path)
    odd = tmp_path / "h\nb"
    clone.rename(odd)
    res = run(["make", "-s", "apply", "TRTLLM=main", f"TRTLLM_SRC={odd}"], env)
    assert res.returncode == 2, res.stderr
    hint = hint_in(res.stderr)
    assert hint == f"make apply TRTLLM=main TRTLLM_SRC=$'{tmp_path}/h\\nb' THREEWAY=1"
    again = subprocess.run(["bash", "-c", hint], cwd=ROOT, env=env, text=True, capture_output=True)
    assert again.returncode == 0, again.stderr
    assert "needed a 3-way merge: 0001-" in again.stdout


@pytest.mark.parametrize("via_make, given, said", [
    (True, {"fork": None}, "set FORK or once for all: git config --global github.user <you>"),
    (False, {"fork": None}, "set --fork or once for all: git config --global github.user <you>"),
    (True, {"fork": "jdoe"}, "choose another FORK or once for all: git config --global github.user <you>"),
])
def test_a_setting_the_user_did_not_give_is_to_be_set_not_chosen_again(via_make, given, said):
    """make pr without FORK ended with "choose another FORK", about a value nobody gave."""
    from patchkit.cli import COMMANDS
    from patchkit.errors import Hint
    from patchkit.text.voice import Voice
    options = {c.name: {a.dest: (a.flag, a.make) for a in c.args} for c in COMMANDS.values()}
    voice = Voice(via_make=via_make, command="pr", given=given, options=options)
    assert voice.hint(Hint.choose("fork", also="or once for all: git config --global github.user <you>")) == said


@pytest.mark.parametrize("via_make, said", [
    (True, "run: make container TRTLLM=rc25 TRTLLM_SRC=/src BASE=reg/rel:1"),
    (False, "run: patchkit container --target rc25 --src /src --base reg/rel:1 --wheel-out /b/wheel --wheel-cache /b/c"),
])
def test_a_setting_the_makefile_gives_is_left_to_the_makefile(via_make, said):
    """make delta MODE=container's stale-image hint read `run: patchkit container ... --wheel-out
    <BUILD>/wheel` under make (#32 item 7): the Makefile's own --wheel-out, which has no make
    variable, turned the whole line into flags."""
    from patchkit.cli import COMMANDS
    from patchkit.errors import Hint
    from patchkit.text.voice import Voice
    options = {c.name: {a.dest: (a.flag, a.make) for a in c.args} for c in COMMANDS.values()}
    given = {"target": "rc25", "src": "/src", "mode": "container", "base": "reg/rel:1", "wheel_out": "/b/wheel",
             "wheel_cache": "/b/c"}
    assert Voice(via_make=via_make, command="delta", given=given, options=options).hint(Hint.run("container")) == said


@pytest.mark.parametrize("target, base, said", tiered(
    ("main", None, "make delta TRTLLM=main TRTLLM_SRC={src} MODE=container REPORT={report} "
                   "BASE='<an image built from main>' (main has no release image; make container needs the same BASE)"),
    ("main", "reg/trtllm:main", "make delta TRTLLM=main TRTLLM_SRC={src} MODE=container REPORT={report} "
                                "BASE=reg/trtllm:main (main has no release image; make container needs the same BASE)"),
))
def test_mains_container_mode_hint_carries_the_base_main_needs(target, base, said, checkout, tmp_path, monkeypatch, capsys):
    """#27 item 4: main's source-mode delta ended with `run: make delta TRTLLM=main MODE=container`,
    which fails: main has no release image and its container.base (rc25's) is refused by the drift
    guard. The hint asks for BASE (the user's own when given) and says why."""
    from patchkit.cli import main
    monkeypatch.setenv("PATCHKIT_VIA_MAKE", "1")
    report = tmp_path / "delta.json"
    argv = ["delta", "--target", target, "--src", str(checkout), "--report", str(report)]
    assert main(argv + (["--base", base] if base else [])) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "run: " + said.format(src=checkout, report=report)


@pytest.mark.parametrize("via", tiered("cli", "make"))  # one in make test, the other in make test-slow
def test_pr_of_a_tag_says_delta_first_and_the_line_runs(via, checkout, shell_env):
    """#33 item 8: make pr TRTLLM=rc25 (a tag is no PR base) printed `make pr TRTLLM=main ...`,
    which failed as printed (exit 4: no delta report yet). Its prerequisite is chained now."""
    root, env = shell_env
    first = (["make", "-s", "pr", "TRTLLM=rc25", f"TRTLLM_SRC={checkout}", f"SIGNOFF={SIGNOFF}"] if via == "make"
             else ["patchkit", "pr", "--target", "rc25", "--src", checkout, "--signoff", SIGNOFF])
    assert run(["patchkit", "delta", "--target", "rc25", "--src", checkout], env).returncode == 0
    res = run(first, env)
    assert res.returncode == 0, res.stderr
    hint = hint_in(res.stdout)
    assert hint == (f"make delta TRTLLM=main TRTLLM_SRC={checkout} && make pr TRTLLM=main TRTLLM_SRC={checkout} "
                    f"SIGNOFF='{SIGNOFF}'" if via == "make" else
                    f"patchkit delta --target main --src {checkout} && patchkit pr --target main --src {checkout} "
                    f"--signoff '{SIGNOFF}'")
    assert not (root / "build" / "delta" / "main.json").exists()
    again = subprocess.run(["bash", "-c", hint], cwd=ROOT, env=env, text=True, capture_output=True)
    assert again.returncode == 0, again.stderr
    assert "branch pr/main" in again.stdout


def test_a_conflict_3way_cannot_merge_points_at_threeway_keep_and_it_runs(upstream, tmp_path, shell_env):
    """#33 items 3 and 8: THREEWAY=1 over a conflict no 3-way merge resolves ended with make
    radar, whose advice was "rework the patch by hand", with no command. Its hint is THREEWAY=keep
    now, which runs as printed and leaves the conflict to resolve; make radar follows on stdout."""
    _root, env = shell_env
    upstream_moves(upstream, REWRITE)
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    res = run(["make", "-s", "apply", "TRTLLM=main", f"TRTLLM_SRC={clone}", "THREEWAY=1"], env)
    assert res.returncode == 2 and "left 1 conflict(s)" in res.stderr
    hint = hint_in(res.stderr)
    assert hint == f"make apply TRTLLM=main TRTLLM_SRC={clone} THREEWAY=keep"
    assert f"run: make radar TRTLLM=main TRTLLM_SRC={clone}" in res.stdout
    kept = run(hint, env)
    assert kept.returncode == 2 and "Error 1" in kept.stderr and "git am -3 session stopped at patch 1" in kept.stdout
    assert sh("git", "-C", clone, "status", "--porcelain").stdout == f"UU {UTIL}\n"


@pytest.mark.parametrize("via_make, said", [
    (True, "run: PATCHKIT_ROOT='/p q' make apply TRTLLM=main THREEWAY=1 && PATCHKIT_ROOT='/p q' make export TRTLLM=main"),
    (False, "run: patchkit --root '/p q' apply --target main --threeway 1 && patchkit --root '/p q' export --target main"),
])
def test_a_chained_hint_on_another_project_names_it_in_every_step(via_make, said):
    """radar on a copy of the project (--root, through make) printed `make apply ... && make
    export ...`: run as printed, the export wrote into the project make runs in, not the one radar read."""
    from patchkit.cli import COMMANDS
    from patchkit.errors import Hint
    from patchkit.text.voice import Voice
    options = {c.name: {a.dest: (a.flag, a.make) for a in c.args} for c in COMMANDS.values()}
    voice = Voice(via_make=via_make, command="radar", given={"target": "main"}, options=options, prefix=("--root", "/p q"))
    step = Hint(command="apply", settings=(("threeway", "1"),))
    assert voice.hint(Hint(command="export", settings=(), first=(step,))) == said

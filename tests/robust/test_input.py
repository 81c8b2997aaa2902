"""Hostile input (issue #11, reproductions 8-10, 12, 14-16): one line, exit 2 (or 4), nothing changed."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from patchkit.cli import main
from helpers import ROOT, copy_root, sh, state_of, tiered


def run(capsys, root, *argv):
    code = main(["--root", str(root), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def edit_meta(root, target, old, new):
    meta = root / "patches" / target / "patchset.yaml"
    text = meta.read_text()
    assert old in text
    meta.write_text(text.replace(old, new, 1))


def test_json_targets_serialises_the_yaml_dates_of_the_shipped_sets(capsys):
    """#11.8: `patchkit --json targets` crashed on the `date:` in verified_on."""
    code, out, err = run(capsys, ROOT, "--json", "targets")
    assert code == 0, err
    dates = [v["date"] for s in json.loads(out) for f in s["fixes"] for v in f["verified_on"] if "date" in v]
    assert dates and all(isinstance(d, str) and d[:4].isdigit() for d in dates)


@pytest.mark.parametrize("old, new, message", tiered(
    ("status:            # DEP-3\n  forwarded: \"no\"  # the PR URL once it is opened\n  applied_upstream: null\n",
     "status: 5\n", "patchset.yaml: status: must be a mapping"),
    ("  regression:\n    - tests/unittest/_torch/executor/test_cross_kv_cache_layout.py\n",
     "  regression: tests/unittest/_torch/executor/test_cross_kv_cache_layout.py\n",
     "patchset.yaml: tests.regression: must be a list"),
    ("    tests_only: true\n", "    tests_only: \"yes\"\n", "series[1].tests_only: must be true or false"),
    ("branch: overlay/rc25\n", "branch: \"--orphan=pwn\"\n", "patchset.yaml: branch: '--orphan=pwn' is not a valid branch name"),
    ("branch: overlay/rc25\n", "branch: \"a..b\"\n", "is not a valid branch name"),
    ("  ref: v1.3.0rc25\n", "  ref: \"--upload-pack=touch /tmp/p\"\n", "upstream.ref: '--upload-pack=touch /tmp/p' is not a valid ref"),
    ("  ref: v1.3.0rc25\n", "  ref: \"v1 rc\"\n", "upstream.ref: 'v1 rc' is not a valid ref name"),
    ("branch: overlay/rc25\n", "branch: overlay/rc25\nbrnach: x\n", "brnach: unknown key"),
    ("  neighbours: []\n", "  neighbours: [../../etc/passwd]\n", "tests.neighbours[0]: '../../etc/passwd' must be a path inside"),
    ("      patched: {passed: 30}\n", "      patched: {passed: many}\n", "patched.passed: must be a whole number"),
    ("title: \"Size the cross-attention KV cache from the encoder's declared length\"", "title: [a, b]",
     "title: must be a non-empty string"),
))
def test_wrong_types_in_patchset_yaml_are_one_line_exit_2(capsys, tmp_path, checkout, old, new, message):
    """#11.8/#11.9: wrong types ended in exit 70 or were misread (a string regression became characters)."""
    root = copy_root(tmp_path)
    edit_meta(root, "rc25", old, new)
    before = state_of(checkout)
    code, _, err = run(capsys, root, "apply", "--target", "rc25", "--src", str(checkout))
    assert (code, err.count("\n")) == (2, 1), err
    assert message in err
    assert state_of(checkout) == before


@pytest.mark.parametrize("text, message", tiered(
    ("waives_file: tests/integration/test_lists/waives.txt\nmust_run: tests/x.py\nreason: r\n", "must_run: must be a list"),
    ("waives_file: w\nmust_run: []\nreason: r\ntest_db: ../../x\n", "test_db: '../../x' must be a path inside"),
    ("waives_file: w\nmust_run: []\nreason: r\ntest_db: \"a\\nb\"\n", "test_db: must be one line"),
    ("waives_file: w\nmust_run: [1]\nreason: r\n", "must_run[0]: must be a non-empty string"),
    ("- a list\n", "must be a YAML mapping"),
))
def test_wrong_types_in_waivers_yaml(capsys, tmp_path, checkout, text, message):
    root = copy_root(tmp_path)
    (root / "waivers" / "rc25.yaml").write_text(text)
    code, _, err = run(capsys, root, "apply", "--target", "rc25", "--src", str(checkout))
    assert (code, err.count("\n")) == (2, 1), err
    assert "waivers/rc25.yaml" in err and message in err


@pytest.mark.parametrize("payload", tiered("a: " + "[" * 20000 + "]" * 20000 + "\n",
                                     "".join(" " * i + "k:\n" for i in range(3000)),
                                     "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n",
                                     "x" * (5 * 1024 * 1024)))
def test_deep_huge_or_aliased_yaml_is_refused(capsys, tmp_path, payload):
    """#11.10: YAML nested 20,000 levels deep ended in exit 70 (RecursionError)."""
    root = copy_root(tmp_path)
    (root / "patches" / "rc25" / "patchset.yaml").write_text(payload)
    code, _, err = run(capsys, root, "targets")
    assert (code, err.count("\n")) == (2, 1), err


def _first_patch(root):
    return sorted((root / "patches" / "rc25").glob("0001-*.patch"))[0]


@pytest.mark.parametrize("old, new, message", tiered(
    (b"From: Overlay Maintainers <overlay-maintainers@users.noreply.github.com>",
     b"From: undisclosed-recipients:;", "From: must be one 'Name <email>'"),
    (b"From: Overlay Maintainers", b"From: Overlay\x00Maintainers", "NUL byte"),
    (b"From: Overlay Maintainers <overlay-maintainers@users.noreply.github.com>",
     b"From: a <a@b.c>, b <b@c.d>", "From: must be one"),
    (b"Date: Sun, 29 Nov 2026 12:00:00 +0000", b"Date: yesterday", "Date: 'yesterday' is not an RFC 2822 date"),
    (b"Date: Sun, 29 Nov 2026 12:00:00 +0000", b"Date: Sun, 29 Nov 99999 12:00:00 +0000", "is not an RFC 2822 date"),
    (b"Subject:", b"Subject: \xff\xfe", "not UTF-8"),
))
def test_bad_patch_headers_are_one_line_exit_2(capsys, tmp_path, checkout, old, new, message):
    """#11.9/#11.10: undisclosed-recipients, a NUL byte, a bad Date: ended in exit 70."""
    root = copy_root(tmp_path)
    patch = _first_patch(root)
    data = patch.read_bytes()
    assert old in data
    patch.write_bytes(data.replace(old, new, 1))
    before = state_of(checkout)
    code, _, err = run(capsys, root, "apply", "--target", "rc25", "--src", str(checkout))
    assert (code, err.count("\n")) == (2, 1), err
    assert message in err and "0001-" in err
    assert state_of(checkout) == before


@pytest.mark.parametrize("content, message", tiered(
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "must be a mapping"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b'{"target": "rc25"}', "upstream_commit: is required"),
    (b'{"target": "rc25", "upstream_commit": "x", "upstream_ref": "r", "mode": "source", "matches_expected": true,'
     b' "unpatched": {"tests": []}, "patched": {}, "fail_to_pass": [], "pass_to_pass": [], "pass_to_fail": [],'
     b' "fail_to_fail": []}', "unpatched.tests: must be a mapping"),
    (b"[" * 100000, "too deeply nested"),
))
def test_bad_reports_are_one_line_and_create_nothing(capsys, tmp_path, checkout, content, message):
    """#11.12: invalid JSON, a list, non-UTF-8 or missing keys ended in exit 70 and left pr/<t> created."""
    report = tmp_path / "report.json"
    report.write_bytes(content)
    out = tmp_path / "out"
    before = state_of(checkout)
    code, _, err = run(capsys, ROOT, "pr", "--target", "rc25", "--src", str(checkout), "--report", str(report),
                       "--out", str(out), "--signoff", "A B <a@b.c>")
    assert (code, err.count("\n")) == (2, 1), err
    assert message in err and str(report) in err
    assert state_of(checkout) == before and not out.exists()


@pytest.mark.parametrize("signoff", tiered("Evil\nSigned-off-by: Evil <e@e.com>", "A <a@b.c>\nSigned-off-by: Evil <e@e.com>",
                                     "A\x1b[2J <a@b.c>", "A <a@b.c> <b@c.d>", "<a@b.c>", "A <a b@c.d>"))
def test_signoff_must_be_one_honest_line(capsys, checkout, signoff):
    """#11.15: a newline in --signoff forged a Signed-off-by line on every commit."""
    sh("git", "-C", checkout, "checkout", "-q", "-b", "work")
    sh("git", "-C", checkout, "commit", "-q", "--allow-empty", "-m", "unsigned")
    before = state_of(checkout)
    code, _, err = run(capsys, ROOT, "dco", "--src", str(checkout), "--branch", "work", "--base", "HEAD~1",
                       "--fix", "--signoff", signoff)
    assert (code, err.count("\n")) == (2, 1), err
    # Named as the user gave it: a flag here (SIGNOFF through make).
    assert "--signoff: must look like 'Name <email>'" in err or "--signoff: must be one line" in err
    assert state_of(checkout) == before


@pytest.mark.parametrize("var, value", tiered(("GIT_COMMITTER_NAME", "Evil\nSigned-off-by: Evil <e@e.com>"),
                                        ("GIT_COMMITTER_EMAIL", "e@e.com>\nSigned-off-by: Evil <e@e.com")))
def test_committer_identity_from_the_environment_is_checked(capsys, checkout, monkeypatch, var, value):
    """#11.15: GIT_COMMITTER_* with a newline forged sign-offs; dco --fix rewrote and then failed."""
    monkeypatch.setenv(var, value)
    before = state_of(checkout)
    for argv in (["apply", "--target", "rc25", "--src", str(checkout)],
                 ["dco", "--src", str(checkout), "--branch", "main", "--base", "HEAD~1", "--fix"]):
        code, _, err = run(capsys, ROOT, *argv)
        assert (code, err.count("\n")) == (2, 1), err
        assert var in err
        assert state_of(checkout) == before


def test_identity_from_git_config_is_checked(capsys, checkout):
    sh("git", "-C", checkout, "config", "user.name", "Evil\tName")
    before = state_of(checkout)
    code, _, err = run(capsys, ROOT, "apply", "--target", "rc25", "--src", str(checkout))
    assert (code, err.count("\n")) == (2, 1) and "git config user.name" in err
    assert state_of(checkout) == before


@pytest.mark.parametrize("argv, code_want", tiered(
    (["dco", "--branch", "main", "--base", "a b"], 4),
    (["dco", "--branch=--orphan=pwn"], 4),
    (["dco", "--branch", "main", "--base=--all"], 4),
    (["apply", "--target", "x" * 10000], 2),
    (["unapply", "--target", "a/../../b"], 2),
))
def test_odd_arguments_are_refused_in_one_line(capsys, checkout, argv, code_want):
    """#11.16: dco --base 'a b' and a 10,000-character target ended in exit 70."""
    before = state_of(checkout)
    code, _, err = run(capsys, ROOT, *argv[:1], "--src", str(checkout), *argv[1:])
    assert (code, err.count("\n")) == (code_want, 1), err
    assert len(err) < 400
    assert state_of(checkout) == before


MAKE_PAYLOADS = ["x;touch {p}", "x'; touch {p}; '", 'x"; touch {p}; "', "`touch {p}`", "$$(touch {p})",
                 "x && touch {p}", "x\ntouch {p}", "x|touch {p}", "--orphan=$$(touch {p})"]


def make_vars() -> dict[str, tuple[set[str], set[str]]]:
    """Every CLI target of the Makefile: (variables it passes as values, variables that are switches)."""
    out = {}
    for line in (ROOT / "Makefile").read_text().splitlines():
        m = re.match(r"^([a-z-]+): \$\(SETUP\)(?: \$\([A-Z]+\))* ; \$\(PATCHKIT\)", line)  # lint/pr also need $(HOOKS)
        if m:
            values = set(re.findall(r"\$\$([A-Z_]+)", line))
            out[m.group(1)] = (values, set(re.findall(r"\$\(if \$\(([A-Z_]+)\)", line)) - values)
    return out


@pytest.mark.slow  # a sweep of hostile make variables: make test-slow (.ci/run)
def test_make_never_runs_a_variable_as_shell(tmp_path):
    """#11.14: `make dco BRANCH='x;touch /tmp/p'` ran the touch (and BRANCH=';rm -rf DIR' deleted a directory).

    PATCHKIT is a script that records its arguments, so every payload is checked fast and
    must also arrive whole, as one argument."""
    pwned, argv_file = tmp_path / "pwned", tmp_path / "argv"
    recorder = tmp_path / "record-argv"
    recorder.write_text(f"#!/bin/sh\nfor a; do printf '%s\\0' \"$a\"; done > {argv_file}\n")
    recorder.chmod(0o755)
    ran = executed = mangled = 0
    targets = make_vars()
    assert {"apply", "dco", "pr", "delta", "container", "miniature"} <= set(targets)
    for target, (values, switches) in targets.items():
        for name in sorted(values | switches):
            for payload in MAKE_PAYLOADS:
                value = payload.format(p=pwned)
                argv_file.unlink(missing_ok=True)
                subprocess.run(["make", "-s", "-C", str(ROOT), "SETUP=", f"PATCHKIT={recorder}",
                                f"BUILD={tmp_path}/build", f"{name}={value}", target],
                               capture_output=True, text=True, timeout=60)
                ran += 1
                if pwned.exists():
                    executed += 1
                    pwned.unlink()
                args = argv_file.read_text().split("\0") if argv_file.exists() else []
                shell_value = value.replace("$$", "$")  # make's own escape, undone by make itself
                if name in values and not any(a == shell_value or "=" + shell_value in a for a in args):
                    mangled += 1
    print(f"make injection: {ran} runs, {executed} payloads executed, {mangled} values not passed whole")
    assert ran >= 80 and executed == 0 and mangled == 0


def test_make_dco_with_a_hostile_branch_through_the_real_cli(tmp_path, checkout):
    """The issue's own reproduction, end to end: one line from patchkit, no touch."""
    pwned = tmp_path / "pwned"
    res = subprocess.run(["make", "-s", "-C", str(ROOT), "SETUP=", f"PATCHKIT={sys.executable} -m patchkit",
                          f"TRTLLM_SRC={checkout}", f"BRANCH=x;touch {pwned}", "dco"], capture_output=True, text=True)
    assert res.returncode != 0 and not pwned.exists()
    assert "patchkit: error: branch x;touch" in res.stderr

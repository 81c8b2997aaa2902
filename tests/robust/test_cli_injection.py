"""Injection through every CLI option (#11): hostile values for each option of each command
that works on a checkout end in a documented exit code (never 70) with one line on stderr,
run nothing, and leave the checkout as it was when refused.

Long-running commands (bench, demo) and the image builders (container, container-push,
delta) are left to their own tests; their options reach no shell either (tests/test_house.py
checks that no module uses one)."""
from __future__ import annotations


import pytest

from patchkit import cli
from helpers import copy_project, state_of

pytestmark = pytest.mark.slow  # a sweep: every option with every hostile value: make test-slow (.ci/run)

SKIP = {"bench", "demo", "container", "container-push", "delta"}
PAYLOADS = ["x;touch {p}", "--orphan=$(touch {p})", "`touch {p}`\nSigned-off-by: Evil <e@e.com>", "../../" * 20 + "etc",
            "-" + "x" * 5000]


def valid(name: str, checkout) -> dict[str, str]:
    """Values that work, for the options a payload is not in."""
    return {"--target": "rc25", "--src": str(checkout), "--branch": "main", "--registry": "localhost:1/x",
            "--dest": "mini", "--signoff": "A B <a@b.c>", "--reports": "reports", "--fix-id": "20001",
            "--from": "rc25", "--ref": "v1.3.0rc26"}


def test_every_cli_option_with_hostile_values(capsys, checkout, tmp_path, monkeypatch):
    # A copy of the project: a command given no --src works in <root>/build/trtllm-<target>,
    # which in the checkout's own build/ could be the developer's clone, and a refused clone
    # must not write there either (a run of the suite leaves nothing in the project).
    root = copy_project(tmp_path / "root", "tests/fixtures/miniature", "Makefile", ".github")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATCHKIT_LOCK_WAIT", "0")
    pwned = tmp_path / "pwned"
    runs, defects = 0, []
    state = state_of(checkout)  # before the next run: as the last one left it
    for c in cli.COMMANDS.values():
        if c.name in SKIP:
            continue
        for a in c.args:
            if a.options.get("action") == "store_true" or a.options.get("choices"):
                continue
            for payload in PAYLOADS:
                argv = ["--root", str(root), c.name, f"{a.flag}={payload.format(p=pwned)}"]
                for other in c.args:
                    if other.flag != a.flag and other.options.get("required"):
                        argv.append(f"{other.flag}={valid(c.name, checkout)[other.flag]}")
                try:
                    code = cli.main(argv)
                except SystemExit as exc:  # argparse refusing a value (THREEWAY's type): exit 2, one line
                    code = exc.code
                err = capsys.readouterr().err
                runs += 1
                before, state = state, state_of(checkout)
                bad = (code == 70 or "internal error" in err or "Traceback" in err or pwned.exists()
                       or (code != 0 and err.count("\n") != 1) or (code != 0 and state != before))
                if bad:
                    defects.append(f"  {c.name} {a.flag}={payload[:30]!r}: exit {code} {err.strip()[:200]}")
                    pwned.unlink(missing_ok=True)
    print(f"CLI injection: {runs} runs over every option of {len(cli.COMMANDS) - len(SKIP)} commands, "
          f"{len(defects)} defects", *defects, sep="\n")
    assert runs >= 50 and not defects

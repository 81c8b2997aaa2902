"""Ctrl-C in the start-up window (#17 item 11): at any instant from patchkit's first
instruction, `python -m patchkit` and the console script say `patchkit: interrupted` and exit
130, with a second Ctrl-C too. Never a KeyboardInterrupt traceback, a death by signal, or an
interrupt swallowed into a run that exits 0.

A real Ctrl-C lands at a random instant; here it lands at chosen ones. An audit hook
(sys.addaudithook, set up before the entry point runs) sends the process its own SIGINT at the
Nth audit event after the entry module's code started: every module import of the start-up is
one, and so are the files opened and the processes started afterwards. The events are counted
in a clean run first, and the Ctrl-C points spread over all of them.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, tiered

# Runs the entry point as `python -m patchkit` or the console script does, with the hook armed
# once the code of patchkit/__main__.py starts. KICK_AT: the events (1-based) that send a SIGINT;
# KICK_LOG: where the count of events, and the SIGINT disposition at each kick, are written.
LAUNCHER = r'''
import os, signal, sys
at = {int(n) for n in os.environ["KICK_AT"].split(",") if n}
log = open(os.environ["KICK_LOG"], "w", buffering=1)
seen = 0
armed = False
def hook(event, args):
    global seen, armed
    if not armed:
        armed = event == "exec" and getattr(args[0], "co_filename", "").endswith("patchkit/__main__.py")
        return
    if event in ("import", "open", "subprocess.Popen", "os.exec", "os.listdir", "os.scandir"):
        seen += 1
        log.write(f"{seen}\n")
        if seen in at:
            h = signal.getsignal(signal.SIGINT)
            log.write(f"kick {seen} {'ignored' if h is signal.SIG_IGN else 'handled'}\n")
            os.kill(os.getpid(), signal.SIGINT)
sys.addaudithook(hook)
how = sys.argv.pop(1)
if how == "module":
    import runpy
    runpy.run_module("patchkit", run_name="__main__", alter_sys=True)
else:
    from patchkit.__main__ import main
    sys.exit(main())
'''


def run(how: str, argv: list[str], tmp: Path, kicks: list[int]) -> tuple[int, str, str, list[str]]:
    log = tmp / "kicks.log"
    env = dict(os.environ, KICK_AT=",".join(map(str, kicks)), KICK_LOG=str(log), PATCHKIT_LOCK_WAIT="0")
    # SIGINT as a shell gives it: the default disposition, whatever the test runner has.
    res = subprocess.run([sys.executable, "-c", LAUNCHER, how, *argv], capture_output=True, text=True, env=env,
                         timeout=120, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = log.read_text().splitlines()
    return res.returncode, res.stdout, res.stderr, lines


def points(total: int, k: int) -> list[int]:
    """k points over 1..total: the first four (the start-up's first imports) and the rest spread."""
    spread = {1 + round(i * (total - 1) / max(k - 1, 1)) for i in range(k)}
    return sorted(set(range(1, min(total, 4) + 1)) | spread)


@pytest.mark.parametrize("how", tiered("module", "script"))
def test_ctrl_c_at_any_point_of_start_up_and_run_is_interrupted_130(tmp_path, how):
    """One Ctrl-C at some points, two in a row at the others (every other point). The command
    reads every patch set and prints; a Ctrl-C during a git step is tests/test_git.py's."""
    argv = ["--root", str(ROOT), "targets"]
    code, out, err, lines = run(how, argv, tmp_path, [])
    assert (code, err) == (0, ""), err
    total = sum(1 for line in lines if not line.startswith("kick"))
    assert total > 50, f"only {total} events: the hook did not see the start-up"
    bad = []
    for i, n in enumerate(points(total, 8)):
        kicks = [n] if i % 2 == 0 else [n, n + 1]
        code, out2, err2, lines = run(how, argv, tmp_path, kicks)
        kicked = [line for line in lines if line.startswith("kick")]
        late = bool(kicked) and kicked[0].endswith("ignored")  # after the answer was decided
        expected = (0, "") if late else (130, "patchkit: interrupted\n")
        if (code, err2) != expected:
            bad.append((kicks, code, err2[-300:]))
    assert not bad, f"{how} of {total} events: {bad}"

"""Fault injection: a git on PATH that fails, or SIGKILLs patchkit, at its Nth call.

FAULT_N=n (1-based; 0 counts only), FAULT_MODE=fail|fail-writes-from|kill-before|kill-after
(fail-writes-from: from that call on, every git command that writes fails, as with read-only
refs or a failing reference-transaction hook, so a rollback fails too), FAULT_COUNTER
a file that counts calls, FAULT_LOG (optional) a file each call's number and arguments are
appended to, FAULT_PID the patchkit process to kill (the launcher execs into
it, so its pid is known before it starts). Nested git calls (clone's upload-pack) count too.

FAULT_MODE=clean: no fault; each call records (FAULT_STATES) a digest of the files a kill just
before it and just after it would leave (the checkout, the project, what lies beside the
checkout). A sweep then kills only at the first instant of each distinct digest (kill_points):
every failure point still runs, and a kill whose files an earlier kill already left is the same
case (#34 item 3: the exhaustive sweeps ran 2-3x the runs for the same cases).
"""
from __future__ import annotations

import os
import re
import shutil
from collections import Counter
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from helpers import ROOT, state_of

WRAPPER = r'''#!/bin/sh
# What a kill leaves, as a digest: every entry's path, kind, size, inode and time under the
# checkout and the project, and the folders and lock files beside the checkout (a clone's).
state() ( IFS=:; { find $FAULT_STATE_TREES -printf '%p %y %s %i %T@\n'; find $FAULT_STATE_BESIDE -mindepth 1 \
  -maxdepth 1 ! -name 'fault-*' -printf '%p %y %s %i %T@\n'; } 2>/dev/null | sort | md5sum | cut -c1-32 )
n=0; read n 2>/dev/null < "$FAULT_COUNTER"; n=$((n + 1))  # read, a builtin: no process per git call
echo $n > "$FAULT_COUNTER"
[ -n "$FAULT_LOG" ] && echo "$n $*" >> "$FAULT_LOG"
if [ "$FAULT_MODE" = fail-writes-from ] && [ "$FAULT_N" -gt 0 ] && [ "$n" -ge "$FAULT_N" ]; then
  for a in "$@"; do
    case "$a" in
      update-ref|checkout|reset|branch|worktree|commit|read-tree|cherry-pick|am|merge)
        echo "fatal: injected failure at git call $n: cannot write ($a)" >&2; exit 128 ;;
      refs/*) case " $* " in *" symbolic-ref "*)  # symbolic-ref HEAD refs/heads/x: a write
        echo "fatal: injected failure at git call $n: cannot write (symbolic-ref)" >&2; exit 128 ;; esac ;;
    esac
  done
fi
if [ -n "$FAULT_STATES" ]; then  # a clean run: what a kill before and after this call would leave
  if [ "$PPID" != "$FAULT_PID" ]; then echo "$n nested" >> "$FAULT_STATES"; exec "$REAL_GIT" "$@"; fi
  b=$(state); "$REAL_GIT" "$@"; rc=$?; echo "$n $b $(state)" >> "$FAULT_STATES"; exit $rc
fi
if [ "$n" = "$FAULT_N" ]; then
  case "$FAULT_MODE" in
    fail) echo "fatal: injected failure at git call $n" >&2; exit 128 ;;
    kill-before) kill -9 "$FAULT_PID"; exit 128 ;;
    kill-after) "$REAL_GIT" "$@"; rc=$?; kill -9 "$FAULT_PID"; exit $rc ;;
  esac
fi
exec "$REAL_GIT" "$@"
'''


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    calls: int
    # Of a clean run: {git call: (what a kill just before it leaves, just after it) as digests;
    # None for a call a git made (a kill there lets that git go on, wherever it goes)}.
    states: dict[int, tuple[str, str] | None] = field(default_factory=dict)


class Injector:
    def __init__(self, tmp: Path) -> None:
        self.bin = tmp / "faultbin"
        self.bin.mkdir(parents=True, exist_ok=True)
        (self.bin / "git").write_text(WRAPPER)
        (self.bin / "git").chmod(0o755)
        self.counter = tmp / "fault-counter"
        self.real = shutil.which("git")

    def run(self, argv: list[str], n: int = 0, mode: str = "fail", root: Path = ROOT, timeout: float = 120,
            log: Path | None = None) -> Run:
        """patchkit argv with a fault at git call n (0: none; mode "clean": none, and the run's
        states recorded, see kill_points); the crash log dir is checked by callers.
        log: a file each git call is appended to, as '<n> <arguments>'."""
        self.counter.write_text("0")
        states = self.counter.with_name("fault-states")
        states.unlink(missing_ok=True)
        env = dict(os.environ, PATH=f"{self.bin}:{os.environ['PATH']}", FAULT_N=str(n), FAULT_MODE=mode,
                   FAULT_COUNTER=str(self.counter), REAL_GIT=self.real, PATCHKIT_LOCK_WAIT="1",
                   GIT_PYTHON_GIT_EXECUTABLE=str(self.bin / "git"), FAULT_LOG=str(log or ""), FAULT_STATES="")
        src = Path(argv[argv.index("--src") + 1]) if "--src" in argv else None
        if mode == "clean" and src is not None:  # no fault; what a kill at each call would leave, recorded
            env.update(FAULT_STATES=str(states), FAULT_STATE_TREES=f"{src}:{root}", FAULT_STATE_BESIDE=str(src.parent))
        launcher = 'FAULT_PID=$$; export FAULT_PID; exec "$0" "$@"'
        res = subprocess.run(["sh", "-c", launcher, sys.executable, "-m", "patchkit", "--root", str(root), *argv],
                             capture_output=True, text=True, env=env, timeout=timeout)
        seen = {}
        for line in (states.read_text().splitlines() if states.exists() else []):
            call, *digests = line.split()
            seen[int(call)] = tuple(digests) if len(digests) == 2 else None
        return Run(res.returncode, res.stdout, res.stderr, int(self.counter.read_text().strip() or 0), seen)

    def count(self, argv: list[str], root: Path = ROOT) -> int:
        res = self.run(argv, 0, root=root)
        assert res.code in (0, 1), res.stderr
        return res.calls


def sample(total: int, k: int) -> list[int]:
    """k fault points spread over 1..total, first and last included (all when k >= total)."""
    if k >= total:
        return list(range(1, total + 1))
    return sorted({1 + round(i * (total - 1) / (k - 1)) for i in range(k)}) if k > 1 else [1 + total // 2]


SAME = "kill points left out: the files of an earlier one"


def kill_points(clean: Run, points, mode: str, counts: Counter | None = None) -> list[int]:
    """Of points, those where a kill in mode leaves files no earlier kill instant leaves, by the
    clean run's states. A kill leaves the files as they were at that instant, and all a next run
    or a look sees is the files: two instants with the same files are one case (a kill after a
    call that wrote nothing is the kill before it; one after call n is the one before call n+1
    when the program wrote nothing in between). Instants run before 1, after 1, before 2, ...;
    every point of a call a git made is kept (killed there, that git goes on), and every point
    of a run that recorded no states. The kill points of both modes are to be the same points.
    A failure is a case at every point (mode "fail": all of them). counts: where to tally the
    points left out (SAME)."""
    points = list(points)
    kept = points if mode == "fail" or not clean.states else _distinct(clean, points, mode)
    if counts is not None:
        counts[SAME] += len(points) - len(kept)
    return kept


def _distinct(clean: Run, points: list[int], mode: str) -> list[int]:
    seen: set[str] = set()
    first: set[tuple[int, str]] = set()
    for n in sorted(set(points) & set(clean.states)):  # the same points in both kill modes
        pair = clean.states[n]
        for at, digest in (("kill-before", pair[0]), ("kill-after", pair[1])) if pair else ():
            if digest not in seen:
                seen.add(digest)
                first.add((n, at))
    return [n for n in sorted(points) if n not in clean.states or clean.states[n] is None or (n, mode) in first]


def judge(name: str, fresh, run, look, points, modes=("fail", "kill-before", "kill-after")) -> Counter:
    """A command run clean, then with a fault at each of points(total calls) in each mode, each
    on a fresh copy (fresh(n) -> its checkout; run(checkout, n, mode) -> Run; look(checkout) ->
    what the user sees). Counts the runs, the kills and each defect: a traceback, an exit 0
    whose result differs from the clean run's, a failure said in more than one line, or a
    failure that changed what look() sees."""
    work = fresh(0)
    clean = run(work, 0, "clean")
    assert clean.code == 0, clean.stderr
    reference, total = look(work), clean.calls
    counts: Counter = Counter()
    for mode in modes:
        for n in kill_points(clean, points(total), mode, counts):
            work = fresh(n)
            before = look(work)
            res = run(work, n, mode)
            counts["runs"] += 1
            after = look(work)
            problem = None
            if "Traceback" in res.stderr:
                problem = "traceback"
            elif res.code == 0:
                problem = None if after == reference else "exit 0 with a wrong result"
                if problem:
                    print("    differs in", [k for k in after if after[k] != reference[k]])
            elif res.code > 0 and res.stderr.count("\n") != 1:
                problem = "not one line"
            elif after != before and not (res.code < 0 and after == reference):
                # a kill is all or nothing: nothing changed, or (killed once the last write was
                # done: the kill-after of a persistent cat-file lands as the command ends) all of it
                problem = "changed patches/ or the checkout"
            counts["killed"] += res.code < 0
            if problem:
                counts[problem] += 1
                print(f"  {name} {mode} at git call {n}/{total}: {problem} (exit {res.code}) {res.stderr.strip()[:300]}")
    print(f"fault injection, {name}: {total} git calls, {counts['runs']} runs ({counts['killed']} killed): {dict(counts)}")
    return counts


def defects(counts) -> int:
    """What judge() counted that is no run, no kill, and no kill point left out."""
    return sum(v for k, v in counts.items() if k not in ("runs", "killed", SAME))


_DAY = re.compile(rb"^Last-Update: \d{4}-\d{2}-\d{2}$", re.M)


def look(root: Path, checkout: Path, target: str = "rc25") -> dict:
    """What a user sees of a run: the checkout (HEAD, refs, index entries, files, stash,
    worktrees) and patches/<target>, whose Last-Update is the day a run writes (a sweep that
    crosses midnight must not count it)."""
    seen = state_of(checkout)
    seen.pop("index")  # its stat data may be new; its entries are compared
    seen["worktrees"] = seen["worktrees"].replace(str(checkout), "<checkout>")
    seen["patches"] = sorted((p.name, _DAY.sub(b"Last-Update: <day>", p.read_bytes()))
                             for p in (root / "patches" / target).iterdir())
    return seen

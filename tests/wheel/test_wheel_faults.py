"""make wheel failed or killed at every step (#32's acceptance, the fault sweep).

The case: rc25 with 19450 carried, its wheel built, then a one-line change to the fix; make
wheel (host build, JOBS=1 so the steps come in one order) rebuilds it with the previous wheel
present. Faults: (a) at each git call patchkit makes, the call failing, and patchkit SIGKILLed
just before and just after it where the files a kill leaves are new (faults.kill_points); (b) at
each call of the build's compiler or compiler cache (every compile and link step, ccache's
statistics), patchkit SIGKILLed just before and just after it. Each point starts from the same
files (copied back into the same folder: CMake's tree names its absolute paths).

What a user sees, at each point: a failure is one line on stderr, exit 3, the previous wheel
byte for byte, the checkout and the project as they were; a kill leaves the previous wheel as
it was (or the new one whole, when it came after the last write), nothing half-written under
$(BUILD)/wheel/; and the next plain make wheel finishes with the clean run's wheel, whose
sha256 its wheel.json says, compiling no more translation units than the clean run did (the
build tree still usable), and nothing of the killed build still running after it. The build
is killed fenced (bubblewrap: it dies with patchkit) and unfenced (where bubblewrap cannot
make its namespaces: it went on writing into the tree, 10 points of 10, until the next run
stopped what was left of it).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from robust.faults import SAME, Injector, defects, kill_points
from helpers import copy_project, sh, state_of
from stacks import stacked
from wheels import one_line_change

pytestmark = pytest.mark.exhaustive

# The build's compiler and compiler cache, counted (in $CCACHE_DIR: the one folder of the sweep's
# that a fenced build both sees and may write). At call N of fault.conf ("N MODE") it asks the
# sweep to SIGKILL make wheel, just before or just after the real tool runs, and waits: the build
# may run fenced, in a pid namespace of its own, where patchkit's pid means nothing.
WRAPPER = r'''#!/bin/sh
d=$CCACHE_DIR
n=0; read n 2>/dev/null < "$d/fault-count"; n=$((n + 1)); echo $n > "$d/fault-count"
at=0; mode=; read at mode 2>/dev/null < "$d/fault.conf"
if [ "$n" = "$at" ] && [ "$mode" = kill-before ]; then : > "$d/fault-kill"; sleep 60; exit 137; fi
if [ "$n" = "$at" ] && [ "$mode" = kill-after ]; then "@REAL@" "$@"; rc=$?; : > "$d/fault-kill"; sleep 60; exit $rc; fi
exec "@REAL@" "$@"
'''
TOOLS = ("c++", "ccache")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class World:
    """The sweep's files, in one folder, and a copy of them to start each point from."""

    def __init__(self, base: Path, miniature: Path) -> None:
        self.work, self.saved = base / "w", base / "saved"
        self.root, self.src = self.work / "project", self.work / "trtllm"
        self.wheels = self.root / "build" / "wheel"
        self.ccache = self.root / "build" / "wheel-cache" / "ccache" / "host"
        self.bin = self.ccache / "faultbin"
        self.bin.mkdir(parents=True)
        for tool in TOOLS:
            (self.bin / tool).write_text(WRAPPER.replace("@REAL@", shutil.which(tool)))
            (self.bin / tool).chmod(0o755)
        self.env = dict(os.environ, PATH=f"{self.bin}:{os.environ['PATH']}")
        # Where bubblewrap cannot make its namespaces (a container that refuses them) the build
        # runs unfenced: a bwrap that says so, first on PATH.
        self.nofence = base / "nofence"
        self.nofence.mkdir()
        (self.nofence / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
        (self.nofence / "bwrap").chmod(0o755)
        self.fenced = True
        copy_project(self.root, "Makefile")
        stacked(self.root, "rc25", miniature, base, pulls=("19450",))
        sh("git", "clone", "-q", miniature.as_uri(), self.src)
        self.patch = next((self.root / "patches" / "rc25").glob("0001-18609-*.patch"))

    def argv(self) -> list[str]:
        return ["wheel", "--target", "rc25", "--src", str(self.src), "--out", str(self.wheels),
                "--cache", str(self.root / "build" / "wheel-cache"), "--wheel-build", "host", "--jobs", "1", "--json"]

    def make_wheel(self, at: int = 0, mode: str = "", timeout: float = 300) -> tuple[int, str, str]:
        """patchkit wheel, SIGKILLed when the wrapper asks (at its call `at` in mode)."""
        conf, kill = self.ccache / "fault.conf", self.ccache / "fault-kill"
        (self.ccache / "fault-count").write_text("0")
        kill.unlink(missing_ok=True)
        conf.write_text(f"{at} {mode}\n") if at else conf.unlink(missing_ok=True)
        out, err = self.work.parent / "out", self.work.parent / "err"
        with open(out, "w") as o, open(err, "w") as e:
            env = self.env if self.fenced else dict(self.env, PATH=f"{self.nofence}:{self.env['PATH']}")
            run = subprocess.Popen([sys.executable, "-m", "patchkit", "--root", str(self.root), *self.argv()],
                                   stdout=o, stderr=e, env=env)
            deadline = time.monotonic() + timeout
            while run.poll() is None and time.monotonic() < deadline:
                if kill.exists():
                    os.kill(run.pid, signal.SIGKILL)
                    break
                time.sleep(0.005)
            code = run.wait(timeout=max(1.0, deadline - time.monotonic()))
        conf.unlink(missing_ok=True)
        return code, out.read_text(), err.read_text()

    def calls(self) -> int:
        return int((self.ccache / "fault-count").read_text())

    def save(self) -> None:
        shutil.rmtree(self.saved, ignore_errors=True)
        sh("cp", "-a", self.work, self.saved)

    def restore(self) -> None:
        shutil.rmtree(self.work)
        sh("cp", "-a", self.saved, self.work)

    def folder(self) -> dict[str, str]:
        """Every file under $(BUILD)/wheel/, by its sha256."""
        return {str(p.relative_to(self.wheels)): _sha(p) for p in sorted(self.wheels.rglob("*")) if p.is_file()}

    def wheel(self) -> tuple:
        """The wheel as a user checks it: the folder's names, the wheel's sha256, the one its
        wheel.json says, and the stack that says it carries."""
        info = json.loads((self.wheels / "rc25" / "wheel.json").read_text())
        whl = self.wheels / "rc25" / info["wheel"]
        return sorted(self.folder()), _sha(whl) if whl.is_file() else None, info["sha256"], info["stack"]

    def project(self) -> dict[str, str]:
        patches = sorted((self.root / "patches").rglob("*"))
        return {str(p.relative_to(self.root)): _sha(p) for p in patches if p.is_file()}

    def running(self) -> list[str]:
        """Processes still running in the sweep's folder (the killed build's), given 5 s to go."""
        deadline = time.monotonic() + 5
        while True:
            left = []
            for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    text = cmdline.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
                except OSError:
                    continue
                if str(self.work) in text and int(cmdline.parent.name) != os.getpid():
                    left.append(text[:160])
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.1)


def test_make_wheel_failed_or_killed_at_every_step(miniature_template, tmp_path, monkeypatch):
    started = time.monotonic()
    w = World(tmp_path, miniature_template)
    monkeypatch.setenv("PATH", w.env["PATH"])  # the git sweep's runs count the compiler's calls too
    # The previous wheel, and a compiler cache that has both sides of the change (as a user's has
    # after a few builds): each point compiles for real through ccache, cheaply.
    for text in (one_line_change(w.patch.read_text()), w.patch.read_text()):
        w.patch.write_text(text)
        code, _, err = w.make_wheel()
        assert code == 0, err
    w.patch.write_text(one_line_change(w.patch.read_text()))
    w.save()
    checkout, project, previous = state_of(w.src), w.project(), w.folder()
    code, out, err = w.make_wheel()
    assert code == 0, err
    clean, reference, compiler_calls = json.loads(out), w.wheel(), w.calls()
    assert clean["compiled"] >= 1 and reference[1] == reference[2] != previous.get("rc25/" + clean["wheel"])
    counts: Counter = Counter()
    recovered: list[int] = []

    def judge(where: str, code: int, err: str) -> str | None:
        """What the user sees of a run with a fault, and of the plain run after a kill."""
        if "Traceback" in err or code == 70:
            return "traceback"
        if code == 0:
            return None if w.wheel() == reference else "exit 0 with a wrong wheel"
        if code > 0:
            if err.count("\n") != 1:
                return "not one line"
            if code != (5 if where in starts else 3):  # 5: a git that cannot say its version does not work here
                return f"exit {code}, not {5 if where in starts else 3}"
            if w.folder() != previous:
                return "the previous wheel changed"
            if state_of(w.src) != checkout or w.project() != project:
                return "changed the checkout or the project"
            return None
        counts["killed"] += 1
        if w.folder() != previous and w.wheel() != reference:
            return f"half-written under $(BUILD)/wheel/: {sorted(w.folder())}"
        if state_of(w.src) != checkout or w.project() != project:
            return "changed the checkout or the project"
        again, out, err2 = w.make_wheel()
        recovered.append(again)
        if again != 0:
            return f"not recovered (next run exit {again}: {err2.strip()[-300:]})"
        if w.wheel() != reference:
            return "recovered with a wrong wheel"
        if left := w.running():  # killed with patchkit, an unfenced build goes on until the next run stops it
            return f"the killed build goes on: {left[:2]}"
        if json.loads(out)["compiled"] > clean["compiled"]:
            return f"the next run compiled {json.loads(out)['compiled']}, the clean one {clean['compiled']}"
        return None

    def point(where: str, run) -> None:
        w.restore()
        code, err = run()
        counts["runs"] += 1
        problem = judge(where, code, err)
        if problem:
            counts[problem.split(":")[0]] += 1
            print(f"  {where}: {problem} (exit {code}) {err.strip()[-300:]}")

    # (a) every git call: failed, and killed where the files it leaves are new.
    w.restore()
    inj = Injector(tmp_path / "git")
    log = tmp_path / "git-calls"
    clean_git = inj.run(w.argv(), mode="clean", root=w.root, log=log)
    assert clean_git.code == 0, clean_git.stderr
    git_calls, swept = clean_git.calls, time.monotonic()
    starts = {f"fail at git call {line.split()[0]}/{git_calls}" for line in log.read_text().splitlines()
              if line.split()[1:] == ["version"]}  # GitPython's start
    for mode in ("fail", "kill-before", "kill-after"):
        wanted = list(range(1, git_calls + 1))
        kept = wanted if mode == "fail" else kill_points(clean_git, wanted, mode)
        counts[SAME] += len(wanted) - len(kept)
        for n in kept:
            def run(n=n, mode=mode):
                res = inj.run(w.argv(), n, mode, root=w.root)
                return res.code, res.stderr
            point(f"{mode} at git call {n}/{git_calls}", run)
    # (b) every call of the compiler and the compiler cache: killed just before and just after it,
    # the build fenced (bubblewrap) and not.
    for w.fenced in (True, False):
        for mode in ("kill-before", "kill-after"):
            for n in range(1, compiler_calls + 1):
                def run(n=n, mode=mode):
                    code, _, err = w.make_wheel(n, mode)
                    return code, err
                point(f"{mode} at compiler call {n}/{compiler_calls}{'' if w.fenced else ' (unfenced)'}", run)
    print(f"fault injection, make wheel: {git_calls} git calls, {compiler_calls} compiler calls, "
          f"{counts['runs']} runs ({counts['killed']} killed) and {len(recovered)} next runs, {dict(counts)}; "
          f"{swept - started:.0f} s to set up, {time.monotonic() - swept:.0f} s the sweep")
    assert counts["runs"] >= git_calls + 4 * compiler_calls and defects(counts) == 0, dict(counts)

"""make wheel (#32 item 1): the wheel of the applied stack, built by upstream's own build at the
set's ref (the miniature's scripts/build_wheel.py, g++ for real), in a persistent build tree per
set and devel image; the wheel and wheel.json appear under $(BUILD)/wheel/<set>/ whole, and a
failed compile says the compiler's first error with file:line, exits 3 and leaves the previous
wheel as it was."""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT, copy_project, sh
from patchkit.cli import main
from stacks import stacked
from wheels import GUARD, ask, one_line_change, wheel_cache

CPP = "cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp"


def _project(tmp_path: Path, miniature: Path) -> Path:
    """A copy of the project whose rc25 carries 19450 (the C++ guard) beneath our fix."""
    root = copy_project(tmp_path / "project", "Makefile")
    stacked(root, "rc25", miniature, tmp_path, pulls=("19450",))
    return root


def _wheel(root: Path, src: Path, *more: str) -> int:
    return main(["--root", str(root), "wheel", "--target", "rc25", "--src", str(src),
                 "--out", str(root / "build" / "wheel"), "--cache", str(root / "build" / "wheel-cache"), *more])


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_wheel_carries_the_guard_and_a_failed_compile_leaves_it_as_it_was(miniature_template, tmp_path, capsys):
    root, src = _project(tmp_path, miniature_template), tmp_path / "trtllm"
    sh("git", "clone", "-q", miniature_template.as_uri(), src)
    assert _wheel(root, src, "--wheel-build", "host") == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    folder = root / "build" / "wheel" / "rc25"
    info = json.loads((folder / "wheel.json").read_text())
    [wheel] = folder.glob("*.whl")
    assert sorted(p.name for p in folder.iterdir()) == [wheel.name, "wheel.json"]
    assert out.splitlines()[0] == f"rc25: {wheel.name} (sha256 {info['sha256'][:16]}) in {folder}"
    assert ask(wheel, tmp_path / "site") == {"archs": "120-real", "tokens": 47, "features": 47}  # the guard, compiled
    from patchkit import patchset
    ps = patchset.load(root, "rc25")
    assert (info["stack"], info["archs"], info["place"], info["version"]) == (ps.content_hash, "120-real", "host", "1.3.0rc25")
    assert info["ref_commit"] == sh("git", "-C", src, "rev-parse", "v1.3.0rc25^{commit}").stdout.strip()
    assert info["compiled"] == len(info["compiled_files"]) > 0 and info["jobs"] >= 1 and info["seconds"] > 0
    assert any(f["args"] == ["--benchmarks"] for f in info["flags"])  # docker/Makefile's, the tag's script takes it
    assert {"setting": "--skip_requirements", "why": "the ref's scripts/build_wheel.py does not accept it"} in \
        info["not_passed"]
    assert re.search(r"^  --job_count \d+ +JOBS=\d+: min\(\d+ CPUs, [\d.]+ GiB usable", out, re.M)
    # A C++ syntax error in the fix: exit 3, the compiler's first error with file:line, the wheel as it was.
    before = _files(folder)
    patch = next((root / "patches" / "rc25").glob("0001-18609-*.patch"))
    patch.write_text(patch.read_text().replace(GUARD, GUARD.replace("has_value())", "has_value()"), 1))
    assert _wheel(root, src, "--wheel-build", "host") == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(rf"the wheel build failed: {CPP}:\d+:\d+: error: ", err), err
    assert f"the wheel in {folder} is as it was" in err
    assert _files(folder) == before and sorted(p.name for p in folder.parent.iterdir()) == ["rc25"]


@pytest.mark.slow  # a cold build and a second one: make test keeps the case above
def test_a_one_line_change_recompiles_that_file_alone(miniature_template, tmp_path, capsys, compiler_cache):
    """The build tree's make recompiles what changed (the count is cmake's, ccache or not)."""
    root, src = _project(tmp_path, miniature_template), tmp_path / "trtllm"
    wheel_cache(root / "build" / "wheel-cache", compiler_cache)
    sh("git", "clone", "-q", miniature_template.as_uri(), src)
    assert _wheel(root, src, "--wheel-build", "host", "--json") == 0
    cold = json.loads(capsys.readouterr().out)
    patch = next((root / "patches" / "rc25").glob("0001-18609-*.patch"))
    patch.write_text(one_line_change(patch.read_text()))
    assert _wheel(root, src, "--wheel-build", "host", "--json") == 0
    warm = json.loads(capsys.readouterr().out)
    assert warm["compiled_files"] == ["tensorrt_llm/CMakeFiles/tensorrt_llm.dir/batch_manager/capacityScheduler.cpp.o"]
    assert cold["compiled"] > 5 and warm["sources_written"] == 1 and warm["sha256"] != cold["sha256"]


def _killed_midway(root: Path, src: Path, tmp_path: Path) -> None:
    """make wheel started in a process of its own and SIGKILLed, with what it runs, once its
    build has begun writing objects into the build tree."""
    argv = [sys.executable, "-m", "patchkit", "--root", str(root), "wheel", "--target", "rc25", "--src", str(src),
            "--out", str(root / "build" / "wheel"), "--cache", str(root / "build" / "wheel-cache"),
            "--wheel-build", "host"]
    trees = root / "build" / "wheel-cache" / "trees"
    began = {o.stat().st_mtime_ns: o for o in trees.rglob("*.o")} if trees.exists() else {}
    with open(tmp_path / "killed.err", "w") as err:
        run = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        deadline = time.monotonic() + 120
        while run.poll() is None and time.monotonic() < deadline:
            if any(m.exists() for m in trees.glob("*/building")) and any(
                    o.stat().st_mtime_ns not in began for o in trees.rglob("*.o")):
                break
            time.sleep(0.05)
        assert run.poll() is None, "the build ended before it could be killed: " + (tmp_path / "killed.err").read_text()
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()


@pytest.mark.slow  # two builds killed midway and two that finish: make test keeps the failed compile above
def test_a_build_killed_midway_leaves_no_wheel_half_written_and_the_next_run_finishes(miniature_template, tmp_path,
                                                                                       capsys):
    """#32's acceptance: kill make wheel midway (its compile under way, objects being written):
    nothing half-written under $(BUILD)/wheel/, the previous wheel as it was, and the next run
    finishes with the build tree it left."""
    root, src = _project(tmp_path, miniature_template), tmp_path / "trtllm"
    sh("git", "clone", "-q", miniature_template.as_uri(), src)
    wheels = root / "build" / "wheel"
    _killed_midway(root, src, tmp_path)  # the cold build: no wheel yet, and none appears
    assert not wheels.exists() or not any(p.is_file() for p in wheels.rglob("*")), sorted(wheels.rglob("*"))
    [marker] = (root / "build" / "wheel-cache" / "trees").glob("*/building")  # the killed build's start
    assert _wheel(root, src, "--wheel-build", "host", "--json") == 0, capsys.readouterr().err
    first = json.loads(capsys.readouterr().out)
    assert not marker.exists()  # the next run found it, removed what that build was writing, and finished
    folder = wheels / "rc25"
    before = _files(folder)
    assert ask(next(folder.glob("*.whl")), tmp_path / "site1")["tokens"] == 47  # the guard, compiled
    patch = next((root / "patches" / "rc25").glob("0001-18609-*.patch"))
    patch.write_text(one_line_change(patch.read_text()))
    _killed_midway(root, src, tmp_path)  # a second build, after a one-line change
    assert _files(folder) == before and sorted(p.name for p in wheels.iterdir()) == ["rc25"] and marker.exists()
    assert _wheel(root, src, "--wheel-build", "host", "--json") == 0, capsys.readouterr().err
    second = json.loads(capsys.readouterr().out)
    assert second["sha256"] != first["sha256"] and sorted(p.name for p in folder.iterdir()) == [
        next(folder.glob("*.whl")).name, "wheel.json"]
    assert json.loads((folder / "wheel.json").read_text())["sha256"] == second["sha256"]


def _session(sid: int) -> list[Path]:
    """The folders the live processes of a session run in."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[3]) == sid:
                found.append(Path(os.readlink(stat.parent / "cwd")))
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_what_still_runs_of_a_killed_build_is_stopped_by_the_next_run(tmp_path):
    """#32's fault sweep: make wheel SIGKILLed while its build ran unfenced (where bubblewrap
    cannot make its namespaces) left the build going on, writing into the tree the next run
    builds in (10 kill points of 10). The build runs in a session of its own, named in the
    tree's marker; the next run stops what still runs of it in the tree, and nothing else."""
    from patchkit.wheel import tree as trees
    tree = trees.open_tree(tmp_path / "cache", "rc25", "host")
    trees.begin(tree)
    away = tmp_path.resolve()  # a process of that session elsewhere: the session id may be another's by now
    left = subprocess.Popen(["sh", "-c", f"(cd '{away}' && exec sleep 60) & exec sleep 60"], cwd=tree.src,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while away not in _session(left.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        trees.running(tree, left.pid)
        again = trees.open_tree(tmp_path / "cache", "rc25", "host")
        assert left.wait(timeout=5) == -signal.SIGKILL and _session(left.pid) == [away]
        assert not (again.root / trees.MARKER).exists()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(left.pid, signal.SIGKILL)
        left.wait()

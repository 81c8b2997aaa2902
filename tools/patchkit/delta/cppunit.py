"""A compiled fix's C++ unit tests, run in the persistent build tree make wheel keeps (#32 item 3).

pytest runs a fix's Python tests; its C++ unit tests run where the build tree of the set and
its build environment exists (wheel/tree.py), through the tree's own tools, in the place
make wheel builds in (the devel image, or this machine): `cmake --build` of the test target,
then ctest on the tests that target's executable runs. Which targets: upstream registers each
unit test with add_gtest(<name> <file>) in cpp/tests/**/CMakeLists.txt (read from the stack's
commit, never guessed from names alone): the targets of the fix's own C++ test files, and the
unit test of each compiled file it touches (capacityScheduler.cpp: capacitySchedulerTest,
where add_gtest names one).

Each target runs twice: in the tree without the fix (stack.without: the rest of the stack and
the fix's own test files), then in the whole stack's tree, which is what the tree holds
afterwards (the next make wheel recompiles the files that moved, from the compiler cache).
Where no such tree exists: "not run here (needs the build tree)", never guessed.
"""
from __future__ import annotations

import contextlib
import json
import posixpath
import re
from pathlib import Path, PurePosixPath

from .. import progress, series, stack
from ..git import Repo, Sha
from ..model import Fix, PatchSet, is_test_path
from ..wheel import command as wheel_cmd, jobs as jobs_mod, place as places, tree as trees

SOURCES = (".cpp", ".cc", ".cxx", ".cu", ".c", ".h", ".hpp", ".cuh", ".inl")
LOG = "cpp-tests.log"  # in the tree's root, beside build.log: the last C++ test run's whole output
MARK = "PATCHKIT-CPP "
_GTEST = re.compile(r"\badd_gtest\s*\(\s*([A-Za-z0-9_.+-]+)\s+([^\s()]+)")
# A target's outcome: passed, failed, did not build, "not run: <why>" (the tree cannot run it: no
# such target there, configured without the tests, or no ctest test runs it; result.cpp_failed
# counts it neither way), or that the run ended before it said (which counts as failed).
# The program run in the place: build each target, list the tests ctest knows with the
# executable each runs, run the target's tests. Its last line says each target's outcome.
PROGRAM = """\
import json, os, re, subprocess, sys
_stats, build, jobs, *targets = sys.argv[1:]
os.chdir(build)
out = {}


def runs(target):
    shown = subprocess.run(["ctest", "--show-only=json-v1"], capture_output=True, text=True)
    try:
        listing = json.loads(shown.stdout).get("tests", [])
    except ValueError:
        listing = []
    return [t["name"] for t in listing if t.get("command") and
            os.path.basename(t["command"][0]).removesuffix(".exe") == target]


for target in targets:
    made = subprocess.run(["cmake", "--build", ".", "--parallel", jobs, "--target", target])
    names = runs(target)
    if made.returncode:
        out[target] = "did not build" if names else "not run: this build tree has no such test (configured without it?)"
        continue
    if not names:
        out[target] = "not run: no ctest test runs it"
        continue
    ran = subprocess.run(["ctest", "--output-on-failure", "-R", "^(" + "|".join(re.escape(n) for n in names) + ")$"])
    out[target] = "passed" if ran.returncode == 0 else "failed"
print("PATCHKIT-CPP " + json.dumps(out), flush=True)
"""


def gtests(repo: Repo, commit: Sha) -> dict[str, str]:
    """Each unit test target add_gtest registers under cpp/tests at commit: name -> its file."""
    files = repo.tree_files(commit)
    lists = {p: e for p, e in files.items()
             if PurePosixPath(p).parts[:2] == ("cpp", "tests") and PurePosixPath(p).name == "CMakeLists.txt"}
    repo.prefetch([sha for _mode, sha in lists.values()])
    out: dict[str, str] = {}
    for path, (_mode, sha) in sorted(lists.items()):
        text = repo.read_blob(sha).decode("utf-8", "replace")
        text = re.sub(r"#[^\n]*", "", text)
        for name, src in _GTEST.findall(text):
            out.setdefault(name, posixpath.normpath(posixpath.join(posixpath.dirname(path), src)))
    return out


def targets_of(fix: Fix, registered: dict[str, str]) -> tuple[dict[str, dict], list[str]]:
    """The fix's C++ unit test targets ({name: {"why", "files": its own test files the target
    builds}}) and what has none (a sentence each)."""
    paths = dict.fromkeys(p for patch in fix.patches for p in patch.paths)
    own = [p for p in dict.fromkeys([*fix.tests.all, *paths]) if _cpp_test(p)]
    touched = [p for p in paths if PurePosixPath(p).parts[0] == "cpp" and not is_test_path(p)
               and PurePosixPath(p).suffix in SOURCES]
    by_file = {src: name for name, src in registered.items()}
    targets: dict[str, dict] = {}
    untested: list[str] = []

    def add(name: str, why: str, file: str | None = None) -> None:
        entry = targets.setdefault(name, {"why": "", "files": []})
        entry["why"] = f"{entry['why']}; {why}" if entry["why"] else why
        entry["files"] += [file] if file else []
    for f in own:
        if f in by_file:
            add(by_file[f], f"its test {f}", f)
        else:
            untested.append(f"{f}: no add_gtest in cpp/tests names it")
    for f in touched:
        name = PurePosixPath(f).stem + "Test"  # upstream's convention: capacityScheduler.cpp, capacitySchedulerTest
        if name in registered:
            add(name, f"the unit test of {f}")
        elif PurePosixPath(f).suffix not in (".h", ".hpp", ".cuh", ".inl"):
            untested.append(f"{f}: no unit test target {name} (add_gtest) in cpp/tests")
    return targets, untested


def _cpp_test(path: str) -> bool:
    p = PurePosixPath(path)
    return p.parts[:2] == ("cpp", "tests") and p.suffix in (".cpp", ".cc", ".cxx", ".cu")


def not_run_reason(ps: PatchSet, why: str) -> str:
    return f"not run here (needs the build tree: make wheel TRTLLM={ps.target} makes it; {why})"


def run_all(ps: PatchSet, repo: Repo, base: Sha, fixes: list[Fix], settings: wheel_cmd.Settings) -> dict[str, dict]:
    """Each fix's C++ unit tests ({fix id: {...}}; a fix with none has no entry):
    {"targets": {name: {"why", "files", "unpatched", "patched"}}, "where", "log", "untested"},
    or, where the build tree is not here, {"targets": {name: {"why", "files"}}, "not_run": why}."""
    if not any(PurePosixPath(p).parts[0] == "cpp" for f in fixes for patch in f.patches for p in patch.paths):
        return {}
    whole = series.apply_series(repo, base, list(ps.patches), committer_date=series.THROWAWAY_DATE)
    whole.raise_on_conflict(f" to {base[:12]}")
    registered = gtests(repo, whole.tip)
    wanted = {f.id: targets_of(f, registered) for f in fixes}
    wanted = {i: tu for i, tu in wanted.items() if tu[0] or tu[1]}
    out = {i: {"targets": t, "untested": u} for i, (t, u) in wanted.items()}
    if not any(t for t, _u in wanted.values()):
        return out
    found = wheel_cmd.locate(ps, settings)
    why = found if isinstance(found, str) else _tree_unusable(
        ps, settings.cache / "trees" / f"{ps.target}-{found.key}", settings)
    if why:
        for entry in out.values():
            if entry["targets"]:
                entry["not_run"] = not_run_reason(ps, why)
        return out
    jobs = jobs_mod.choose(settings.jobs, jobs_mod.read_memory()).value  # make wheel's rule
    with contextlib.ExitStack() as held:
        wheel_cmd.hold_tree(held, settings.cache, ps.target, found.key, f"delta {ps.target}")
        tree = trees.open_tree(settings.cache, ps.target, found.key)
        build = _build_dir(tree.src)
        # line by line: a long build can be followed with tail -f
        log = held.enter_context(open(tree.root / LOG, "w", encoding="utf-8", errors="replace", buffering=1))

        def once(patches, names: list[str], said: str) -> dict[str, str]:
            res = series.apply_series(repo, base, patches, committer_date=series.THROWAWAY_DATE)
            res.raise_on_conflict(f" to {base[:12]} ({said})")
            trees.sync(repo, res.tip, tree)
            seen: dict[str, str] = {}

            def feed(line: str) -> None:
                log.write(line if line.endswith("\n") else line + "\n")
                if line.startswith(MARK):
                    seen.update(json.loads(line[len(MARK):]))
            with progress.step(f"C++ unit tests {', '.join(names)}: {said}, in {found.said}"):
                trees.begin(tree)
                code = places.run(found.place, tree.root, tree.ccache, [build, str(jobs), *names], feed,
                                  program=PROGRAM, started=lambda session: trees.running(tree, session))
                trees.end(tree)
            return {n: seen.get(n, f"the run ended (exit {code}) before it said") for n in names}

        for fid, (targets, _u) in wanted.items():
            if targets:
                said = once(stack.without(ps, stack.find(ps, fid)), sorted(targets), f"without fix {fid}")
                for n, outcome in said.items():
                    targets[n]["unpatched"] = outcome
        # the whole stack last: the tree holds it afterwards, as make wheel left it
        said = once(list(ps.patches), sorted({n for t, _u in wanted.values() for n in t}), "the whole stack")
        for fid, (targets, _u) in wanted.items():
            for n in targets:
                targets[n]["patched"] = said[n]
            if targets:
                out[fid].update(where=f"{found.said}, build tree {tree.root}", log=str(tree.root / LOG))
    return out


def _tree_unusable(ps: PatchSet, root: Path, settings: wheel_cmd.Settings) -> str:
    """Why the tree at root cannot run the tests as make wheel would build them now, or ''."""
    src = root / "src"
    if not any((src / "cpp").glob("build*/CMakeCache.txt")):
        return f"no configured build tree in {root}"
    archs = settings.archs or ps.container.cuda_archs
    had = (trees.read_state(root).get("configured") or {}).get("archs")
    if had and had != archs:
        return f"the build tree in {root} is configured for CUDA_ARCHS={had}, not {archs}"
    return ""


def _build_dir(src: Path) -> str:
    """Upstream's build folder in the tree (scripts/build_wheel.py's default, cpp/build, for a
    Release build; else the one that is configured), relative to src."""
    if (src / "cpp" / "build" / "CMakeCache.txt").is_file():
        return "cpp/build"
    found = sorted(p.parent for p in (src / "cpp").glob("build*/CMakeCache.txt"))
    return str(found[0].relative_to(src))

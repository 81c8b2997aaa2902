"""Fault injection (#11): the Nth git call fails, or patchkit is SIGKILLed before or after it,
during apply (into a checkout, and by clone), unapply, pr, export and dco --fix.

After a failure the checkout is as it was (HEAD, refs, index entries, tracked and untracked
files, stash, worktrees) and the exit code is a documented one other than 70 with one line on
stderr; after a kill the next plain run finishes the job. A run that exits 0 despite a
failed git call must have produced exactly what a clean run produces.

The default run samples a few fault points per command and mode; `pytest -m exhaustive`
(run by .ci/run) tries every git call of every command in every mode.
"""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from patchkit import patchset
from patchkit.delta import command as delta_cmd
from patchkit.git import Repo
from helpers import ROOT, copy_root, sh, state_of
from robust.faults import SAME, Injector, defects, kill_points, sample

MODES = ("fail", "kill-before", "kill-after")
SIGNOFF = "Jane Developer <jane@example.com>"


def same(a: dict, b: dict) -> bool:
    """Equal as a user sees it (the index file's stat data may be new after files were rewritten)."""
    return {k: v for k, v in a.items() if k != "index"} == {k: v for k, v in b.items() if k != "index"}


class Scenario:
    """A command on a prepared checkout: the template is copied afresh for every run."""

    def __init__(self, name, tmp: Path, upstream: Path, checkout: Path, root: Path, report: Path):
        self.name, self.tmp = name, tmp
        self.template = tmp / f"template-{name}"
        self.root = root
        self.upstream = upstream
        if name != "clone":
            shutil.copytree(checkout, self.template, symlinks=True)
        t = self.template
        pk = lambda *a: Injector(tmp).run(list(a), root=root)  # noqa: E731
        if name in ("unapply", "export"):
            assert pk("apply", "--target", "rc25", "--src", str(t)).code == 0
        if name == "dco":
            sh("git", "-C", t, "checkout", "-q", "-b", "work")
            for i in range(3):
                (t / f"f{i}.txt").write_text(f"{i}\n")
                sh("git", "-C", t, "add", f"f{i}.txt")
                sh("git", "-C", t, "commit", "-q", "-m", f"unsigned {i}")
            sh("git", "-C", t, "checkout", "-q", "main")
        self.report = report

    def argv(self, work: Path) -> list[str]:
        return {
            "apply": ["apply", "--target", "rc25", "--src", str(work)],
            "clone": ["apply", "--target", "rc25", "--src", str(work), "--url", self.upstream.as_uri()],
            "unapply": ["unapply", "--target", "rc25", "--src", str(work)],
            "pr": ["pr", "--target", "rc25", "--src", str(work), "--report", str(self.report),
                   "--out", str(work.parent / "out"), "--signoff", SIGNOFF],
            "export": ["export", "--target", "rc25", "--src", str(work)],
            # the commits' own author (the hermetic git identity) signs them off: a sign-off is the author's (#33 item 7)
            "dco": ["dco", "--src", str(work), "--branch", "work", "--base", "main", "--fix", "--signoff",
                    "Test User <test@example.com>"],
        }[self.name]

    def fresh(self, n: int) -> Path:
        work = self.tmp / f"run-{self.name}-{n}" / "trtllm"
        if work.parent.exists():
            shutil.rmtree(work.parent)
        work.parent.mkdir(parents=True)
        if self.name != "clone":
            shutil.copytree(self.template, work, symlinks=True)
        return work

    def look(self, work: Path) -> dict | None:
        """What a user can see: the checkout (None when there is none) and the patch set's files."""
        if not work.exists():
            return None
        seen = state_of(work)
        seen["worktrees"] = seen["worktrees"].replace(str(work), "<checkout>")
        seen["patches"] = sorted((p.name, p.read_bytes()) for p in (self.root / "patches" / "rc25").iterdir())
        return seen


@pytest.fixture(scope="module")
def world(tmp_path_factory, miniature_template):
    """An upstream, a user's clone, a project root copy and a measured delta report, made once."""
    tmp = tmp_path_factory.mktemp("faults")
    upstream = tmp / "upstream"
    shutil.copytree(miniature_template, upstream, symlinks=True)
    checkout = tmp / "checkout"
    sh("git", "clone", "-q", upstream.as_uri(), checkout)
    root = copy_root(tmp)
    report = tmp / "rc25.json"
    assert delta_cmd.delta(patchset.load(ROOT, "rc25"), repo=Repo(checkout), mode="source", report=report).ok
    return tmp, upstream, checkout, root, report


def sweep(world, name: str, points: int | None, tmp: Path, scenario: type[Scenario] | None = None) -> Counter:
    """Run one command with a fault at sampled (or all) git calls in every mode; count defects.
    scenario: another way to prepare the checkout (a Scenario's subclass)."""
    _, upstream, checkout, root, report = world
    sc = (scenario or Scenario)(name, tmp, upstream, checkout, root, report)
    inj = Injector(tmp)
    # A clean run: how many git calls, and the end state every recovered run must reach.
    work = sc.fresh(0)
    clean = inj.run(sc.argv(work), mode="clean", root=root)
    assert clean.code == 0, clean.stderr
    reference, total = sc.look(work), clean.calls
    _restore_patches(root)
    counts: Counter = Counter()
    for mode in MODES:
        for n in kill_points(clean, sample(total, points) if points else range(1, total + 1), mode, counts):
            work = sc.fresh(n)
            before = sc.look(work)
            res = inj.run(sc.argv(work), n, mode, root=root)
            counts["runs"] += 1
            problem = None
            if res.code == 70 or "internal error" in res.stderr:
                problem = "exit 70"
            elif "Traceback" in res.stderr:
                problem = "traceback"
            elif res.code == 0:
                if not _same_look(sc.look(work), reference):
                    problem = "exit 0 with a wrong result"
            elif res.code > 0:
                if res.stderr.count("\n") != 1:
                    problem = "not one line"
                elif not _same_look(sc.look(work), before):
                    problem = "changed checkout"
            else:  # killed: the next plain run must finish the job
                counts["killed"] += 1
                again = inj.run(sc.argv(work), root=root)
                done = again.code == 0 or (sc.argv(work)[0] == "unapply" and again.code == 4)
                if not (done and _same_look(sc.look(work), reference)):
                    problem = f"not recovered (next run exit {again.code}: {again.stderr.strip()[:200]})"
            if problem:
                counts[problem] += 1
                print(f"  {name} {mode} at git call {n}/{total}: {problem} (exit {res.code}) {res.stderr.strip()[:300]}")
            _restore_patches(root)
            shutil.rmtree(work.parent, ignore_errors=True)
    print(f"fault injection, {name}: {total} git calls, {counts['runs']} runs ({counts['killed']} killed), "
          f"{defects(counts)} defects: {dict(counts)}")
    return counts


def _same_look(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if not same(a, b):
        diff = [k for k in a if k != "index" and a.get(k) != b.get(k)]
        print("    differs in", diff, *[(k, a[k], b[k]) for k in diff if k not in ("files", "patches")])
        if "files" in diff:
            print("    files:", set(a["files"].items()) ^ set(b["files"].items()))
    return same(a, b)


def _restore_patches(root: Path) -> None:
    """export may rewrite patches/rc25 of the root copy; put the shipped files back."""
    dest = root / "patches" / "rc25"
    shutil.rmtree(dest)
    shutil.copytree(ROOT / "patches" / "rc25", dest)


COMMANDS = ("apply", "clone", "unapply", "pr", "export", "dco")


@pytest.mark.slow  # make test keeps one failing git call per command in test_crash.py
@pytest.mark.sampled
@pytest.mark.parametrize("name", COMMANDS)
def test_sampled_faults_leave_the_checkout_as_it_was_or_recoverable(world, tmp_path, name):
    counts = sweep(world, name, 3, tmp_path)
    assert counts["runs"] + counts[SAME] >= 6 and defects(counts) == 0, dict(counts)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", COMMANDS)
def test_every_fault_point(world, tmp_path, name):
    counts = sweep(world, name, None, tmp_path)
    assert defects(counts) == 0, dict(counts)

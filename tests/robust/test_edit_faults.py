"""make new-fix, drop, move and new-set killed or failing at every git call (#33 items 1 and 2): patches/
and the user's checkout are as they were (HEAD, refs, index, files, stash, worktrees); a run that
exits 0 wrote exactly what a clean run writes. One fault point in make test; sampled under make
test-slow, every call under -m exhaustive; through the CLI, as make runs it."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from helpers import ROOT, copy_project, sh
from patchkit import apply as apply_mod, miniature, patchset
from patchkit.backport import command as backport
from robust.faults import SAME, Injector, defects, judge, look, sample
from test_stack_verbs import commit_a_fix
from stacks import STACK_PR

MODES = ("fail", "kill-before", "kill-after")
COMMANDS = {
    "new-fix": ["--target", "rc25", "--fix-id", "20001"],
    "drop": ["--target", "rc25", "--fix-id", f"{STACK_PR}"],
    "move": ["--target", "rc25", "--fix-id", "19514", "--before", f"{STACK_PR}"],
    "new-set": ["--from", "rc25", "--ref", "v1.3.0rc26"],  # on the miniature's rc26 variant
}


class Sweep:
    """A stacked project and a checkout with overlay/rc25 (and a commit of the user's on it),
    copied fresh for each run."""

    def __init__(self, tmp: Path, stack_template: Path, upstream: Path, variant: str | None = None) -> None:
        self.tmp, self.root = tmp, tmp / "root"
        self.shipped = tmp / "shipped"
        if not variant:
            shutil.copytree(stack_template, self.root)
        else:  # new-set: the project's rc25 with 19450, which the rc26 release branch took (test_new_set.py)
            copy_project(self.root)
            upstream = tmp / f"upstream-{variant}"
            miniature.build(ROOT, upstream, variant)
            backport.backport(patchset.load(self.root, "rc25"), root=self.root, src=tmp / "rc25", url=upstream.as_uri(),
                              pr="19450", today="2026-12-02")
        shutil.copytree(self.root, self.shipped)
        self.template = tmp / "template"
        sh("git", "clone", "-q", upstream.as_uri(), self.template)
        apply_mod.apply(patchset.load(self.root, "rc25"), src=self.template)
        commit_a_fix(self.template)
        self.inj = Injector(tmp)

    def fresh(self, n: int) -> Path:
        shutil.rmtree(self.root)
        shutil.copytree(self.shipped, self.root)
        work = self.tmp / f"run-{n}"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(self.template, work, symlinks=True)
        return work

    def run(self, command: str, work: Path, n: int = 0, mode: str = "fail"):
        return self.inj.run([command, "--src", str(work), *COMMANDS[command]], n, mode, root=self.root)

    def judge(self, command: str, points, modes=MODES):
        return judge(command, self.fresh, lambda work, n=0, mode="fail": self.run(command, work, n, mode),
                     lambda work: dict(look(self.root, work), project=_files(self.root)), points, modes)


def _files(root: Path) -> list:
    """Every file of the project's copy (patches/<set>/ and waivers/ of any set), Last-Update aside."""
    return sorted((p.relative_to(root).as_posix(), re.sub(rb"^Last-Update: .*$", b"", p.read_bytes(), flags=re.M))
                  for p in root.rglob("*") if p.is_file())


def test_drop_killed_midway_changes_nothing(tmp_path, stack_template, upstream):
    """make test's one point: drop killed at the git call halfway through its run."""
    counts = Sweep(tmp_path, stack_template, upstream).judge("drop", lambda total: [total // 2], ("kill-before",))
    assert counts["runs"] == 1 and defects(counts) == 0, dict(counts)


@pytest.mark.slow
@pytest.mark.sampled
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_sampled_faults_leave_patches_and_the_checkout_as_they_were(tmp_path, stack_template, upstream, command):
    sweep = Sweep(tmp_path, stack_template, upstream, "rc26" if command == "new-set" else None)
    counts = sweep.judge(command, lambda total: sample(total, 4))
    assert counts["runs"] + counts[SAME] >= 9 and defects(counts) == 0, dict(counts)


@pytest.mark.exhaustive
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_fault_point(tmp_path, stack_template, upstream, command):
    sweep = Sweep(tmp_path, stack_template, upstream, "rc26" if command == "new-set" else None)
    counts = sweep.judge(command, lambda total: range(1, total + 1))
    assert defects(counts) == 0, dict(counts)

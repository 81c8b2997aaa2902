"""make backport killed or failing at every git call (#26 item 3): patches/<target> and the
user's checkout are as they were (HEAD, refs, index, files, stash, worktrees); a run that
exits 0 wrote exactly what a clean run writes. Sampled under make test-slow, every call
under -m exhaustive; through the CLI, as make runs it."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import copy_root, sh
from robust.faults import SAME, Injector, defects, judge, look, sample

MODES = ("fail", "kill-before", "kill-after")


def sweep(tmp: Path, upstream: Path, points: int | None):
    root = copy_root(tmp)
    shipped = tmp / "shipped"
    shutil.copytree(root / "patches", shipped)
    template = tmp / "template"
    sh("git", "clone", "-q", upstream.as_uri(), template)
    inj = Injector(tmp)

    def fresh(n: int) -> Path:
        shutil.rmtree(root / "patches")
        shutil.copytree(shipped, root / "patches")
        work = tmp / f"run-{n}"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(template, work, symlinks=True)
        return work

    def run(work: Path, n: int = 0, mode: str = "fail"):
        return inj.run(["backport", "--target", "rc25", "--src", str(work), "--pr", "19302"], n, mode, root=root)

    return judge("backport", fresh, run, lambda work: look(root, work),
                 (lambda total: sample(total, points)) if points else (lambda total: range(1, total + 1)), MODES)


@pytest.mark.slow
@pytest.mark.sampled
def test_sampled_faults_leave_patches_and_the_checkout_as_they_were(tmp_path, upstream):
    counts = sweep(tmp_path, upstream, 4)
    assert counts["runs"] + counts[SAME] >= 9 and defects(counts) == 0, dict(counts)


@pytest.mark.exhaustive
def test_every_fault_point_of_backport(tmp_path, upstream):
    counts = sweep(tmp_path, upstream, None)
    assert defects(counts) == 0, dict(counts)

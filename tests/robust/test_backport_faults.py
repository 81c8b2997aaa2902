"""make backport killed or failing at every git call (#26 item 3): patches/<target> and the
user's checkout are as they were (HEAD, refs, index, files, stash, worktrees); a run that
exits 0 wrote exactly what a clean run writes. Sampled under make test-slow, every call
under -m exhaustive; through the CLI, as make runs it."""
from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from helpers import copy_root, sh, state_of
from robust.faults import Injector, sample

MODES = ("fail", "kill-before", "kill-after")
# Last-Update is the day a run writes: a sweep that crosses midnight must not count it.
DAY = re.compile(rb"^Last-Update: \d{4}-\d{2}-\d{2}$", re.M)


def look(root: Path, checkout: Path) -> dict:
    seen = state_of(checkout)
    seen.pop("index")  # its stat data may be new; its entries are compared
    seen["worktrees"] = seen["worktrees"].replace(str(checkout), "<checkout>")
    seen["patches"] = sorted((p.name, DAY.sub(b"Last-Update: <day>", p.read_bytes()))
                             for p in (root / "patches" / "rc25").iterdir())
    return seen


def sweep(tmp: Path, upstream: Path, points: int | None) -> Counter:
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

    work = fresh(0)
    clean = run(work)
    assert clean.code == 0, clean.stderr
    reference, total = look(root, work), clean.calls
    counts: Counter = Counter()
    for mode in MODES:
        for n in (sample(total, points) if points else range(1, total + 1)):
            work = fresh(n)
            before = look(root, work)
            res = run(work, n, mode)
            counts["runs"] += 1
            after = look(root, work)
            problem = None
            if "Traceback" in res.stderr:
                problem = "traceback"
            elif res.code == 0:
                problem = None if after == reference else "exit 0 with a wrong result"
                if problem:
                    print("    differs in", [k for k in after if after[k] != reference[k]])
            elif res.code > 0 and res.stderr.count("\n") != 1:
                problem = "not one line"
            elif after != before:
                problem = "changed patches/ or the checkout"
            if res.code < 0:
                counts["killed"] += 1
            if problem:
                counts[problem] += 1
                print(f"  {mode} at git call {n}/{total}: {problem} (exit {res.code}) {res.stderr.strip()[:300]}")
    print(f"fault injection, backport: {total} git calls, {counts['runs']} runs ({counts['killed']} killed): {dict(counts)}")
    return counts


def _defects(counts: Counter) -> int:
    return sum(v for k, v in counts.items() if k not in ("runs", "killed"))


@pytest.mark.slow
def test_sampled_faults_leave_patches_and_the_checkout_as_they_were(tmp_path, upstream):
    counts = sweep(tmp_path, upstream, 4)
    assert counts["runs"] >= 9 and _defects(counts) == 0, dict(counts)


@pytest.mark.exhaustive
def test_every_fault_point_of_backport(tmp_path, upstream):
    counts = sweep(tmp_path, upstream, None)
    assert _defects(counts) == 0, dict(counts)

"""make bench, the backport: make backport of a pull request on the generated upstream, cold.

On the generated upstream (generate.py: 15,000 files, 5,000 commits, the miniature laid in),
a pull request branches from main AHEAD commits before its tip: a guard in a module of the
package and its test, two commits, served as refs/pull/<n>/head. make backport carries it on
rc25 as a user's cold start does (TRTLLM_SRC missing: the one-commit clone of the tag, then
the PR's own commits and the default branch since their merge base, commits only, and the
trees and blobs of what they touch); its bytes received are set against a full clone's.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .. import patchset, progress
from ..backport import command
from ..git import Identity, Repo, clone
from . import generate
from .measure import Figure

NUMBER = "424242"
AHEAD = 40  # commits main moved on after the PR branched
GOAL = 0.02  # of a full clone's bytes
AUTHOR = Identity("Bench Contributor", "contributor@bench.invalid")
MODULE = "tensorrt_llm/_torch/pyexecutor/scheduler.py"
TEST = "tests/unittest/_torch/executor/test_bench_guard.py"


@dataclass(frozen=True)
class BackportBench:
    target: str
    pr_commits: int
    seconds: float
    received_bytes: int
    full_bytes: int
    written: int  # files of patches/<target> written
    goal: float = GOAL
    steps: tuple[tuple[str, float], ...] = ()

    @property
    def share(self) -> float:
        return self.received_bytes / max(self.full_bytes, 1)

    def figures(self) -> list[Figure]:
        return [Figure("backport, cold: bytes / a full clone's", f"{100 * self.share:.2f} %",
                       f"under {100 * self.goal:.0f} %", self.share < self.goal)]


def backport_bench(root: Path, workdir: Path, target: str = "rc25", shape: generate.Shape | None = None) -> BackportBench:
    """The measurement; shape smaller only in tests."""
    base = generate.shared(root, workdir, shape)
    up = workdir / "backport-upstream.git"
    for d in (up, workdir / "backport-full", workdir / "backport-clone", workdir / "backport-root"):
        shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(base, up)
    commits = _pull(Repo(up))
    with progress.step("measuring: full clone (for comparison)"):
        clone(up.as_uri(), workdir / "backport-full")
    full = Repo(workdir / "backport-full").object_stats().pack_bytes
    project = workdir / "backport-root"  # a copy of the project's sets: the bench writes into it
    for d in ("patches", "waivers"):
        shutil.copytree(root / d, project / d)
    src = workdir / "backport-clone"
    with progress.timings() as steps, progress.step(f"measuring: make backport {target} PR={NUMBER}, cold"):
        t0 = time.perf_counter()
        res = command.backport(patchset.load(project, target), root=project, src=src, url=up.as_uri(), pr=NUMBER)
        seconds = time.perf_counter() - t0
    received = Repo(src).object_stats().pack_bytes
    return BackportBench(target, commits, seconds, received, full, len(res.written),
                         steps=tuple(s for s in steps if not s[0].startswith("measuring")))


def _pull(repo: Repo) -> int:
    """refs/pull/<NUMBER>/head: two commits on main~AHEAD (a guard, then its test)."""
    at = repo.rev_parse(f"main~{AHEAD}")
    text = (repo.show_file(at, MODULE) or b"").decode()
    changes = [(MODULE, text + "\n\ndef bench_guard(value):\n    return 0 if value is None else value\n",
                "[#424242][fix] Guard the bench's value"),
               (TEST, "from tensorrt_llm._torch.pyexecutor.scheduler import bench_guard\n\n\n"
                      "def test_none_is_zero():\n    assert bench_guard(None) == 0\n",
                "[#424242][test] Cover the bench's guard")]
    tip = at
    for path, content, message in changes:
        tip = generate.commit_file(repo, tip, path, content.encode(), message + "\n", AUTHOR)
    repo.set_ref(f"refs/pull/{NUMBER}/head", tip)
    return len(changes)


def render(b: BackportBench) -> str:
    verdict = "under" if b.share < b.goal else "OVER"
    return (f"backport, cold, of a {b.pr_commits}-commit PR branched {AHEAD} commits back onto {b.target}: "
            f"{b.seconds:.1f} s; received {b.received_bytes / 2**20:.2f} MiB = {100 * b.share:.2f} % of a full "
            f"clone's {b.full_bytes / 2**20:.1f} MiB ({verdict} the {100 * b.goal:.0f} % target); {b.written} "
            f"file(s) of patches/{b.target} written\n  steps: "
            + "; ".join(f"{name} {s:.2f} s" for name, s in b.steps if s >= 0.05))

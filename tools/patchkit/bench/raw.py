"""make bench, the commands against raw git (#34 item 4): each ratio paired (measure.paired).

- check: `make check` of every set on a checkout of the miniature (both refs in it) against
  the raw route to the same verdicts: for each set, an index of its ref in a file of its own
  (the checkout is at one ref, so the other needs one; check changes nothing either) and one
  `git apply --cached --check` of the whole series.
- apply: a cold `make apply` (TRTLLM_SRC missing, TRTLLM_URL a file:// upstream) against the
  route by hand to the same checkout: a depth-1 blobless clone of the ref, a sparse checkout
  of the set's paths (make apply's own paths: the same blobs fetched), the branch, `git am`
  of the series. On the miniature (our fixed costs laid bare) and on the generated upstream
  (generate.py: real proportions). Both upstreams allow filters, as GitHub does: the raw route
  needs nothing patchkit passes for a local upstream.
- startup: `patchkit --version` and `make help`, each alone: medians of runs.
Every command runs as a user runs it (a new process, from the project root), printed as run.
"""
from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import miniature, patchset, progress
from ..git import Repo, baseline
from ..model import PatchSet
from . import generate, measure
from .measure import Figure, Paired, Repeated

CHECK_GOAL, APPLY_GOAL, STARTUP_GOAL = 5.0, 3.0, 0.1
TARGET = "rc25"  # the set a cold apply is measured with
# The same committer for make apply and git am, whatever the machine's git config says.
WHO = {"GIT_COMMITTER_NAME": "Bench Committer", "GIT_COMMITTER_EMAIL": "committer@bench.invalid"}


@dataclass(frozen=True)
class CheckBench:
    sets: tuple[str, ...]
    pair: Paired
    goal: float = CHECK_GOAL

    def figures(self) -> list[Figure]:
        return [Figure("make check / raw git apply --cached --check", f"{self.pair.ratio:.2f}x",
                       f"at most {self.goal:.0f}x", self.pair.ratio <= self.goal)]


@dataclass(frozen=True)
class ApplyBench:
    target: str
    rows: tuple[tuple[str, Paired], ...]  # (which upstream, the pair)
    goal: float = APPLY_GOAL

    def figures(self) -> list[Figure]:
        return [Figure(f"cold make apply / by hand, {where}", f"{p.ratio:.2f}x", f"at most {self.goal:.0f}x",
                       p.ratio <= self.goal) for where, p in self.rows]


@dataclass(frozen=True)
class StartupBench:
    runs: tuple[Repeated, ...]
    goal: float = STARTUP_GOAL

    def figures(self) -> list[Figure]:
        return [Figure(r.command, f"{r.median:.3f} s", f"under {self.goal} s", r.median < self.goal) for r in self.runs]


def shown(argv: Sequence[str | os.PathLike], env: dict[str, str] | None = None) -> str:
    """A command as a shell line: its variables first, a series of patch files as their glob
    when the glob names exactly them, in order."""
    words = [shlex.quote(str(a)) for a in argv]
    patches = [str(a) for a in argv if str(a).endswith(".patch")]
    folder = Path(patches[0]).parent if patches else None
    if folder and [str(p) for p in sorted(folder.glob("*.patch"))] == patches:
        at = [str(a) for a in argv].index(patches[0])
        words[at:at + len(patches)] = [f"{shlex.quote(str(folder))}/*.patch"]
    return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()), *words])


def _series(ps: PatchSet) -> list[str]:
    return [str(p.file) for p in ps.patches]


def check_bench(root: Path, workdir: Path, runs: int = measure.RUNS) -> CheckBench:
    """make check of every set against the raw git route to the same verdicts, paired."""
    src, indexes = workdir / "check-upstream", workdir / "check-index"
    for d in (src, indexes):
        shutil.rmtree(d, ignore_errors=True)
    indexes.mkdir(parents=True)
    with progress.step("building the miniature for make check"):
        miniature.build(root, src)
    sets = [patchset.load(root, t) for t in patchset.targets(root)]
    env = measure.own_make_env(root)
    ours = ["make", "-s", "check", f"TRTLLM_SRC={src}"]
    raw: list[tuple[list[str], dict[str, str]]] = []
    for ps in sets:
        index = {"GIT_INDEX_FILE": str(indexes / f"{ps.target}.index")}
        raw += [(argv, index) for argv in baseline.check_series(ps.upstream.ref, _series(ps))]

    def by_git() -> measure.Timed:
        return measure.sequence([(argv, {**env, **extra}) for argv, extra in raw], cwd=src)
    with progress.step(f"measuring: make check against raw git apply --cached --check, {runs} pairs"):
        pair = measure.paired(shown(ours), lambda: measure.timed(ours, cwd=root, env=env),
                              f"cd {shlex.quote(str(src))} && " + " && ".join(shown(a, e) for a, e in raw), by_git, runs)
    return CheckBench(tuple(ps.target for ps in sets), pair)


def cold_pair(root: Path, workdir: Path, up: Path, target: str, runs: int) -> Paired:
    """A cold make apply from up against the route by hand, paired; up allows filters."""
    Repo(up).config_set("uploadpack.allowFilter", "true")
    ps = patchset.load(root, target)
    ours_dest, hand_dest = workdir / "apply-ours", workdir / "apply-by-hand"
    env = measure.own_make_env(root, WHO)
    ours = ["make", "-s", "apply", f"TRTLLM={target}", f"TRTLLM_SRC={ours_dest}", f"TRTLLM_URL={up.as_uri()}"]
    hand = baseline.apply_by_hand(up.as_uri(), hand_dest, ps.upstream.ref, ps.sparse_paths, ps.branch, _series(ps))

    def fresh(dest: Path, run):
        def go() -> measure.Timed:
            shutil.rmtree(dest, ignore_errors=True)
            return run()
        return go
    pair = measure.paired(shown(ours), fresh(ours_dest, lambda: measure.timed(ours, cwd=root, env=env)),
                          " && ".join(shown(a) for a in hand),
                          fresh(hand_dest, lambda: measure.sequence([(a, env) for a in hand], cwd=root)), runs)
    return pair


def apply_bench(root: Path, workdir: Path, runs: int = measure.RUNS, shape: generate.Shape | None = None,
                target: str = TARGET) -> ApplyBench:
    """A cold make apply against the route by hand, on the miniature and on the generated upstream."""
    mini = workdir / "apply-miniature"
    shutil.rmtree(mini, ignore_errors=True)
    miniature.build(root, mini)
    rows = []
    with progress.step(f"measuring: cold make apply {target} against the route by hand, miniature, {runs} pairs"):
        rows.append(("the miniature", cold_pair(root, workdir, mini, target, runs)))
    big = workdir / "apply-upstream.git"
    shutil.rmtree(big, ignore_errors=True)
    shutil.copytree(generate.shared(root, workdir, shape), big)
    with progress.step(f"measuring: cold make apply {target} against the route by hand, generated upstream, {runs} pairs"):
        rows.append(("the generated upstream", cold_pair(root, workdir, big, target, runs)))
    return ApplyBench(target, tuple(rows))


def startup_bench(root: Path, workdir: Path, runs: int = 11) -> StartupBench:
    """patchkit --version (this environment's) and make help, each a median of runs."""
    env = measure.own_make_env(root)
    patchkit = Path(sys.executable).parent / "patchkit"
    out = []
    with progress.step(f"measuring: patchkit --version and make help, {runs} runs each"):
        for argv in ([str(patchkit), "--version"], ["make", "-s", "help"]):
            out.append(measure.repeated(shown(argv), lambda argv=argv: measure.timed(argv, cwd=root, env=env), runs))
    return StartupBench(tuple(out))


def render_check(b: CheckBench) -> str:
    f = b.figures()[0]
    return (f"make check of {', '.join(b.sets)} against raw git: {b.pair.text()}; goal {f.goal}: "
            f"{f.verdict}\n  ours: {b.pair.ours}\n  raw:  {b.pair.baseline}")


def render_apply(b: ApplyBench) -> str:
    lines = []
    for (where, p), f in zip(b.rows, b.figures()):
        lines.append(f"cold make apply {b.target} against the route by hand, on {where}: {p.text()}; goal {f.goal}: "
                     f"{f.verdict}\n  ours:    {p.ours}\n  by hand: {p.baseline}")
    return "\n".join(lines)


def render_startup(b: StartupBench) -> str:
    return "\n".join(f"{r.command}: {r.text()}; goal {f.goal}: {f.verdict}" for r, f in zip(b.runs, b.figures()))

"""make bench, a stack: make check and a cold make apply of a 10-fix stack against the one-fix set.

On the generated upstream (generate.py), nine pull requests of three commits each, branched
from the rc25 tag, change generated files; make backport carries each onto rc25 (so the stack
is built the way a user builds one): our fix and nine backports, 30 patches. Then, paired
(measure.paired: one, stack, one, stack, ... after an untimed run of each): a cold apply
(TRTLLM_SRC missing: the one-commit clone of the tag) and check on that clone, each called in
this process, so that what is compared is the cost per patch, not the interpreter's start
(the same for both); the figure is the median of the per-pair ratios.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .. import apply as apply_mod, check, patchset, progress
from ..backport import command
from ..git import Identity, Repo
from . import generate, measure
from .measure import Figure, Paired

PULLS, COMMITS = 9, 3  # backports of COMMITS commits each (the first one more: 30 patches with rc25's two)
FIRST = 510001  # their numbers
TARGET, RATIO = "rc25", 2.0  # the stack's times within RATIO x the one-fix set's
AUTHOR = Identity("Bench Contributor", "contributor@bench.invalid")
TEXT = (".py", ".yaml", ".json", ".txt", ".cpp", ".h", ".cu", ".cuh")  # generated text files (not the binaries)


@dataclass(frozen=True)
class StackBench:
    fixes: int
    patches: int
    one_patches: int
    apply: Paired  # the stack's cold apply (A) against the one-fix set's (B)
    check: Paired
    build_seconds: float  # the nine make backport runs that built the stack
    ratio: float = RATIO

    @property
    def ok(self) -> bool:
        return self.apply.ratio <= self.ratio and self.check.ratio <= self.ratio

    def figures(self) -> list[Figure]:
        return [Figure(f"{self.fixes}-fix stack / one-fix set, cold apply", f"{self.apply.ratio:.2f}x",
                       f"at most {self.ratio:.0f}x", self.apply.ratio <= self.ratio),
                Figure(f"{self.fixes}-fix stack / one-fix set, check", f"{self.check.ratio:.2f}x",
                       f"at most {self.ratio:.0f}x", self.check.ratio <= self.ratio)]


def stack_bench(root: Path, workdir: Path, shape: generate.Shape | None = None, runs: int = 5) -> StackBench:
    """The measurement; shape smaller and runs fewer only in tests."""
    base = generate.shared(root, workdir, shape)
    up = workdir / "stack-upstream.git"
    project = workdir / "stack-root"
    for d in (up, project, workdir / "stack-build"):
        shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(base, up)
    for d in ("patches", "waivers"):
        shutil.copytree(root / d, project / d)
    numbers = _pulls(Repo(up))
    with progress.step(f"building a stack of {len(numbers) + 1} fixes with make backport"):
        t0 = time.perf_counter()
        for n in numbers:
            command.backport(patchset.load(project, TARGET), root=project, src=workdir / "stack-build", url=up.as_uri(),
                             pr=n)
        built = time.perf_counter() - t0
    one, ten = patchset.load(root, TARGET), patchset.load(project, TARGET)
    runs_of = {"one": _Runs(one, workdir / "stack-one", up.as_uri()), "stack": _Runs(ten, workdir / "stack-ten", up.as_uri())}
    with progress.step(f"measuring: cold apply of the stack ({len(ten.patches)} patches) against the one-fix set's, "
                       f"{runs} pairs"):
        applies = measure.paired(f"make apply TRTLLM={TARGET} (the stack), cold", runs_of["stack"].apply,
                                 f"make apply TRTLLM={TARGET} (one fix), cold", runs_of["one"].apply, runs)
    with progress.step(f"measuring: check of the stack against the one-fix set's, {runs} pairs"):
        checks = measure.paired(f"make check TRTLLM={TARGET} (the stack)", runs_of["stack"].check,
                                f"make check TRTLLM={TARGET} (one fix)", runs_of["one"].check, runs)
    for r in runs_of.values():
        shutil.rmtree(r.src, ignore_errors=True)
    return StackBench(len(ten.fixes), len(ten.patches), len(one.patches), applies, checks, built)


class _Runs:
    """A set's cold apply into src (cleared first, untimed) and its check there, each timed
    in this process (measure.called)."""

    def __init__(self, ps, src: Path, url: str) -> None:
        self.ps, self.src, self.url = ps, src, url

    def apply(self) -> measure.Timed:
        shutil.rmtree(self.src, ignore_errors=True)
        return measure.called(lambda: apply_mod.apply(self.ps, src=self.src, url=self.url))

    def check(self) -> measure.Timed:
        if not self.src.exists():
            apply_mod.apply(self.ps, src=self.src, url=self.url)
        return measure.called(lambda: check.check([self.ps], src=self.src))


def _pulls(repo: Repo) -> list[str]:
    """PULLS pull requests on the tag, each COMMITS commits (the first one more) appending to
    generated files there (each file changed by one commit only)."""
    tag = repo.rev_parse("refs/tags/v1.3.0rc25")
    files = sorted(name for _m, typ, name in repo.ls_tree(tag) if typ == "blob" and name.endswith(TEXT)
                   and not name.startswith(("tensorrt_llm/", "tests/", "docs/")))
    if len(files) < PULLS * COMMITS + 1:
        raise ValueError(f"the generated upstream has {len(files)} text files at the tag; the stack needs more")
    step = max(1, len(files) // (PULLS * COMMITS + 1))
    picked = iter(files[::step][:PULLS * COMMITS + 1])
    numbers = []
    for p in range(PULLS):
        tip = tag
        for c in range(COMMITS + (p == 0)):
            path = next(picked)
            text = (repo.show_file(tip, path) or b"").decode("utf-8", "replace")
            tip = generate.commit_file(repo, tip, path, (text + f"\n# bench stack: pull {p + 1}, commit {c + 1}\n").encode(),
                                       f"[None][fix] Bench stack change {p + 1}.{c + 1}\n", AUTHOR)
        repo.set_ref(f"refs/pull/{FIRST + p}/head", tip)
        numbers.append(str(FIRST + p))
    return numbers


def render(b: StackBench) -> str:
    apply, check = b.figures()
    return (f"a stack of {b.fixes} fixes ({b.patches} patches; built by make backport in {b.build_seconds:.1f} s) "
            f"against the one-fix set ({b.one_patches} patches), on {TARGET}, each called in-process:\n"
            f"  cold apply {b.apply.text()}; goal {apply.goal}: {apply.verdict}\n"
            f"  check {b.check.text()}; goal {check.goal}: {check.verdict}")

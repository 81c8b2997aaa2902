"""make bench, a stack: make check and a cold make apply of a 10-fix stack against the one-fix set.

On the generated upstream (generate.py), nine pull requests of three commits each, branched
from the rc25 tag, change generated files; make backport carries each onto rc25 (so the stack
is built the way a user builds one): our fix and nine backports, 30 patches. Then, for
the one-fix set and for the stack: a cold make apply (TRTLLM_SRC missing: the one-commit clone
of the tag) and make check on that clone, best of a few runs each.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .. import apply as apply_mod, check, patchset, progress
from ..backport import command
from ..git import Identity, Repo
from . import generate

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
    apply_seconds: float  # the stack's cold apply
    one_apply_seconds: float
    check_seconds: float
    one_check_seconds: float
    build_seconds: float  # the nine make backport runs that built the stack
    ratio: float = RATIO

    @property
    def ok(self) -> bool:
        return (self.apply_seconds <= self.ratio * self.one_apply_seconds
                and self.check_seconds <= self.ratio * self.one_check_seconds)


def stack_bench(root: Path, workdir: Path, shape: generate.Shape | None = None, repeat: int = 3) -> StackBench:
    """The measurement; shape smaller only in tests."""
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
    times = {}
    for name, ps in (("one", one), ("stack", ten)):
        applies, checks = [], []
        for i in range(repeat):
            src = workdir / f"stack-{name}-{i}"
            shutil.rmtree(src, ignore_errors=True)
            with progress.step(f"measuring: cold apply of {name} ({len(ps.patches)} patches), {i + 1}/{repeat}"):
                t0 = time.perf_counter()
                apply_mod.apply(ps, src=src, url=up.as_uri())
                applies.append(time.perf_counter() - t0)
            with progress.step(f"measuring: check of {name}, {i + 1}/{repeat}"):
                t0 = time.perf_counter()
                check.check([ps], src=src)
                checks.append(time.perf_counter() - t0)
            shutil.rmtree(src, ignore_errors=True)
        times[name] = (min(applies), min(checks))
    return StackBench(len(ten.fixes), len(ten.patches), len(one.patches), times["stack"][0], times["one"][0],
                      times["stack"][1], times["one"][1], built)


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
    verdict = "within" if b.ok else "NOT within"
    return (f"a stack of {b.fixes} fixes ({b.patches} patches; built by make backport in {b.build_seconds:.1f} s) "
            f"against the one-fix set ({b.one_patches} patches), on {TARGET}: cold apply {b.apply_seconds:.2f} s vs "
            f"{b.one_apply_seconds:.2f} s ({b.apply_seconds / max(b.one_apply_seconds, 1e-9):.2f}x), make check "
            f"{b.check_seconds:.2f} s vs {b.one_check_seconds:.2f} s ({b.check_seconds / max(b.one_check_seconds, 1e-9):.2f}x): "
            f"{verdict} the {b.ratio:.0f}x target")

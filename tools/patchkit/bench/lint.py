"""make bench: make lint on each set, the whole command as a user runs it, on the miniature.

cold: a fresh cache, so pre-commit builds every hook environment (the pinned tools installed
from the wheelhouse); warm: those environments kept and every hook run again (the verdict
memo removed); again: the same series once more, whose verdict is the memo's (make pr after
make lint). Target: warm under 5 s. Where the warm time goes: each hook's own duration as
pre-commit reports it, and the rest (start-up, applying the series, the workspace, pre-commit).
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import miniature, patchset, proc, progress
from .measure import Figure

TARGET_WARM_SECONDS = 5.0


@dataclass(frozen=True)
class LintRow:
    target: str
    cold: float
    warm: float
    again: float
    ok: bool
    hooks: tuple[tuple[str, float], ...]  # the warm run's hooks, slowest first


@dataclass(frozen=True)
class LintBench:
    rows: tuple[LintRow, ...]
    target_seconds: float = TARGET_WARM_SECONDS

    def figures(self) -> list[Figure]:
        return [Figure(f"make lint {r.target}, warm", f"{r.warm:.1f} s", f"under {self.target_seconds:.0f} s",
                       r.warm < self.target_seconds) for r in self.rows]


class _Failed(Exception):
    pass


def _run(root: Path, up: Path, target: str, cache: Path, report: Path) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "patchkit", "--root", str(root), "--quiet", "lint", "--target", target,
           "--src", str(up), "--cache", str(cache), "--report", str(report)]
    t0 = time.perf_counter()
    res = proc.run(cmd, check=False)
    seconds = time.perf_counter() - t0
    if res.returncode not in (0, 1):
        raise _Failed(f"make lint {target}: could not measure (exit {res.returncode}: "
                      f"{(res.stderr.strip().splitlines() or ['no output'])[-1]})")
    return seconds, json.loads(report.read_text())


def lint_bench(root: Path, workdir: Path) -> LintBench | str:
    """Cold, warm and again: the wall time of the lint command per target."""
    if not (Path(sys.prefix) / "wheelhouse" / ".fetched").exists():
        return "make lint: skipped (no wheelhouse; make setup fetches the hook tools)"
    up = workdir / "lint-upstream"
    workdir.mkdir(parents=True, exist_ok=True)
    if not up.exists():
        miniature.build(root, up)
    rows = []
    for target in patchset.targets(root):
        cache = workdir / f"lint-cache-{target}"
        shutil.rmtree(cache, ignore_errors=True)
        report = workdir / f"lint-{target}.json"
        try:
            with progress.step(f"measuring: make lint {target} (cold, warm, again)"):
                cold, _ = _run(root, up, target, cache, report)
                shutil.rmtree(cache / "verdicts", ignore_errors=True)
                warm, data = _run(root, up, target, cache, report)
                again, last = _run(root, up, target, cache, report)
        except _Failed as exc:
            shutil.rmtree(cache, ignore_errors=True)
            return str(exc)
        hooks = tuple(sorted(data.get("seconds", {}).items(), key=lambda kv: -kv[1]))
        rows.append(LintRow(target, cold, warm, again, bool(data.get("ok")) and bool(last.get("ok")), hooks))
        shutil.rmtree(cache, ignore_errors=True)
    return LintBench(tuple(rows))


def render(b: LintBench) -> str:
    lines = []
    for r, f in zip(b.rows, b.figures()):
        lines.append(f"make lint {r.target}: cold {r.cold:.1f} s (hook tools installed from the wheelhouse), "
                     f"warm {r.warm:.1f} s (tools cached, every hook runs; target under {b.target_seconds:.0f} s: {f.verdict}), "
                     f"again {r.again:.1f} s (same series: the memo's verdict); {'passes' if r.ok else 'FAILS'}")
        hooks = sum(s for _, s in r.hooks)
        lines.append("  warm, where the time goes: " + "; ".join(f"{h} {s:.2f} s" for h, s in r.hooks)
                     + f"; the rest (start-up, series, workspace, pre-commit itself) {max(r.warm - hooks, 0):.2f} s")
    return "\n".join(lines)

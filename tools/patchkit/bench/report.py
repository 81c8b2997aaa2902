"""How make bench reports: one block of text per section's result (--json: the results)."""
from __future__ import annotations

from typing import Any

from ..text.table import table
from .clone import FULL, NOW, TARGETS, THREEWAY_BASE, CloneBench
from .container import ContainerBench
from .delta import DeltaBench
from .waivers import WaiverBench
from .measure import Figure
from . import backport, demo, lint, loop, radar, raw, stacked, wheel


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def short_step(step: str) -> str:
    """'cloning main from file:///...' -> 'cloning main'; 'patch 1/2: 0001-...' -> 'patch 1/2'."""
    return step.split(" from ")[0].split(": ")[0].split(" (")[0]


def clone_bench(b: CloneBench) -> str:
    lines = [f"upstream: {b.files:,} files in {b.dirs:,} directories, {b.commits:,} commits; "
             f"generated in {b.generate_seconds:.1f} s ({b.generate_cpu_seconds:.1f} s CPU)"]
    rows = []
    for target in sorted({r.target for r in b.runs}, key=lambda t: TARGETS.index(t) if t in TARGETS else 99):
        for r in (x for x in b.runs if x.target == target):
            rows.append((target, r.method, f"{r.seconds:.2f}", _size(r.disk_bytes), _size(r.received_bytes),
                         f"{r.objects:,}", f"{100 * b.ratio(target, r.method):.2f} %", r.outcome))
        lim = next(x for x in b.limits if x.target == target)
        full = b.run(target, FULL).received_bytes
        rows.append((target, "limit: 1 commit, its trees, the set's blobs", "", "", _size(lim.received_bytes),
                     f"{lim.objects:,}", f"{100 * lim.received_bytes / max(full, 1):.2f} %"))
    lines.append(table(rows, ("target", "cold apply by", "wall s", "on disk", "received", "objects", "of full clone", "")))
    for target in sorted({r.target for r in b.runs}):
        r = b.run(target, NOW)
        inner = [(short_step(name), s) for name, s in r.steps if not name.startswith("measuring")]
        rest = r.seconds - sum(s for _, s in inner)
        lines.append(f"{target}, steps of the cold apply now: "
                     + "; ".join(f"{name} {s:.2f} s" for name, s in inner + [("the rest", rest)]))
    verdict = b.figures()[0].verdict
    worst = max(b.ratio(r.target, r.method) for r in b.runs if r.method in (NOW, THREEWAY_BASE))
    lines.append(f"goal: a cold apply (THREEWAY too, with its base on demand) receives at most {100 * b.goal:.1f} % "
                 f"of a full clone's bytes: {verdict} "
                 f"(worst {100 * worst:.2f} %)")
    return "\n".join(lines)


def delta_bench(b: DeltaBench) -> str:
    verdict = b.figures()[0].verdict
    return (f"source-mode delta {b.target} (both trees, {b.cases} cases each): {b.seconds:.2f} s, median of {b.runs} "
            f"(fastest {b.fastest:.2f} s); goal under {b.target_seconds:.0f} s: {verdict}\n  steps: "
            + "; ".join(f"{short_step(name)} {s:.2f} s" for name, s in b.steps))


def container_bench(b: ContainerBench | str) -> str:
    if isinstance(b, str):
        return b
    return (f"[{b.driver} storage] patched image from a small base: {b.small_seconds:6.2f} s; from a {b.big_base_mb} MiB base: "
            f"{b.big_seconds:6.2f} s (ratio {b.ratio:.1f}x); patched layer {b.layer_bytes / 1024:.1f} KiB")


def waiver_bench(b: WaiverBench) -> str:
    verdict = "under" if b.command_seconds < b.target_seconds else "OVER"
    return (f"make waivers on a {b.lines:,}-line waives.txt and {b.test_files:,} test files: "
            f"{b.command_seconds:.2f} s (cpu {b.command_cpu_seconds:.2f} s; {verdict} the {b.target_seconds:.0f} s "
            f"target); of which the waiver step {b.seconds:.2f} s (cpu {b.cpu_seconds:.2f} s); "
            f"{b.removed} line(s) narrowed into {b.added}")


# Each section's result, as text; a section skipped says why (a str).
RENDER = {CloneBench: clone_bench, DeltaBench: delta_bench, ContainerBench: container_bench, WaiverBench: waiver_bench,
          radar.RadarBench: radar.render, lint.LintBench: lint.render,
          backport.BackportBench: backport.render, stacked.StackBench: stacked.render, demo.DemoBench: demo.render,
          raw.CheckBench: raw.render_check, raw.ApplyBench: raw.render_apply, raw.StartupBench: raw.render_startup,
          loop.LoopBench: loop.render, wheel.WheelBench: wheel.render, str: str}


def figures(results: list[Any]) -> list[Figure]:
    """Every measured figure that has a goal, in the order of the sections."""
    return [f for b in results if hasattr(b, "figures") for f in b.figures()]


def goals(results: list[Any]) -> str:
    """All the figures beside their goals, in one table; the figures not met counted under it."""
    found = figures(results)
    if not found:
        return ""
    missed = sum(not f.met for f in found)
    rows = [(f.what, f.measured, f.goal, f.verdict) for f in found]
    return ("\n" + table(rows, ("figure", "measured", "goal", "")) + "\n"
            + (f"{missed} of {len(found)} goals not met" if missed else f"all {len(found)} goals met"))


def results(results: list[Any]) -> str:
    return "\n".join([RENDER[type(b)](b) for b in results] + ([goals(results)] if figures(results) else []))

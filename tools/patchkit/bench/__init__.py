"""make bench: everything it measures and generates, and how it reports.

Each section is a module here that measures one thing and returns its result (a dataclass,
or a str saying why it was skipped); report.py renders each kind of result:
- clone.py: the cold start by clone method, on an upstream that generate.py makes with real
  proportions (15,000 files, 5,000 commits, a few large binaries, the miniature laid in);
- delta.py: a full source-mode delta on the miniature;
- container.py: the patched image build from a small base and from a 1 GiB one;
- wheel.py: make wheel cold against one after a one-line C++ change, and the layer that carries
  the wheel against upstream's own recipe;
- waivers.py: the waiver step on a 100,000-line waives.txt;
- radar.py: make radar, cold, over 5,000 more commits of the generated upstream;
- lint.py: make lint on each set, cold, warm and again;
- store.py: the container section's private image store, never left mounted;
- backport.py: make backport of a pull request, cold, on the generated upstream;
- stacked.py: check and a cold apply of a 10-fix stack against the one-fix set, paired;
- raw.py: make check against raw git apply --cached --check, a cold make apply against the
  route by hand, paired; patchkit --version and make help;
- demo.py: make demo, the whole command, on a fresh clone (setup included) and warm;
- loop.py: make test, wall and CPU seconds;
- measure.py: how a command is timed, ratios paired, figures set beside their goals.
A new section: its module, its renderer in report.RENDER, and its line in SECTIONS. A section
runs alone by its name (--only, make's SECTION): a developer measures one figure in seconds.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BadInput
from . import backport, clone, container, delta, demo, lint, loop, measure, radar, raw, report, stacked, store, waivers, wheel


@dataclass(frozen=True)
class Options:
    files: int | None = None  # of the generated upstream (default: its real proportions)
    commits: int | None = None
    only: tuple[str, ...] = ()  # section names (default: every section)


# What make bench measures, in order, by name: (root, workdir, options) -> a result.
SECTIONS: dict[str, Callable[[Path, Path, Options], Any]] = {
    "clone": lambda root, work, opt: clone.sized(root, work, opt.files, opt.commits),
    "delta": lambda root, work, opt: delta.delta_bench(root, work),
    "container": lambda root, work, opt: container.container_bench(root, work),
    "wheel": lambda root, work, opt: wheel.wheel_bench(root, work),
    "waivers": lambda root, work, opt: waivers.waiver_bench(root, work),
    "radar": lambda root, work, opt: radar.radar_bench(root, work),
    "lint": lambda root, work, opt: lint.lint_bench(root, work),
    "backport": lambda root, work, opt: backport.backport_bench(root, work),
    "stack": lambda root, work, opt: stacked.stack_bench(root, work),
    "check": lambda root, work, opt: raw.check_bench(root, work),
    "apply": lambda root, work, opt: raw.apply_bench(root, work),
    "startup": lambda root, work, opt: raw.startup_bench(root, work),
    "demo": lambda root, work, opt: demo.demo_bench(root, work),
    "test": lambda root, work, opt: loop.loop_bench(root, work),
}


def chosen(only: tuple[str, ...]) -> list[str]:
    """The sections to run, in make bench's order: those named (split at commas and blanks),
    or every one; a name that is no section is refused, naming the sections."""
    if any(not word.replace(",", " ").strip() for word in only):
        raise BadInput(f"an empty section name; the sections: {', '.join(SECTIONS)}")
    names = [n for word in only for n in word.replace(",", " ").split()]
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise BadInput(f"no bench section {unknown[0]!r}; the sections: {', '.join(SECTIONS)}")
    return [n for n in SECTIONS if n in names] if names else list(SECTIONS)


def run(root: Path, workdir: Path, options: Options = Options()) -> list[Any]:
    """Each chosen section's result, in order (a command a section could not measure: one line
    saying so). A run killed before may have left the image store mounted under workdir: it
    is swept first, or the sections could not clear their folders."""
    names = chosen(options.only)
    store.sweep(workdir)
    out = []
    for name in names:
        try:
            out.append(SECTIONS[name](root, workdir, options))
        except measure.Failed as exc:
            out.append(f"{name}: could not measure: {exc}")
    return out


render = report.results

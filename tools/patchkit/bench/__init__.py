"""make bench: everything it measures and generates, and how it reports.

Each section is a module here that measures one thing and returns its result (a dataclass,
or a str saying why it was skipped); report.py renders each kind of result:
- clone.py: the cold start by clone method, on an upstream that generate.py makes with real
  proportions (15,000 files, 5,000 commits, a few large binaries, the miniature laid in);
- delta.py: a full source-mode delta on the miniature;
- container.py: the patched image build from a small base and from a 1 GiB one;
- waivers.py: the waiver step on a 100,000-line waives.txt;
- radar.py: make radar, cold, over 5,000 more commits of the generated upstream;
- lint.py: make lint on each set, cold, warm and again;
- store.py: the container section's private image store, never left mounted;
- backport.py: make backport of a pull request, cold, on the generated upstream;
- stacked.py: make check and a cold make apply of a 10-fix stack against the one-fix set;
- demo.py: make demo, the whole command, on a fresh clone (setup included) and warm.
A new section: its module, its renderer in report.RENDER, and its line in SECTIONS.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import backport, clone, container, delta, demo, lint, radar, report, stacked, store, waivers


@dataclass(frozen=True)
class Options:
    files: int | None = None  # of the generated upstream (default: its real proportions)
    commits: int | None = None


# What make bench measures, in order: (root, workdir, options) -> a result.
SECTIONS: tuple[Callable[[Path, Path, Options], Any], ...] = (
    lambda root, work, opt: clone.sized(root, work, opt.files, opt.commits),
    lambda root, work, opt: delta.delta_bench(root, work),
    lambda root, work, opt: container.container_bench(root, work),
    lambda root, work, opt: waivers.waiver_bench(root, work),
    lambda root, work, opt: radar.radar_bench(root, work),
    lambda root, work, opt: lint.lint_bench(root, work),
    lambda root, work, opt: backport.backport_bench(root, work),
    lambda root, work, opt: stacked.stack_bench(root, work),
    lambda root, work, opt: demo.demo_bench(root, work),
)


def run(root: Path, workdir: Path, options: Options = Options()) -> list[Any]:
    """Every section's result, in order. A run killed before may have left the image store
    mounted under workdir: it is swept first, or the sections could not clear their folders."""
    store.sweep(workdir)
    return [section(root, workdir, options) for section in SECTIONS]


render = report.results

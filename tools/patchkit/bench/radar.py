"""make bench, the radar: make radar over the bench's generated upstream, with a long history.

On the generated upstream (generate.py: 15,000 files, 5,000 commits, the miniature laid in),
COMMITS more commits go on main: each changes a few generated files, a few hundred change the
set's files (the patched module far below the hunk, the waiver file), one shifts the patched
method (offset), and one, at a known place, lands upstream's own form of the fix. Then make
radar runs as a user's cold start does (TRTLLM_SRC missing: the one-commit clone, then the
range's history), timed, its bytes received set against a full clone of the same upstream.
"""
from __future__ import annotations

import os
import random
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .. import miniature, minihistory, patchset, progress
from ..git import Repo, clone
from ..radar import command
from ..upstream import obtain
from . import generate, measure

COMMITS = 5_000
SET_TOUCHES = 300  # commits of those that change the set's files
TARGET_SECONDS, GOAL = 30.0, 0.02


@dataclass(frozen=True)
class RadarBench:
    commits_in_range: int
    candidates: int
    probes: int
    budget: int
    seconds: float
    received_bytes: int
    full_bytes: int
    fix_commit: str
    found_commit: str  # where radar says the tests' verdict changed
    steps: tuple[tuple[str, float], ...] = ()
    cpu_seconds: float = 0.0  # ours and our children's: on a shared machine, what the wall time would be alone
    load: float = 0.0  # the load average over the last minute, when it ended
    target_seconds: float = TARGET_SECONDS
    goal: float = GOAL

    @property
    def share(self) -> float:
        return self.received_bytes / max(self.full_bytes, 1)

    def figures(self) -> list[measure.Figure]:
        return [measure.Figure(f"radar, cold, over {self.commits_in_range:,} commits: bytes / a full clone's",
                               f"{100 * self.share:.2f} %", f"under {100 * self.goal:.0f} %", self.share < self.goal),
                measure.Figure("radar, cold: wall", f"{self.seconds:.1f} s", f"under {self.target_seconds:.0f} s",
                               self.seconds < self.target_seconds),
                measure.Figure("radar names the fix commit it was given", "yes" if self.found_commit == self.fix_commit
                               else "no", "yes", self.found_commit == self.fix_commit)]


def radar_bench(root: Path, workdir: Path, target: str = "main", shape: generate.Shape | None = None,
                commits: int = COMMITS, touches: int = SET_TOUCHES) -> RadarBench:
    """The measurement; shape, commits and touches smaller only in tests (the bench's are fixed)."""
    base = generate.shared(root, workdir, shape)
    up = workdir / "radar-upstream.git"
    if up.exists():
        shutil.rmtree(up)
    shutil.copytree(base, up)
    with progress.step(f"adding {commits:,} commits to main, {touches} of them on the set's files"):
        since, fix = _grow(root, Repo(up), commits, touches)
    for d in ("radar-full", "radar-clone"):
        shutil.rmtree(workdir / d, ignore_errors=True)
    with progress.step("measuring: full clone (for comparison)"):
        clone(up.as_uri(), workdir / "radar-full")
    full = Repo(workdir / "radar-full").object_stats().pack_bytes
    ps = patchset.load(root, target)
    with progress.timings() as steps, progress.step(f"measuring: make radar {target}, cold"):
        t0, cpu0 = time.perf_counter(), measure.own_cpu()
        repo, _ = obtain(ps, workdir / "radar-clone", up.as_uri())
        res = command.radar(ps, repo, since=since)
        seconds, cpu = time.perf_counter() - t0, measure.own_cpu() - cpu0
    received = Repo(workdir / "radar-clone").object_stats().pack_bytes
    tests = next((f.tests for f in res.fixes if f.kind == "ours"), res.fixes[0].tests)  # the own fix upstream fixed
    found = next((c["commit"] for c in tests["changes"] if c["fixed"]), "")
    return RadarBench(res.commits_in_range, res.candidates, tests["probes"], tests["budget"], seconds,
                      received, full, fix, found, tuple(s for s in steps if not s[0].startswith("measuring")), cpu,
                      os.getloadavg()[0])


def _grow(root: Path, repo: Repo, commits: int, touched: int) -> tuple[str, str]:
    """commits commits on main (one fast-import stream); (the old tip, the fix commit)."""
    rng = random.Random(18)
    tip = repo.rev_parse("main")
    util = (repo.show_file(tip, minihistory.UTIL) or b"").decode()
    waives = (repo.show_file(tip, minihistory.WAIVES) or b"").decode()
    scaffold = root / miniature.SCAFFOLD

    mains = {p: (scaffold / "main" / p).read_text() for p in (minihistory.UTIL, minihistory.DUAL_POOL)}

    def expand(layer: str, path: str) -> str:
        # A variant is a diff over main's scaffolding (miniature._patched), as the history variant lays it.
        text = miniature._patched(root, scaffold / layer, mains)[path] if layer.endswith(".diff") else mains[path]
        return miniature._expand(root, path, text)
    dual = (repo.show_file(tip, minihistory.DUAL_POOL) or b"").decode()
    dirs = sorted({name.rsplit("/", 1)[0] for _m, _t, name in repo.ls_tree(tip) if "/" in name
                   and name.endswith(".py") and not name.startswith(("tensorrt_llm/_torch/pyexecutor", "tests/unittest"))})
    pool = [f"{rng.choice(dirs)}/radar_{i}.py" for i in range(1500)]
    texts: dict[str, list[str]] = {}
    touches = sorted(rng.sample(range(1, commits), touched))
    fix_at, offset_at = touches[int(touched * 0.6)], touches[int(touched * 0.2)]
    # Dated after the tip, a minute apart, as upstream's commits land: radar fetches the range by
    # date as it does on a real upstream (the clone section's drift commit is dated now).
    out, mark, start = [], 0, int(repo.commit_info(tip).author_date.split(" ")[0]) + 60
    for c in range(commits):
        changes: dict[str, str] = {}
        for p in rng.sample(pool, rng.randint(1, 4)):
            lines = texts.setdefault(p, [f"# {p}: generated for the radar bench\n"])
            lines[rng.randrange(len(lines) + 1):0] = [f"value_{c}_{k} = {rng.randrange(10**6)}\n" for k in range(3)]
            changes[p] = "".join(lines)
        if c == offset_at:
            lines = util.splitlines(True)
            util = "".join(minihistory._insert_before(lines, "    def _get_cross_kv_cache_layout(\n",
                                                      minihistory.OFFSET_METHOD))
            changes[minihistory.UTIL] = util
        elif c == fix_at:
            for path, now in ((minihistory.UTIL, util), (minihistory.DUAL_POOL, dual)):
                new = "".join(minihistory.theirs_wins(expand("main", path).splitlines(True),
                                                      expand("variants/fixed-upstream.diff", path).splitlines(True),
                                                      now.splitlines(True)))
                changes[path] = new
            util, dual = changes[minihistory.UTIL], changes[minihistory.DUAL_POOL]
        elif c in touches and c % 3:
            util += f"\n\ndef _radar_bench_helper_{c}() -> int:\n    return {c}\n"
            changes[minihistory.UTIL] = util
        elif c in touches:
            waives += f"unittest/_torch/radar/test_r{c}.py SKIP (https://nvbugs/{6_000_000 + c})\n"
            changes[minihistory.WAIVES] = waives
        mark += 1
        msg = f"[None][feat] Radar bench change {c} (#{30_000 + c})\n"
        head = (f"commit refs/heads/main\nmark :{mark}\ncommitter Bench Upstream <bench@upstream.invalid> "
                f"{start + 60 * c} +0000\ndata {len(msg)}\n{msg}" + (f"from {tip}\n" if c == 0 else ""))
        body = "".join(f"M 100644 inline {p}\ndata {len(t.encode())}\n{t}\n" for p, t in sorted(changes.items()))
        out.append(head + body + "\n")
    repo.fast_import("".join(out) + "done\n")
    fix = repo.commits("--first-parent", f"{tip}..main")[fix_at]
    return tip, fix


def render(b: RadarBench) -> str:
    ok = "under" if b.seconds < b.target_seconds else "OVER"
    share = "under" if b.share < b.goal else "OVER"
    named = "named the known fix commit" if b.found_commit == b.fix_commit else (
        f"MISSED the fix: said {b.found_commit[:12] or 'none'}, it is {b.fix_commit[:12]}")
    return (f"radar, cold, over {b.commits_in_range:,} commits ({b.candidates} touch the set): {b.seconds:.1f} s "
            f"({ok} the {b.target_seconds:.0f} s target; {b.cpu_seconds:.1f} s of CPU; load {b.load:.1f} on "
            f"{os.cpu_count()} cores); received {b.received_bytes / 2**20:.2f} MiB = "
            f"{100 * b.share:.2f} % of a full clone's {b.full_bytes / 2**20:.1f} MiB ({share} the {100 * b.goal:.0f} % "
            f"target); {b.probes} test probes of at most {b.budget}; {named}\n  steps: "
            + "; ".join(f"{name} {s:.2f} s" + (f" ({n}x)" if n > 1 else "") for name, (s, n) in _grouped(b.steps)))


def _grouped(steps) -> list[tuple[str, tuple[float, int]]]:
    """The steps summed by kind (every 'probing the series on state n of m' as one)."""
    out: dict[str, tuple[float, int]] = {}
    for name, s in steps:
        kind = re.sub(r"\b[0-9a-f]{40}\b", "<commit>", re.sub(r"\b\d+\b", "n", name))
        total, n = out.get(kind, (0.0, 0))
        out[kind] = (total + s, n + 1)
    return [(k, v) for k, v in out.items() if v[0] >= 0.05]

"""make delta: each fix's test delta on the target, measured, never typed in.

Each fix of the stack is graded on its own tests and its own expectations: *without* it (the
rest of the stack and the fix's own test files: stack.without) against *with* the whole stack.
Container mode: without is the base image, with the stack's image (make container); the
trees then give only the tests. One report (schema 2, result.py) with a section per fix.
"""
from __future__ import annotations

import importlib.util
import tempfile
from dataclasses import asdict
from pathlib import Path

from .. import atomic, fresh, progress, scratch, series, stack
from ..errors import BadInput, Hint
from ..git import Repo, Sha
from ..model import Fix, PatchSet
from ..upstream import refuse_symlinked_paths
from ..wheel.command import Settings as WheelSettings
from . import MODES, cppunit, images as container_images, measure, result as R, upstreamfix
from .result import DeltaResult, FixDelta
from .run import ContainerRunner, Runner, SourceRunner

__all__ = ["DeltaResult", "FixDelta", "default_mode", "delta"]


def default_mode() -> str:
    """Source mode unless tensorrt_llm itself is importable here."""
    return "container" if importlib.util.find_spec("tensorrt_llm") else "source"


def delta(ps: PatchSet, *, repo: Repo, mode: str, report: Path, runner: Runner | None = None,
          images: tuple[str, str] | None = None, base_image: str | None = None,
          builder_name: str | None = None, fix_id: str | None = None, fetch: bool = True,
          wheel: WheelSettings | None = None) -> DeltaResult:
    """Build the trees in scratch space, run each fix's tests without it and with the stack,
    classify, grade, write the report. fix_id: that fix only (default: every fix). The set's
    ref is fetched first (fresh.view), unless fetch is False. Container mode with wheel (make
    wheel's settings): a compiled fix's C++ unit tests run in the set's build tree (cppunit.py)."""
    if mode not in MODES:
        raise BadInput(f"must be one of {', '.join(MODES)}, not {mode!r}", setting="mode")
    chosen = [stack.find(ps, fix_id)] if fix_id is not None else list(ps.fixes)
    if not any(f.tests.all for f in chosen):
        whose = f"fix {chosen[0].id} of the {ps.target} stack" if fix_id is not None else f"the {ps.target} patch set"
        raise BadInput(f"{whose} declares no tests (tests.regression in patchset.yaml)")
    seen = fresh.view(repo, ps, fetch=fetch)
    ref, base = seen.ref, Sha(seen.commit)
    refuse_symlinked_paths(repo, base, ps)  # the trees are written from git archive: no link may lead out
    used: dict[str, dict] = {}
    builder = ""
    if mode == "container" and images is None:  # the images make container built from BASE with BUILDER
        found = container_images.resolve(ps, commit=base, base=base_image, builder_name=builder_name,
                                         archs=(wheel.archs if wheel else None) or ps.container.cuda_archs)
        runner = runner or ContainerRunner(found.builder)
        images, builder = (found.unpatched.name, found.patched.name), found.builder.name
        # The report names each image; its environment is the image's business, not the report's.
        used = {k: {f: v for f, v in asdict(img).items() if f != "env"}
                for k, img in (("unpatched", found.unpatched), ("patched", found.patched))}
    if runner is None:
        runner = SourceRunner()
    _writable(report)
    fixed, eff = _probe(ps, repo, base, ref, mode, runner)
    keep = {f.id for f in chosen}
    sections: dict[str, FixDelta] = {f.id: s for f, s in fixed if f.id in keep}
    grade = [f for f in chosen if f.id not in {g.id for g, _s in fixed} and f.tests.all]
    not_graded = {f.id: "declares no tests" for f in chosen if not f.tests.all}
    if grade:
        sections.update(_measure(eff, repo, base, ref, mode, grade, runner, images, report, not_graded))
    cpp: dict[str, dict] = {}
    if mode == "container" and wheel is not None:
        gone = {g.id for g, _s in fixed}
        cpp = cppunit.run_all(eff, repo, base, [f for f in chosen if f.id not in gone], wheel)
    order = [f.id for f in ps.fixes]
    result = DeltaResult(ps.target, mode, ref, base, sorted(sections.values(), key=lambda s: order.index(s.id)),
                         str(report), builder if grade else "", used or ({"unpatched": {"name": images[0]}, "patched": {"name": images[1]}}
                                                       if images and grade else {}),
                         not_graded, len(ps.fixes), getattr(runner, "said", "") if sections else "",
                         view=seen, cpp=cpp)
    atomic.write_text(report, result.as_json())
    return result


def _probe(ps: PatchSet, repo: Repo, base: Sha, ref: str, mode: str, runner: Runner
           ) -> tuple[list[tuple[Fix, FixDelta]], PatchSet]:
    """Does the stack apply? Where a fix's patch does not, has upstream fixed its bug its own
    way (its regression tests on upstream with the rest of the stack)? The fixes fixed upstream,
    each with its section, and the stack the others are graded on (those fixes cut to their
    test files); a fix that neither applies nor is fixed upstream stops the delta, naming its
    patch, file and hunk."""
    with progress.step(f"probing the {ps.target} series on {ref}"):
        pre = series.apply_series(repo, base, ps.patches, committer_date=series.THROWAWAY_DATE, stop_on_conflict=False)
    if pre.ok:
        return [], ps
    stacked = ps.stacked
    found: list[tuple[Fix, FixDelta]] = []
    for fix in ps.fixes:
        mine = [o for o in pre.outcomes if stack.owner(ps, o.patch).id == fix.id]
        if all(o.status != series.CONFLICT for o in mine):
            continue
        # Its patched tree cannot be built: has upstream fixed the bug its own way?
        measured = upstreamfix.measure(ps, repo, base, pre.outcomes, runner if mode == "source" else None, fix=fix)
        if measured and measured[0].fixed:
            fx, run = measured
            found.append((fix, R.fixed_upstream(fix, mode, dict(asdict(fx), summary=fx.summary(), advice=fx.advice(),
                                                                 probe_mode=upstreamfix.MODE), run)))
            continue
        # Where the fix stopped applying, and what it needs (refresh, rework, retire): make radar.
        cut = series.SeriesResult(pre.base, pre.tip, mine) if stacked else pre
        cut.raise_on_conflict(f" to {base[:12]}" + (f" (fix {fix.id})" if stacked else ""), hint=Hint.radar(ps.target),
                              note=measured[0].summary() if measured else "")
    # The others are graded on the stack as it stands upstream now: those fixes' test files only.
    return found, stack.cut(ps, [f.id for f, _s in found])


def _measure(ps: PatchSet, repo: Repo, base: Sha, ref: str, mode: str, fixes: list[Fix], runner: Runner,
             images: tuple[str, str] | None, report: Path, not_graded: dict[str, str]) -> dict[str, FixDelta]:
    """Each fix's section: its tests run in the tree without it and in the stack's tree
    (measure.run_fixes); a fix none of whose tests pytest collects goes to not_graded, saying so."""
    stacked = ps.stacked
    out: dict[str, FixDelta] = {}
    with scratch.folder("delta") as work:
        runs, why = measure.run_fixes(ps, repo, base, ref, mode, fixes, runner, work, images)
        not_graded.update(why)
        copied: dict[str, str] = {}  # JUnit XML beside the report: each tree without a fix, and the stack's once
        for r in runs:
            junit = {}
            for name, xml in r.junit.items():
                dest = report.with_name(f"{report.stem}.{r.fix.id}.{name}.xml" if stacked and name == "unpatched"
                                        else f"{report.stem}.{name}.xml")
                if xml not in copied:
                    atomic.write_bytes(dest, Path(xml).read_bytes())
                    copied[xml] = str(dest)
                junit[name] = copied[xml]
            out[r.fix.id] = R.graded(r.fix, mode, r.unpatched, r.patched, r.tests, r.missing, ref, junit,
                                     r.not_collected, r.left_out)
    return out


def _writable(report: Path) -> None:
    """Refuse a report path that cannot be written before measuring, not after (exit 70 was
    the answer to REPORT=/proc/x.json or REPORT=<a folder>, once both trees had run)."""
    if report.is_dir():
        raise BadInput(f"the report {report} is a folder", hint=Hint.choose("report"))
    try:
        report.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=report.parent, prefix=f".{report.name}.", delete=True):
            pass
    except OSError as e:
        why = "a file is in the way" if isinstance(e, (FileExistsError, NotADirectoryError)) else e.strerror
        raise BadInput(f"cannot write the report {report}: {why}", hint=Hint.choose("report")) from None

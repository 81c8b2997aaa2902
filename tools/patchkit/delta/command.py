"""make delta: the unpatched-versus-patched test delta for a target, measured, never typed in."""
from __future__ import annotations

import importlib.util
import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from .. import atomic, progress, scratch, series
from ..errors import Ask, BadInput, Hint
from ..git import Repo
from ..model import PatchSet
from ..upstream import base_of, refuse_symlinked_paths
from . import MODES, compare, images as container_images, trees, upstreamfix
from .run import ContainerRunner, Job, Runner, SourceRunner, TreeRun


def default_mode() -> str:
    """Source mode unless tensorrt_llm itself is importable here."""
    return "container" if importlib.util.find_spec("tensorrt_llm") else "source"


@dataclass
class DeltaResult:
    target: str
    mode: str
    upstream_ref: str
    upstream_commit: str
    tests: list[str]
    unpatched: dict
    patched: dict
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    pass_to_fail: list[str]
    fail_to_fail: list[str]
    other: dict[str, str]
    not_run: dict[str, str]
    expected: dict
    matches_expected: bool
    mismatches: list[str]
    valid: bool
    invalid: list[str]
    junit: dict[str, str] = field(default_factory=dict)
    report: str = ""
    # Set when the series does not apply and the set's regression tests already give, on
    # upstream alone, what the set declares for its patched tree: its own verdict.
    fixed_upstream: dict | None = None
    builder: str = ""  # container mode: the builder that ran the images
    images: dict[str, dict] = field(default_factory=dict)  # container mode: tree -> name, id, digest, labels

    @property
    def ok(self) -> bool:
        return self.valid and (self.matches_expected or self.fixed_upstream is not None)

    @property
    def hints(self) -> list[Hint]:
        """Tests that could not run here run in container mode; the commit that fixed the bug
        upstream is the one make radar bisects the set's tests to."""
        return ([self._container_hint()] if self.not_run and self.mode != "container" else []) + (
            [Hint.radar(self.target)] if self.fixed_upstream is not None else [])

    def _container_hint(self) -> Hint:
        """Container mode, in the image of the set's base. A release image is built from a tag;
        a set on a branch (main) has none of its own, and its container.base, a release's, is
        refused by the drift guard once the branch moved: it needs BASE, an image built from it
        (#27 item 4: the hint said MODE=container alone, which main cannot run)."""
        if self.upstream_ref.startswith("refs/tags/"):
            return Hint.run(None, mode="container")
        branch = self.upstream_ref.rsplit("/", 1)[-1]
        return Hint(None, (("mode", "container"), ("base", Ask(f"an image built from {branch}"))),
                    f"{branch} has no release image; make container needs the same BASE")


def _tree_summary(run: TreeRun) -> dict:
    return {**compare.counts(run), "exitstatus": run.exitstatus,
            "tests": {tid: v["outcome"] for tid, v in sorted(run.tests.items())}}


def delta(ps: PatchSet, *, repo: Repo, mode: str, report: Path, runner: Runner | None = None,
          images: tuple[str, str] | None = None, base_image: str | None = None,
          builder_name: str | None = None) -> DeltaResult:
    """Build both trees in scratch space, run the declared tests, classify, grade, write the report."""
    if mode not in MODES:
        raise BadInput(f"must be one of {', '.join(MODES)}, not {mode!r}", setting="mode")
    tests = list(ps.tests.all)
    if not tests:
        raise BadInput(f"the {ps.target} patch set declares no tests (tests.regression in patchset.yaml)")
    ref, base = base_of(repo, ps)
    refuse_symlinked_paths(repo, base, ps)  # the trees are written from git archive: no link may lead out
    used: dict[str, dict] = {}
    builder = ""
    if mode == "container" and images is None:  # the images make container built from BASE with BUILDER
        found = container_images.resolve(ps, commit=base, base=base_image, builder_name=builder_name)
        runner = runner or ContainerRunner(found.builder)
        images, builder = (found.unpatched.name, found.patched.name), found.builder.name
        # The report names each image; its environment is the image's business, not the report's.
        used = {k: {f: v for f, v in asdict(img).items() if f != "env"}
                for k, img in (("unpatched", found.unpatched), ("patched", found.patched))}
    if runner is None:
        runner = SourceRunner()
    _writable(report)
    with progress.step(f"probing the {ps.target} series on {ref}"):
        pre = series.apply_series(repo, base, ps.patches, committer_date=series.THROWAWAY_DATE, stop_on_conflict=False)
    if not pre.ok:
        # The patched tree cannot be built: has upstream fixed the bug its own way?
        measured = upstreamfix.measure(ps, repo, base, pre.outcomes, runner if mode == "source" else None)
        if measured and measured[0].fixed:
            return _fixed_upstream(ps, mode, ref, base, report, *measured)
        # Where the set stopped applying, and what it needs (refresh, rework, retire): make radar.
        pre.raise_on_conflict(f" to {base[:12]}", hint=Hint.radar(ps.target),
                              note=measured[0].summary() if measured else "")
    with scratch.folder("delta") as work:
        paths = trees.existing_paths(repo, base, ps, sorted(set(ps.touched_paths) | set(tests)))
        if mode == "container":  # the image's installed package is under test, not a copy in the tree
            paths = [p for p in paths if PurePosixPath(p).parts[0] != ps.container.package]
        missing = [t for t in tests if t not in paths]
        tests = [t for t in tests if t in paths]
        with progress.step("writing the unpatched and the patched tree"):
            tr = trees.build(repo, base, ps, work / "trees", paths=paths)
        out = work / "out"
        out.mkdir()
        jobs = [Job("unpatched", tr.unpatched, out, images[0] if images else None),
                Job("patched", tr.patched, out, images[1] if images else None)]
        if not tests:
            raise BadInput(f"none of the {ps.target} set's tests exists at {ref}: {', '.join(missing)}")
        with progress.step(f"running {len(tests)} test file(s) in both trees ({mode} mode)"):
            unpatched, patched = runner.run(jobs, tests, trees.source_modules(ps))
        junit = {}
        for run in (unpatched, patched):
            if run.junit:
                dest = report.with_name(f"{report.stem}.{run.name}.xml")
                atomic.write_bytes(dest, Path(run.junit).read_bytes())
                junit[run.name] = str(dest)
    d = compare.classify(unpatched, patched)
    invalid = compare.validity(unpatched) + compare.validity(patched)
    expected = (ps.expected or {}).get(mode, {})
    mismatches = [f"{t}: declared, but does not exist at {ref}" for t in missing]
    mismatches += compare.grade(expected, unpatched, patched, d, tests)
    not_run = {tid: v.get("reason", "") for run in (unpatched, patched) for tid, v in run.tests.items()
               if v["outcome"] == "not_run"}
    result = DeltaResult(ps.target, mode, ref, base, list(ps.tests.all), _tree_summary(unpatched), _tree_summary(patched),
                         d.fail_to_pass, d.pass_to_pass, d.pass_to_fail, d.fail_to_fail, d.other, not_run,
                         expected, not mismatches, mismatches, not invalid, invalid, junit, str(report),
                         builder=builder, images=used or ({"unpatched": {"name": images[0]}, "patched": {"name": images[1]}}
                                           if images else {}))
    atomic.write_text(report, json.dumps(asdict(result), indent=2, sort_keys=True) + "\n")
    return result


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


def _fixed_upstream(ps: PatchSet, mode: str, ref: str, base: str, report: Path,
                    fix: upstreamfix.UpstreamFix, run: TreeRun) -> DeltaResult:
    """The delta's own verdict when upstream fixed the bug: only the unpatched tree exists."""
    not_run = {tid: v.get("reason", "") for tid, v in run.tests.items() if v["outcome"] == "not_run"}
    result = DeltaResult(ps.target, mode, ref, base, list(ps.tests.all), _tree_summary(run), {}, [], [], [], [], {},
                         not_run, (ps.expected or {}).get(mode, {}), False, [], True, [], {}, str(report),
                         dict(asdict(fix), summary=fix.summary(), advice=fix.advice(), probe_mode=upstreamfix.MODE))
    atomic.write_text(report, json.dumps(asdict(result), indent=2, sort_keys=True) + "\n")
    return result

"""make lint: upstream's own pre-commit hooks on exactly the files the series changes, at the ref.

The series is applied (series.py, into throwaway commits) on the target's upstream commit; the
files it changes, upstream's .pre-commit-config.yaml and the tools' settings (pyproject.toml,
ruff-legacy.toml, ...) at that commit, and the scripts its local hooks run with what they read,
are written into a small git workspace (in a sparse or partial clone only those blobs are
fetched, needs.py). The real
pre-commit runs there with hook repositories resolved to local mirrors of the pinned tools
from PyPI (mirrors.py). One run over all files; only when a hook fails is each file run on
its own, to say which file each failing hook wants changed and what the formatters make of
it (FIX=1 puts that into the series' commits).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import atomic, progress, series
from ..errors import BadInput, ExitCode, Hint, ToolMissing, UserError
from ..fresh import View
from ..git import Identity, Repo, Sha, init
from ..model import PatchSet
from ..upstream import base_of
from . import config as config_mod, mirrors, needs, revs, run as run_mod, wheels as wheels_mod

CONFIG = ".pre-commit-config.yaml"
# The tools' settings a hook may read, at the repository root (ruff and codespell read
# pyproject.toml; the legacy ruff hook reads ruff-legacy.toml and its baseline).
SETTINGS = ("pyproject.toml", "ruff-legacy.toml", "ruff-legacy-baseline.json", "legacy-files.txt", "ruff.toml",
            ".ruff.toml", "setup.cfg", ".style.yapf", ".isort.cfg", ".codespellrc", ".flake8")
RUN_CONFIG = ".git/patchkit-lint-config.yaml"
WORKSPACE_ID = Identity("patchkit lint", "lint@patchkit.invalid")


@dataclass
class Failure:
    file: str
    hook: str
    wants: str


@dataclass
class LintResult:
    target: str
    upstream_ref: str
    upstream_commit: str
    patch_set: str  # the set's content hash: a report is for this series only
    paths: list[str]  # the files the series changes, as they are after it
    ran: list[str]  # hook ids that ran on some of the files
    failures: list[Failure]
    not_run: dict[str, str]  # hook id -> why (only hooks that select some of the files)
    tools: dict[str, str]  # hook id -> the pinned tool from PyPI it ran
    config_found: bool = True
    report: str = ""
    fixed: dict[str, str] = field(default_factory=dict)  # file -> the content the formatters make of it
    fixed_tip: str = ""  # FIX=1: the rewritten series' last commit
    fix_requested: bool = False
    rewritten: list[str] = field(default_factory=list)  # FIX: the patch files it rewrote
    memo: bool = False  # the verdict of an earlier run on exactly these inputs (nothing changed since)
    seconds: dict[str, float] = field(default_factory=dict)  # hook id -> its run's duration, as pre-commit says
    tool_missing: list[str] = field(default_factory=list)  # not run: their pinned tool could not be fetched here
    error: str = ""  # pre-commit itself could not run the hooks (no hook's verdict is known): its reason
    view: View | None = None  # fresh.View: the upstream commit judged, and how fresh that view of upstream is

    @property
    def checked(self) -> bool:
        """Whether the hooks judged the files: pre-commit ran, no pinned tool was missing here,
        and some hook ran where hooks select the files."""
        return (self.config_found and not self.error and not self.tool_missing
                and bool(self.ran or not self.not_run))

    @property
    def ok(self) -> bool:
        return self.checked and not self.failures

    @property
    def code(self) -> ExitCode:
        """make lint's exit code: 1 when a hook fails (or no config), 5 when the hooks could not judge."""
        if self.failures or not self.config_found:
            return ExitCode.MISMATCH
        return ExitCode.OK if self.checked else ExitCode.TOOL_MISSING

    @property
    def hints(self) -> list[Hint]:
        if self.failures and not self.fix_requested and any(f.wants.startswith("rewrites") for f in self.failures):
            return [Hint.run(None, fix=True)]
        return []


def default_cache(root: Path) -> Path:  # noqa: ARG001 - the project no longer decides it (#27 item 7)
    """Where the hook environments, mirrors and verdicts live: $PATCHKIT_LINT_CACHE, else beside
    the wheelhouse they are installed from, in the environment make setup made (.venv/lint-cache).
    Installing the tools is the slow part: the cache is kept with the tools, not in build/, which
    holds the reports (the tests share it too, and so write nothing into build/)."""
    env = os.environ.get("PATCHKIT_LINT_CACHE")
    return Path(env).resolve() if env else (Path(sys.prefix) / "lint-cache").resolve()


def wheelhouse() -> Path:
    """Where make setup put the pinned tools' wheels: beside the environment we run in."""
    return Path(sys.prefix) / "wheelhouse"


def lint(ps: PatchSet, *, repo: Repo, report: Path | None, cache: Path, fix: bool = False,
         house: Path | None = None, merge_bases: Sequence[str] = ()) -> LintResult:
    """Run upstream's hooks on the series' files at the target's ref; write the JSON report
    (report None: the caller keeps it, as make pr does in the PR's folder). merge_bases: a
    series that applies only 3-way from them (make pr: a fix made on a backport beneath it)."""
    house = house or wheelhouse()
    ref, base = base_of(repo, ps)
    with progress.step(f"applying the {ps.target} series on {ref} for the lint"):
        res = series.apply_series(repo, base, ps.patches, committer_date=series.THROWAWAY_DATE,
                                  threeway=bool(merge_bases), merge_bases=merge_bases, search_history=False)
    res.raise_on_conflict(f" to {base[:12]}")
    tip = res.tip
    files = [p for p in ps.touched_paths if repo.show_file(tip, p) is not None]
    result = LintResult(ps.target, ps.upstream.ref, base, ps.content_hash, files, [], [], {}, {}, report=str(report or ""),
                        fix_requested=fix)
    # In a cold one-commit blobless clone these blobs are not here yet: fetched alone, watched.
    with progress.step("fetching upstream's hook configuration and the tools' settings at the ref"):
        here = needs.fetch(repo, tip, [CONFIG, *SETTINGS])
    text = repo.show_file(tip, CONFIG) if CONFIG in here else None
    if text is None:
        result.config_found = False
        return _write(result, report)
    if not (Path(house) / ".fetched").exists() and not any(Path(house).glob("*.whl")):
        raise ToolMissing(f"the hook tools' wheelhouse {house} is missing", hint=Hint.run("setup"))

    def exists(path: str) -> bool:  # from the trees alone: no blob is fetched to say so
        return bool(repo.blob_ids(tip, [path]))

    where = f"upstream's {CONFIG} at {ps.upstream.ref} ({base[:12]})"
    cache.mkdir(parents=True, exist_ok=True)
    try:
        # pre-commit judges upstream's own config first: what it rejects is never made runnable.
        _validate(cache, text)
        try:
            plan = config_mod.plan(text.decode(), wheelhouse=house, exists=exists)
        except revs.Malformed as exc:
            raise run_mod.Failed(str(exc), rejected=True) from None
        with progress.step("fetching the scripts upstream's local hooks run, and what they read"):
            scripts = needs.scripts(repo, tip, plan.scripts)
        unfetched: dict[str, str] = {}
        if plan.wanted:
            with progress.step(f"fetching {', '.join(sorted(plan.wanted))} into the wheelhouse (pip, your index)"):
                unfetched = wheels_mod.fetch(Path(house), sorted(plan.wanted))
        if scripts.unavailable or plan.wanted:
            plan = config_mod.plan(text.decode(), wheelhouse=house, exists=exists, unavailable=scripts.unavailable,
                                   unfetched=unfetched)
        redirects = {}
        with progress.step("preparing the hook repositories (local mirrors of the pinned tools)"):
            for url, (tag, pin) in plan.redirects.items():
                redirects[url] = mirrors.ensure(cache, url, tag, pin)
        fingerprint = mirrors.fingerprint(plan.redirects)
        environ = run_mod.env(cache / "pre-commit", house, mirrors.git_env(redirects), run_mod.uv_config(cache, Path(house)))
        (cache / "work").mkdir(exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"{ps.target}-", dir=cache / "work"))
        try:
            _workspace(repo, tip, work, text, plan, [p for p in SETTINGS if p in here] + sorted(scripts.files), files)
            cfg = str(work / RUN_CONFIG)
            originals = {f: (work / f).read_bytes() for f in files}
            memo = cache / "verdicts" / f"{_inputs_key(work, files, Path(house), fingerprint)}.json"
            runs = _recall(memo)
            result.memo = runs is not None
            if runs is None:
                with progress.step(f"running upstream's pre-commit hooks on {len(files)} file(s)"):
                    runs = run_mod.pre_commit(work, cfg, files, environ)
                if not any(r.status == "failed" for r in runs):  # a run pre-commit failed never gets here
                    memo.parent.mkdir(parents=True, exist_ok=True)
                    atomic.write_text(memo, json.dumps([asdict(r) for r in runs]))
            _summarise(result, runs, plan)
            if result.failures:
                result.failures, result.fixed = _attribute(work, cfg, files, runs, originals, environ)
            if fix and result.fixed:
                result.fixed_tip = _rewrite(repo, base, ps, {f: c.encode() for f, c in result.fixed.items()})
        finally:
            shutil.rmtree(work, ignore_errors=True)
    except run_mod.Failed as exc:
        # Fail closed: no verdict, nothing cached, and the report says so (never a stale pass).
        result.error = (f"pre-commit rejects {where}: {exc.reason}" if exc.rejected
                        else f"pre-commit could not run the hooks of {where}: {exc.reason}")
        _write(result, report)
        raise NotLinted(result, ExitCode.USAGE if exc.rejected else ExitCode.TOOL_MISSING) from None
    return _write(result, report)


def judged(ps: PatchSet, **kw) -> LintResult:
    """lint() for make pr: a run where pre-commit itself failed is a result too (its error keeps
    the coding-guidelines item open, saying why), never an end of make pr."""
    try:
        return lint(ps, **kw)
    except NotLinted as exc:
        return exc.result


class NotLinted(UserError):
    """pre-commit itself failed: no hook judged the series. The report says why (make pr reads it)."""

    def __init__(self, result: LintResult, code: ExitCode) -> None:
        super().__init__(result.error, code)
        self.result = result


def _validate(cache: Path, text: bytes) -> None:
    """pre-commit validate-config on upstream's config (a pass is kept: the same text and
    pre-commit pass again; a rejection always runs again)."""
    key = hashlib.sha256(text + run_mod.engine().encode()).hexdigest()[:32]
    passed = cache / "validated" / key
    if passed.exists():
        return
    where = Path(tempfile.mkdtemp(prefix="validate-", dir=cache))
    try:
        (where / CONFIG).write_bytes(text)
        run_mod.validate(where / CONFIG)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    passed.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(passed, "")


def _inputs_key(work: Path, files: list[str], house: Path, fingerprint: str) -> str:
    """Everything a hook's verdict depends on: the runnable config, upstream's settings and
    scripts, the series' files (paths, bytes, modes), the mirrors and the tools in the wheelhouse."""
    wheels = sorted(p.name for p in house.glob("*.whl"))
    h = hashlib.sha256(f"{fingerprint}\0{sorted(files)}\0{wheels}\0{run_mod.engine()}\0".encode())
    for p in sorted(q for q in work.rglob("*") if q.is_file() and ".git" not in q.relative_to(work).parts[:1]):
        h.update(f"{p.relative_to(work).as_posix()}\0{p.stat().st_mode & 0o111}\0".encode() + p.read_bytes() + b"\0")
    h.update((work / RUN_CONFIG).read_bytes())
    return h.hexdigest()[:32]


def _recall(memo: Path) -> list[run_mod.HookRun] | None:
    """A passing verdict for exactly these inputs, from an earlier run (failures always run again)."""
    try:
        return [run_mod.HookRun(**r) for r in json.loads(memo.read_text())]
    except (OSError, ValueError, TypeError):
        return None


def _workspace(repo: Repo, tip: str, work: Path, text: bytes, plan: config_mod.Plan, upstreams: list[str],
               files: list[str]) -> None:
    """The files the hooks see: upstream's config, settings and scripts committed, the series'
    files staged as added."""
    repo_ws = init(work)
    (work / CONFIG).write_bytes(text)
    for path in sorted(set(upstreams)):
        _put(repo, tip, work, path)
    (work / RUN_CONFIG).write_text(config_mod.dump(plan.config))
    repo_ws.add_all_and_commit("upstream's settings at the ref", WORKSPACE_ID, series.THROWAWAY_DATE)
    for path in files:
        _put(repo, tip, work, path)
    repo_ws.stage_all()
    repo_ws.close()


def _put(repo: Repo, tip: str, work: Path, path: str) -> None:
    data = repo.show_file(tip, path)
    if data is None:
        return
    dest = work / path
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    if any(m == "100755" for m, _t, _n in repo.ls_tree(tip, path, recursive=False)):
        dest.chmod(0o755)


def _attribute(work: Path, cfg: str, files: list[str], runs: list[run_mod.HookRun], originals: dict[str, bytes],
               environ: dict[str, str]) -> tuple[list[Failure], dict[str, str]]:
    """Which file each failing hook wants changed, and the formatters' version of each file.

    From the one run when that says it unambiguously (a single file rewritten, or a checker
    naming the file in its output); else each file is run on its own. The formatters' version
    is run once more to its fixpoint (isort and yapf may each move what the other left).
    """
    changed = [f for f in files if (work / f).read_bytes() != originals[f]]
    failing = [r for r in runs if r.status == "failed"]
    failures: list[Failure] = []
    alone: set[str] = set()
    for r in failing:
        if r.modified and len(changed) == 1:
            named = changed
        else:
            named = [f for f in files if f in r.output]
        if named and (not r.modified or set(named) <= set(changed)):
            failures += [Failure(f, r.id, run_mod.wants(r, work)) for f in named]
        else:
            alone |= set(files)
    fixed = {f: _fixpoint(work, cfg, f, environ) for f in changed if f not in alone}
    _restore(work, originals)
    for f in sorted(alone):
        with progress.step(f"finding what the failing hooks want of {f}"):
            per = run_mod.pre_commit(work, cfg, [f], environ)
            failures += [Failure(f, r.id, run_mod.wants(r, work)) for r in per if r.status == "failed"]
            if any(r.status == "failed" and r.modified for r in per):
                fixed[f] = _fixpoint(work, cfg, f, environ)
        _restore(work, originals)
    failures.sort(key=lambda x: files.index(x.file))
    return failures, fixed


def _restore(work: Path, originals: dict[str, bytes]) -> None:
    for f, data in originals.items():
        (work / f).write_bytes(data)


def _fixpoint(work: Path, cfg: str, f: str, environ: dict[str, str]) -> str:
    """The file as the formatters leave it, run again until they change nothing (isort then yapf)."""
    for _ in range(3):
        before = (work / f).read_bytes()
        run_mod.pre_commit(work, cfg, [f], environ)
        if (work / f).read_bytes() == before:
            break
    return (work / f).read_bytes().decode("utf-8", "surrogateescape")


def _summarise(result: LintResult, runs: list[run_mod.HookRun], plan: config_mod.Plan) -> None:
    result.seconds = {r.id: float(d.split(": ", 1)[1].rstrip("s")) for r in runs for d in r.details
                      if d.startswith("duration: ") and d.split(": ", 1)[1].rstrip("s").replace(".", "", 1).isdigit()}
    result.ran = [r.id for r in runs if r.status in ("passed", "failed")]
    result.not_run = {r.id: plan.not_run.get(r.id, "cannot run here") for r in runs if r.status == "not_run"}
    result.tool_missing = sorted(h for h in result.not_run if h in plan.tool_missing)
    result.tools = {h: plan.pins[h] for h in result.ran if h in plan.pins}
    result.failures = [Failure("", r.id, "") for r in runs if r.status == "failed"]


def _rewrite(repo: Repo, base: Sha, ps: PatchSet, fixed: dict[str, bytes]) -> str:
    """The series again, each commit carrying the formatters' version of the files it changes."""
    for f in fixed:
        touching = [p.name for p in ps.patches if f in p.paths]
        if len(touching) > 1:
            raise BadInput(f"FIX cannot rewrite {f}: patches {' and '.join(touching)} both change it; "
                           "format it by hand in the last of them")

    def mend(patch, tb: series.TreeBuilder) -> None:
        for f, data in fixed.items():
            if f in patch.paths:
                tb.write_file(f, data)

    res = series.apply_series(repo, base, ps.patches, committer_date=series.THROWAWAY_DATE, after_each=mend)
    res.raise_on_conflict(f" to {base[:12]}")
    return res.tip


def as_dict(result: LintResult) -> dict:
    """The result as its JSON report has it (make pr reads this, never the classes)."""
    data = asdict(result)
    data.pop("fixed")
    data["ok"] = result.ok
    return data


def _write(result: LintResult, report: Path | None) -> LintResult:
    if report is None:
        return result
    report.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(report, json.dumps(as_dict(result), indent=2, sort_keys=True) + "\n")
    return result

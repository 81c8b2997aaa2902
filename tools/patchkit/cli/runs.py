"""What each command runs: (project root, parsed arguments) -> its result.

Each imports its own modules when it runs, so `patchkit targets` or a bad command line does
not pay for GitPython, jinja2 and every other command's modules (a third of a second per
process, #19), and a git that GitPython cannot start only troubles the commands that use it.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .. import lock
from ..text.table import as_json
from ..text.voice import Voice
from .table import voice

if TYPE_CHECKING:
    from ..git import Repo


def _src(root: Path, ps, args: argparse.Namespace) -> Path:
    return args.src if args.src is not None else root / "build" / f"trtllm-{ps.target}"


def _set(root: Path, args: argparse.Namespace):
    from .. import patchset
    return patchset.load(root, args.target)


def _targets(root, args):
    from .. import patchset
    return [patchset.load(root, t) for t in patchset.targets(root)]


def _apply(root, args):
    from .. import apply as apply_mod
    ps = _set(root, args)
    return apply_mod.apply(ps, src=_src(root, ps, args), url=args.url, threeway=args.threeway, fetch=not args.no_fetch)


def _unapply(root, args):
    from .. import apply as apply_mod
    ps = _set(root, args)
    return apply_mod.unapply(ps, src=_src(root, ps, args))


def _check(root, args):
    from .. import check as check_mod, patchset
    return check_mod.check([patchset.load(root, t) for t in args.target or patchset.targets(root)], src=args.src,
                           fetch=not args.no_fetch)


def _waivers(root, args):
    from .. import fresh
    from ..upstream import base_of, obtain
    from ..waives import report as waiver_report
    ps = _set(root, args)
    repo, _ = obtain(ps, _src(root, ps, args), args.url)
    seen = fresh.view(repo, ps, fetch=not args.no_fetch, url=args.url)  # upstream's waives.txt as it is now
    ref, _sha = base_of(repo, ps)
    return dataclasses.replace(waiver_report.report(ps, repo, ref), view=seen)


def _delta(root, args):
    from ..delta import command as delta_cmd
    from ..upstream import obtain
    ps = _set(root, args)
    repo, _ = obtain(ps, _src(root, ps, args), args.url)
    report = args.report or root / "build" / "delta" / f"{ps.target}.json"
    return delta_cmd.delta(ps, repo=repo, mode=args.mode or delta_cmd.default_mode(), report=report.resolve(),
                           base_image=args.base, builder_name=args.builder, fix_id=args.fix_id, fetch=not args.no_fetch,
                           wheel=_wheel_settings(root, args, args.wheel_out, args.wheel_cache))


def _lint(root, args):
    from .. import fresh
    from ..lint import command as lint_cmd
    from ..pr import export as export_mod
    from ..upstream import obtain
    ps = _set(root, args)
    repo, _ = obtain(ps, _src(root, ps, args), args.url)
    seen = fresh.view(repo, ps, fetch=not args.no_fetch, url=args.url)  # upstream's hooks as they are now
    report = (args.report or root / "build" / "lint" / f"{ps.target}.json").resolve()
    cache = args.cache.resolve() if args.cache else lint_cmd.default_cache(root)
    res = lint_cmd.lint(ps, repo=repo, report=report, cache=cache, fix=args.fix)
    res.view = seen
    if not (args.fix and res.fixed_tip):
        return res
    # FIX: the rewritten series goes back into patches/<target> the way make export writes it,
    # then the mended set is linted again: the verdict is the new series'.
    ref = f"refs/patchkit/lint-fix/{ps.target}"
    repo.set_ref(ref, res.fixed_tip)
    try:
        exported = export_mod.export(ps, repo, ref)
    finally:
        repo.delete_ref(ref, res.fixed_tip)
    again = lint_cmd.lint(_set(root, args), repo=repo, report=report, cache=cache, fix=False)
    again.fix_requested, again.rewritten, again.view = True, exported.changed, seen
    return again


def _locked(repo: Repo, command: str) -> contextlib.AbstractContextManager:
    """The checkout's lock, held while a command writes to it (see lock.py)."""
    return lock.hold(repo.common_path(lock.NAME), command, str(repo.path))


def _pr(root, args):
    from ..git import Repo
    from ..pr import command as pr_cmd
    from ..upstream import obtain
    ps = _set(root, args)
    src = _src(root, ps, args)
    Repo.open(src).close()  # pr never clones: the checkout must be there
    with contextlib.ExitStack() as held:
        # A partial clone apply made for another set fetches this set's ref, as every command does.
        repo, _ = obtain(ps, src, None, hold=held, command=f"pr {ps.target}")
        return pr_cmd.run(root, ps, repo, fix_id=args.fix_id, report=args.report, out=args.out, signoff=args.signoff,
                          fork=args.fork, author=args.author, notes=args.notes)


def _dco(root, args):
    from .. import patchset
    from ..git import Repo
    from ..pr import dco
    repo = Repo.open(args.src)
    # Upstream's own commits end at the targets' refs: never checked, never rewritten (#24 item 5).
    upstream = [] if args.base else dco.upstream_refs(repo, [patchset.load(root, t).upstream.ref
                                                            for t in patchset.targets(root)])
    if args.fix:
        with _locked(repo, f"dco --fix {args.branch}"):
            return dco.fix(repo, args.branch, dco.signoff_identity(repo, args.signoff), args.base, upstream)
    return dco.check(repo, args.branch, args.base, upstream)


def _export(check_only: bool):
    def run(root, args):
        from .. import amsession, patchset
        from ..git import Repo
        from ..pr import export as export_mod
        ps = patchset.load(root, args.target, filing=False)  # export files each commit by its Origin anew
        repo = Repo.open(_src(root, ps, args))
        # Half a series while the git am session apply left is under way (THREEWAY=keep).
        amsession.refuse_in_progress(repo, ps.target, args.branch or ps.branch, "check-export" if check_only else "export")
        with contextlib.nullcontext() if check_only else _locked(repo, f"export {ps.target}"):
            return export_mod.export(ps, repo, args.branch or ps.branch, check_only=check_only,
                                     waiver_out=root / "build" / "export" / ps.target)
    return run


def _container(root, args):
    from ..container import build as cbuild
    from ..upstream import obtain
    ps = _set(root, args)
    with contextlib.ExitStack() as held:
        repo, _ = obtain(ps, _src(root, ps, args), args.url, hold=held, command=f"container {ps.target}")
        return cbuild.build(root, ps, repo, context_dir=(args.context or root / "build" / "container" / ps.target).resolve(),
                            base=args.base, builder_name=args.builder, held=held,
                            wheel=_wheel_settings(root, args, args.wheel_out, args.wheel_cache))


def _wheel(root, args):
    from ..wheel import command as wheel_cmd
    ps = _set(root, args)
    return wheel_cmd.wheel(ps, src=_src(root, ps, args), url=args.url,
                           settings=_wheel_settings(root, args, args.out, args.cache))


def _wheel_settings(root, args, out=None, cache=None):
    """make wheel's settings as this command was given them (make container and make delta take them too)."""
    from ..wheel import command as wheel_cmd
    return wheel_cmd.Settings((out or root / "build" / "wheel").resolve(), (cache or root / "build" / "wheel-cache").resolve(),
                              args.wheel_build, args.cuda_archs, args.jobs, args.builder, args.devel)


def _wheel_text(res) -> str:
    from ..wheel import command as wheel_cmd
    return wheel_cmd.describe(res)


def _push(root, args):
    from ..container import build as cbuild
    return cbuild.push(_set(root, args), base=args.base, registry=args.registry, builder_name=args.builder,
                       tls_verify=args.tls_verify == "true")


def _radar(root, args):
    from ..radar import command as radar_cmd, report
    from ..upstream import obtain
    ps = _set(root, args)
    with contextlib.ExitStack() as held:
        repo, _ = obtain(ps, _src(root, ps, args), args.url, hold=held, command=f"radar {ps.target}")
        res = radar_cmd.radar(ps, repo, since=args.since, until=args.until, fix_id=args.fix_id, fetch=not args.no_fetch)
    out = (args.out or root / "build" / "radar").resolve()
    res.files = radar_cmd.report_paths(res.target, out)
    radar_cmd.write(res, out, as_json(res), report.markdown(res, [voice(args).hint(h) for h in res.hints]))
    return res


def _radar_text(res) -> str:
    from ..radar import report
    return report.text(res)


def _workflow(root, args):
    from ..ci import workflow as ci_workflow
    gpu, build = (ci_workflow.runner_labels(value, setting) if value is not None else None  # None: keep the file's
                  for value, setting in ((args.gpu_runner, "gpu_runner"), (args.build_runner, "build_runner")))
    return ci_workflow.write(root, gpu, check=args.check, build_runner=build)


def _summary(root, args):
    from ..ci import summary as ci_summary
    step = os.environ.get("GITHUB_STEP_SUMMARY")  # GitHub Actions: the job's Markdown page
    return ci_summary.summarize(root, ci_summary.folders(args.reports), (args.out or root / "build" / "summary").resolve(),
                                Path(step) if step else None)


def _bench(root, args):
    from .. import bench
    work = args.workdir.resolve()
    return bench.run(root, work, bench.Options(files=args.files, commits=args.commits, only=tuple(args.only or ())))


def _bench_text(res) -> str:
    from .. import bench
    return bench.render(res)


def _miniature(root, args):
    from .. import miniature
    return miniature.build(root, args.dest, args.variant)


def _miniature_text(res) -> str:
    from .. import miniature
    return miniature.describe(res)


def _demo(root, args):
    from .. import atomic, demo, demo_text
    res = demo.run(root, args.workdir.resolve(), args.signoff)
    said = voice(args)  # each step as the user runs it by hand, in their vocabulary, with the demo's paths
    for step in [*res.steps, *res.next]:
        step.said = demo_said(said, step)
    res.full = str(Path(res.workdir) / "demo.txt")
    atomic.write_text(Path(res.full), demo_text.demo_full(res) + "\n")
    return res


def demo_said(said: Voice, step) -> str:
    """A step of the demo (or one it suggests next) as the user runs it by hand: in their
    vocabulary, on the project whose patch sets it used."""
    return _on_root(said, step.root).command_line(step.command, step.settings)


def _on_root(said: Voice, root: str) -> Voice:
    """The voice of a command run on another project's patch sets (the CLI's --root)."""
    return dataclasses.replace(said, prefix=("--root", root)) if root else said


def _backport(root, args):
    from ..backport import command as backport_cmd
    ps = _set(root, args)
    return backport_cmd.backport(ps, root=root, src=_src(root, ps, args), url=args.url, pr=args.pr,
                                 commit=args.commit, before=args.before, after=args.after, fetch=not args.no_fetch)


def _new_fix(root, args):
    from ..edit import newfix
    ps = _set(root, args)
    return newfix.new_fix(ps, root=root, src=_src(root, ps, args), fix_id=args.fix_id, bug=args.bug,
                          title=args.title, commits=args.commit, branch=args.branch, fetch=not args.no_fetch)


def _reorder(verb: str):
    def run(root, args):
        from ..edit import reorder
        ps = _set(root, args)
        where = {"before": args.before, "after": args.after} if verb == "move" else {}
        return getattr(reorder, verb)(ps, root=root, src=_src(root, ps, args), url=args.url, fix_id=args.fix_id,
                                      fetch=not args.no_fetch, **where)
    return run


def _described(module: str):
    """How a command's result reads: describe() of its module (backport.command, edit.newfix,
    ...), imported when the result is printed."""
    def text(res) -> str:
        return importlib.import_module(f"patchkit.{module}").describe(res)
    return text


def _new_set(root, args):
    from .. import patchset
    from ..edit import newset
    return newset.new_set(patchset.load(root, getattr(args, "from")), root=root, ref=args.ref, name=args.name, src=args.src,
                          url=args.url, fetch=not args.no_fetch)

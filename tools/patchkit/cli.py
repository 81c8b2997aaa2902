"""The command line: argparse, error tiers, exit codes, rendering. Nothing else lives here."""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import traceback
from pathlib import Path

from . import __version__, progress, apply as apply_mod, bench, check as check_mod, demo, miniature, patchset, render
from .container import build as cbuild
from .delta import command as delta_cmd
from .git import Repo
from .pr import branch as pr_branch, dco, export as export_mod
from .upstream import base_of, obtain
from .waives import report as waiver_report
from .errors import ExitCode, UserError

log = logging.getLogger("patchkit")


def find_root(start: Path | None = None) -> Path:
    """The project directory holding patches/: $PATCHKIT_ROOT, or up from cwd, or this package's repo."""
    env = os.environ.get("PATCHKIT_ROOT")
    if env:
        return Path(env)
    for d in [(start or Path.cwd()).resolve(), *(start or Path.cwd()).resolve().parents]:
        if (d / "patches").is_dir() and (d / "tools" / "patchkit").is_dir():
            return d
    return Path(__file__).resolve().parents[2]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="patchkit", description="Carry TensorRT-LLM fixes as versioned patch sets.")
    p.add_argument("--version", action="version", version=f"patchkit {__version__}")
    p.add_argument("--root", type=Path, help="project directory holding patches/ and waivers/")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr (shown only on a terminal)")
    sub = p.add_subparsers(dest="command", required=True)

    def target_cmd(name: str, help: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help)
        sp.add_argument("--target", required=True, help="patch set name: a directory under patches/")
        sp.add_argument("--src", type=Path, help="the TensorRT-LLM checkout (default: build/trtllm-<target>, "
                        "as for make)")
        return sp

    sp = target_cmd("apply", "apply a target's series as commits on its branch")
    sp.add_argument("--url", help="clone from here when --src does not exist (default: the set's upstream)")
    sp.add_argument("--threeway", action="store_true", help="merge drifted patches 3-way")
    target_cmd("unapply", "return the checkout to where it was before apply")
    sp = target_cmd("pr", "a signed-off PR branch, title and body from the last delta report")
    sp.add_argument("--report", type=Path, help="the delta report (default build/delta/<target>.json)")
    sp.add_argument("--signoff", help="'Name <email>' (default: git config user.name/user.email)")
    sp.add_argument("--out", type=Path, help="where to write title, body and patches (default build/pr/<target>)")
    sp = sub.add_parser("dco", help="check (or fix) DCO sign-offs on a branch")
    sp.add_argument("--src", type=Path, required=True)
    sp.add_argument("--branch", required=True)
    sp.add_argument("--base", help="check base..branch (default: commits on no remote branch or tag)")
    sp.add_argument("--fix", action="store_true", help="add missing sign-offs, keeping the old tip on a backup ref")
    sp.add_argument("--signoff", help="'Name <email>' for --fix (default: git config)")
    for name, help in (("export", "write a branch back into the target's patch set"),
                       ("check-export", "fail when patches/<target> differs from the branch")):
        sp = target_cmd(name, help)
        sp.add_argument("--branch", help="default: the set's branch (overlay/<target>)")
    sp = target_cmd("container", "build the patched image of the target's container base")
    sp.add_argument("--url", help="clone from here when --src does not exist")
    sp.add_argument("--base", help="base image (default: the set's container.base)")
    sp.add_argument("--builder", help="docker, podman or buildah (default: the first that works)")
    sp.add_argument("--context", type=Path, help="where to render the build context (default build/container/<target>)")
    sp = sub.add_parser("container-push", help="push the target's patched image")
    sp.add_argument("--target", required=True)
    sp.add_argument("--registry", required=True, help="host/repo to push to")
    sp.add_argument("--base", help="base image the image was built from (default: the set's)")
    sp.add_argument("--builder")
    sp.add_argument("--tls-verify", choices=("true", "false"), default="true")
    sp = target_cmd("waivers", "which waiver lines skip the set's tests, now and after its edit")
    sp.add_argument("--url", help="clone from here when --src does not exist")
    sp = target_cmd("delta", "run the set's tests unpatched and patched, and grade the delta")
    sp.add_argument("--url", help="clone from here when --src does not exist")
    sp.add_argument("--mode", choices=("source", "container"), help="default: source unless tensorrt_llm is importable")
    sp.add_argument("--report", type=Path, help="where to write the JSON report")
    sp.add_argument("--base", help="MODE=container: the unpatched image (default: the set's container.base)")
    sp.add_argument("--builder", help="MODE=container: docker, podman or buildah (default: the first that works)")
    sp = sub.add_parser("check", help="report how every target applies, changing nothing")
    sp.add_argument("--src", type=Path, required=True)
    sp.add_argument("--target", action="append", help="only these targets (default: all)")
    sp = sub.add_parser("miniature", help="build the miniature upstream repository")
    sp.add_argument("--dest", type=Path, required=True)
    sp.add_argument("--variant", help="add a variant's commits on main (e.g. fixed-upstream: upstream's own fix)")
    sub.add_parser("targets", help="list the patch sets")
    sp = sub.add_parser("bench", help="measure the cold start by clone method, the delta, the image build")
    sp.add_argument("--workdir", type=Path, required=True)
    sp.add_argument("--files", type=int, help="files of the generated upstream (default 15,000)")
    sp.add_argument("--commits", type=int, help="commits of the generated upstream (default 5,000)")
    sp = sub.add_parser("demo", help="run the main job on the miniature upstream")
    sp.add_argument("--workdir", type=Path, required=True)
    sp.add_argument("--signoff", help="'Name <email>' for the demo's PR branch (default: git config)")
    return p


def voice(parser: argparse.ArgumentParser, args: argparse.Namespace) -> render.Voice:
    """How this invocation came (make or a shell) and with which values: hints are said that way."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    options = {name: {a.dest: a.option_strings[-1] for a in sp._actions if a.option_strings and a.dest != "help"}
               for name, sp in sub.choices.items()}
    given = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
             if k in options.get(args.command, {})}
    return render.Voice(via_make=os.environ.get("PATCHKIT_VIA_MAKE") == "1", command=args.command, given=given,
                        options=options, prefix=("--root", str(args.root)) if args.root else ())


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    progress.set_quiet(args.quiet)
    said = voice(parser, args)
    try:
        out = _dispatch(args)
        text, code, res = (out, ExitCode.OK, None) if isinstance(out, str) else (tuple(out) + (None,))[:3]
        if text and not args.json:
            text = "\n".join([text, *(said.hint(h) for h in getattr(res, "hints", []))])
        if text:
            print(text)
        return code
    except UserError as exc:
        if exc.details:
            print(exc.details)
        print(f"patchkit: error: {said.error(exc)}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("patchkit: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception:
        fd, path = tempfile.mkstemp(prefix="patchkit-crash-", suffix=".log")
        with os.fdopen(fd, "w") as fh:
            traceback.print_exc(file=fh)
        print(f"patchkit: internal error; the traceback is in {path}", file=sys.stderr)
        return ExitCode.INTERNAL


def _verdict(text: str, ok: bool, res: object = None) -> tuple[str, ExitCode, object]:
    """A command that ran and shows its result, and whose verdict may still be a failure."""
    return text, ExitCode.OK if ok else ExitCode.MISMATCH, res


def _dispatch(args: argparse.Namespace) -> str | tuple[str, ExitCode, object]:
    root = (args.root or find_root()).resolve()
    if args.command == "targets":
        sets = [patchset.load(root, t) for t in patchset.targets(root)]
        return render.as_json(sets) if args.json else render.table(
            [(s.target, s.upstream.ref, len(s.patches), s.branch) for s in sets], ("target", "ref", "patches", "branch"))
    if args.command == "miniature":
        res = miniature.build(root, args.dest, args.variant)
        return render.as_json(res) if args.json else (f"miniature upstream at {res.path} (tag {res.tag}, branch main"
                                                      + (f", variant {args.variant})" if args.variant else ")"))
    if args.command == "bench":
        res = bench.clone_bench(root, args.workdir.resolve(), args.files, args.commits)
        dres = bench.delta_bench(root, args.workdir.resolve())
        cres = bench.container_bench(root, args.workdir.resolve())
        wres = bench.waiver_bench(root, args.workdir.resolve())
        return render.as_json([res, dres, cres, wres]) if args.json else "\n".join(
            [bench.render_bench(res), bench.render_delta_bench(dres), bench.render_container_bench(cres),
             bench.render_waiver_bench(wres)])
    if args.command == "demo":
        res = demo.run(root, args.workdir.resolve(), args.signoff)
        return _verdict(render.as_json(res) if args.json else demo.render_demo(res), res.ok, None)
    if args.command == "check":
        names = args.target or patchset.targets(root)
        res = check_mod.check([patchset.load(root, t) for t in names], src=args.src)
        # CI gates on this: any patch that conflicts makes the run fail with the conflict code.
        code = ExitCode.CONFLICT if any(r.conflicts for r in res) else ExitCode.OK
        return render.as_json(res) if args.json else render.check_results(res), code
    if args.command == "dco":
        repo = Repo.open(args.src)
        res = (dco.fix(repo, args.branch, dco.signoff_identity(repo, args.signoff), args.base) if args.fix
               else dco.check(repo, args.branch, args.base))
        return _verdict(render.as_json(res) if args.json else render.dco_result(res), res.ok, res)
    if args.command == "container-push":
        cps = patchset.load(root, args.target)
        dest = cbuild.push(cps, base=args.base, registry=args.registry,
                           builder_name=args.builder, tls_verify=args.tls_verify == "true")
        return f"pushed {dest}"
    ps = patchset.load(root, args.target)
    if getattr(args, "src", "") is None:
        args.src = root / "build" / f"trtllm-{ps.target}"
    if args.command == "apply":
        res = apply_mod.apply(ps, src=args.src, url=args.url, threeway=args.threeway)
        return render.as_json(res) if args.json else render.apply_result(res)
    if args.command == "delta":
        repo, _ = obtain(ps, args.src, args.url)
        report = args.report or root / "build" / "delta" / f"{ps.target}.json"
        mode = args.mode or delta_cmd.default_mode()
        res = delta_cmd.delta(ps, repo=repo, mode=mode, report=report.resolve(), base_image=args.base,
                              builder_name=args.builder)
        return _verdict(render.as_json(res) if args.json else delta_cmd.render(res), res.ok, res)
    if args.command == "pr":
        res = pr_branch.pr(ps, repo=Repo.open(args.src),
                           report=(args.report or root / "build" / "delta" / f"{ps.target}.json").resolve(),
                           out_dir=(args.out or root / "build" / "pr" / ps.target).resolve(), signoff=args.signoff)
        return render.as_json(res) if args.json else (
            f"branch {res.branch} {res.tip[:12]} ({len(res.messages)} commits, signed off); written to {res.out_dir}\n"
            f"body: {res.template}, checked against upstream's title and checklist rules\n"
            + "".join(f"note: {n}\n" for n in res.notes) + f"\n{res.title}\n\n{res.body}")
    if args.command in ("export", "check-export"):
        res = export_mod.export(ps, Repo.open(args.src), args.branch or ps.branch, check_only=args.command == "check-export",
                                waiver_out=root / "build" / "export" / ps.target)
        return _verdict(render.as_json(res) if args.json else render.export_result(res),
                        res.up_to_date or args.command == "export", res)
    if args.command == "container":
        repo, _ = obtain(ps, args.src, args.url)
        res = cbuild.build(root, ps, repo, context_dir=(args.context or root / "build" / "container" / ps.target).resolve(),
                           base=args.base, builder_name=args.builder)
        return render.as_json(res) if args.json else (
            f"{res.image}  ({res.builder}, image {res.image_id[:19]})\nbase {res.base} {res.labels['org.opencontainers.image.base.digest']}\n"
            + "\n".join(f"  overlaid {f.path}" for f in res.files) + f"\ncontext: {res.context}")
    if args.command == "waivers":
        repo, _ = obtain(ps, args.src, args.url)
        ref, _sha = base_of(repo, ps)
        res = waiver_report.report(ps, repo, ref)
        return render.as_json(res) if args.json else waiver_report.render(res)
    if args.command == "unapply":
        res = apply_mod.unapply(ps, src=args.src)
        return render.as_json(res) if args.json else f"{res.target}: {res.checkout} is back on {res.restored}; branch {res.branch} removed"
    raise AssertionError(args.command)

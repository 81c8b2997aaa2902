"""The command line: the commands as a table, argparse, error tiers and exit codes.

Each subcommand is one entry of COMMANDS: its settings (flag, make variable), the function it
runs, how its result reads (render.py) and its verdict. Only this module knows argparse, and
only this module exits.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

# Only what every command needs is imported here: the ground floor and the rendering. Each
# command imports its own modules when it runs, so `patchkit targets` or a bad command line
# does not pay for GitPython, jinja2 and every other command's modules (a third of a second
# per process, #19), and a git that GitPython cannot start only troubles the commands that use it.
from . import __version__, lock, progress, render, scratch
from .delta import MODES as DELTA_MODES
from .errors import CommandError, ExitCode, UserError, crashed, is_git_error

if TYPE_CHECKING:
    from .git import Repo

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


@dataclass(frozen=True)
class Arg:
    """One setting of a command: its flag, the make variable that sets it, argparse's options."""

    flag: str
    make: str | None = None  # None: a CLI-only option
    help: str = ""
    options: dict = field(default_factory=dict)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


def arg(flag: str, make: str | None = None, help: str = "", **options) -> Arg:
    return Arg(flag, make, help, options)


TARGET = arg("--target", "TRTLLM", "patch set name: a directory under patches/", required=True)
SRC = arg("--src", "TRTLLM_SRC", "the TensorRT-LLM checkout (default: build/trtllm-<target>, as for make)", type=Path)
SRC_REQUIRED = arg("--src", "TRTLLM_SRC", "the TensorRT-LLM checkout", type=Path, required=True)
URL = arg("--url", "TRTLLM_URL", "clone from here when --src does not exist (default: the set's upstream)")
REPORT = arg("--report", "REPORT", "the delta report (default: build/delta/<target>.json)", type=Path)
SIGNOFF = arg("--signoff", "SIGNOFF", "'Name <email>' (default: git config user.name and user.email)")
BRANCH = arg("--branch", "BRANCH", "default: the set's branch (overlay/<target>)")
BASE = arg("--base", "BASE", "base image (default: the set's container.base)")
BUILDER = arg("--builder", "BUILDER", "docker, podman or buildah (default: the first that works)")
WORKDIR = arg("--workdir", None, "where to work (make: $(BUILD)/<target>)", type=Path, required=True)


@dataclass(frozen=True)
class Command:
    """One subcommand: its settings, what it runs, how its result reads, and its verdict."""

    name: str
    help: str
    args: tuple[Arg, ...]
    run: Callable[[Path, argparse.Namespace], Any]  # (project root, arguments) -> result
    text: Callable[[Any], str]  # the result for people; --json prints render.as_json(result)
    example: str  # one make line and the same as a CLI line, ending every --help
    verdict: Callable[[Any], ExitCode] = lambda res: ExitCode.OK


def _mismatch_unless(ok: bool) -> ExitCode:
    """A command that ran and shows its result, and whose verdict may still be a failure."""
    return ExitCode.OK if ok else ExitCode.MISMATCH


def _src(root: Path, ps, args: argparse.Namespace) -> Path:
    return args.src if args.src is not None else root / "build" / f"trtllm-{ps.target}"


def _set(root: Path, args: argparse.Namespace):
    from . import patchset
    return patchset.load(root, args.target)


def _targets(root, args):
    from . import patchset
    return [patchset.load(root, t) for t in patchset.targets(root)]


def _apply(root, args):
    from . import apply as apply_mod
    ps = _set(root, args)
    return apply_mod.apply(ps, src=_src(root, ps, args), url=args.url, threeway=args.threeway)


def _unapply(root, args):
    from . import apply as apply_mod
    ps = _set(root, args)
    return apply_mod.unapply(ps, src=_src(root, ps, args))


def _check(root, args):
    from . import check as check_mod, patchset
    return check_mod.check([patchset.load(root, t) for t in args.target or patchset.targets(root)], src=args.src)


def _waivers(root, args):
    from .upstream import base_of, obtain
    from .waives import report as waiver_report
    ps = _set(root, args)
    repo, _ = obtain(ps, _src(root, ps, args), args.url)
    ref, _sha = base_of(repo, ps)
    return waiver_report.report(ps, repo, ref)


def _delta(root, args):
    from .delta import command as delta_cmd
    from .upstream import obtain
    ps = _set(root, args)
    repo, _ = obtain(ps, _src(root, ps, args), args.url)
    report = args.report or root / "build" / "delta" / f"{ps.target}.json"
    return delta_cmd.delta(ps, repo=repo, mode=args.mode or delta_cmd.default_mode(), report=report.resolve(),
                           base_image=args.base, builder_name=args.builder)


def _lint(root, args):
    from .lint import command as lint_cmd
    from .pr import export as export_mod
    from .upstream import obtain
    ps = _set(root, args)
    repo, _ = obtain(ps, _src(root, ps, args), args.url)
    report = (args.report or root / "build" / "lint" / f"{ps.target}.json").resolve()
    cache = args.cache.resolve() if args.cache else lint_cmd.default_cache(root)
    res = lint_cmd.lint(ps, repo=repo, report=report, cache=cache, fix=args.fix)
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
    again.fix_requested, again.rewritten = True, exported.changed
    return again


def _locked(repo: Repo, command: str) -> contextlib.AbstractContextManager:
    """The checkout's lock, held while a command writes to it (see lock.py)."""
    return lock.hold(repo.git_path(lock.NAME), command, str(repo.path))


def _pr(root, args):
    from .git import Repo
    from .lint import command as lint_cmd
    from .pr import branch as pr_branch
    ps = _set(root, args)
    repo = Repo.open(_src(root, ps, args))
    with _locked(repo, f"pr {ps.target}"):
        # The series' files through upstream's own pre-commit hooks first: "coding guidelines"
        # is ticked from this run, for this series at this commit, or not at all.
        # Its report goes with the PR's title and body (<out>/lint.json), not over make lint's own.
        linted = lint_cmd.lint(ps, repo=repo, report=None, cache=lint_cmd.default_cache(root))
        return pr_branch.pr(ps, repo=repo,
                            report=(args.report or root / "build" / "delta" / f"{ps.target}.json").resolve(),
                            out_dir=(args.out or root / "build" / "pr" / ps.target).resolve(), signoff=args.signoff,
                            lint=lint_cmd.as_dict(linted), fork=args.fork)


def _dco(root, args):
    from .git import Repo
    from .pr import dco
    repo = Repo.open(args.src)
    if args.fix:
        with _locked(repo, f"dco --fix {args.branch}"):
            return dco.fix(repo, args.branch, dco.signoff_identity(repo, args.signoff), args.base)
    return dco.check(repo, args.branch, args.base)


def _export(check_only: bool):
    def run(root, args):
        from .git import Repo
        from .pr import export as export_mod
        ps = _set(root, args)
        repo = Repo.open(_src(root, ps, args))
        with contextlib.nullcontext() if check_only else _locked(repo, f"export {ps.target}"):
            return export_mod.export(ps, repo, args.branch or ps.branch, check_only=check_only,
                                     waiver_out=root / "build" / "export" / ps.target)
    return run


def _container(root, args):
    from .container import build as cbuild
    from .upstream import obtain
    ps = _set(root, args)
    with contextlib.ExitStack() as held:
        repo, _ = obtain(ps, _src(root, ps, args), args.url, hold=held, command=f"container {ps.target}")
        return cbuild.build(root, ps, repo, context_dir=(args.context or root / "build" / "container" / ps.target).resolve(),
                            base=args.base, builder_name=args.builder)


def _push(root, args):
    from .container import build as cbuild
    return cbuild.push(_set(root, args), base=args.base, registry=args.registry, builder_name=args.builder,
                       tls_verify=args.tls_verify == "true")


def _radar(root, args):
    from .radar import command as radar_cmd
    from .upstream import obtain
    ps = _set(root, args)
    with contextlib.ExitStack() as held:
        repo, _ = obtain(ps, _src(root, ps, args), args.url, hold=held, command=f"radar {ps.target}")
        res = radar_cmd.radar(ps, repo, since=args.since, until=args.until)
    out = (args.out or root / "build" / "radar").resolve()
    res.files = radar_cmd.report_paths(res.target, out)
    radar_cmd.write(res, out, render.as_json(res), render.radar_markdown(res, [voice(args).hint(h) for h in res.hints]))
    return res


def _workflow(root, args):
    from .ci import workflow as ci_workflow
    labels = ci_workflow.gpu_runner_labels(args.gpu_runner) if args.gpu_runner is not None else None  # None: keep the file's
    return ci_workflow.write(root, labels, check=args.check)


def _summary(root, args):
    from .ci import summary as ci_summary
    step = os.environ.get("GITHUB_STEP_SUMMARY")  # GitHub Actions: the job's Markdown page
    return ci_summary.summarize(root, ci_summary.folders(args.reports), (args.out or root / "build" / "summary").resolve(),
                                Path(step) if step else None)


def _bench(root, args):
    from . import bench
    work = args.workdir.resolve()
    return bench.run(root, work, bench.Options(files=args.files, commits=args.commits))


def _bench_text(res) -> str:
    from . import bench
    return bench.render(res)


def _miniature(root, args):
    from . import miniature
    return miniature.build(root, args.dest, args.variant)


def _demo(root, args):
    from . import demo
    return demo.run(root, args.workdir.resolve(), args.signoff)


COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("apply", "apply a target's series as commits on its branch (all or nothing)",
            (TARGET, SRC, URL, arg("--threeway", "THREEWAY", "merge drifted patches 3-way", action="store_true")),
            _apply, render.apply_result,
            "make apply TRTLLM=main THREEWAY=1\npatchkit apply --target main --src build/trtllm-main --threeway"),
    Command("unapply", "return the checkout to where it was before apply", (TARGET, SRC), _unapply,
            render.unapply_result, "make unapply TRTLLM=main\npatchkit unapply --target main --src build/trtllm-main"),
    Command("check", "report how every target applies, changing nothing (exit 3 on a conflict)",
            (SRC_REQUIRED, arg("--target", None, "only these targets (default: all)", action="append")),
            _check, render.check_results, "make check TRTLLM_SRC=build/trtllm-main\npatchkit check --src build/trtllm-main",
            lambda res: ExitCode.CONFLICT if any(r.conflicts for r in res) else ExitCode.OK),
    Command("radar", "since which upstream commit a set breaks, and since which it is no longer needed "
            "(exit 1: its status at UNTIL differs from SINCE's, or the set needs work there)",
            (TARGET, SRC, URL, arg("--since", "SINCE", "first commit of the range (default: the set's upstream.base)"),
             arg("--until", "UNTIL", "last commit of the range (default: the set's ref)"),
             arg("--out", None, "where to write <target>.json and <target>.md (default: build/radar)", type=Path)),
            _radar, render.radar_result,
            "make radar TRTLLM=main SINCE=v1.3.0rc25\npatchkit radar --target main --src build/trtllm-main --since v1.3.0rc25",
            lambda res: _mismatch_unless(not res.changed and res.action == "nothing")),
    Command("waivers", "which waiver lines skip the set's tests, now and after its edit", (TARGET, SRC, URL),
            _waivers, render.waivers_result,
            "make waivers TRTLLM=rc25\npatchkit waivers --target rc25 --src build/trtllm-rc25"),
    Command("delta", "run the set's tests unpatched and patched, and grade the delta",
            (TARGET, SRC, URL, arg("--mode", "MODE", "default: source unless tensorrt_llm is importable",
                                   choices=DELTA_MODES),
             arg("--report", "REPORT", "where to write the JSON report (default: build/delta/<target>.json)", type=Path),
             arg("--base", "BASE", "container mode: the unpatched image (default: the set's container.base)"),
             arg("--builder", "BUILDER", "container mode: buildah, podman or docker (default: the first that works)")),
            _delta, render.delta_result,
            "make delta TRTLLM=main REPORT=/tmp/main-delta.json\n"
            "patchkit delta --target main --src build/trtllm-main --report /tmp/main-delta.json",
            lambda res: _mismatch_unless(res.ok)),
    Command("lint", "upstream's own pre-commit hooks, at their pinned revs, on the files the series changes",
            (TARGET, SRC, URL,
             arg("--report", "REPORT", "where to write the JSON report (default: build/lint/<target>.json)", type=Path),
             arg("--fix", "FIX", "put the formatters' changes into the series' commits and patches/<target>",
                 action="store_true"),
             arg("--cache", None, "the hook environments, mirrors and verdicts (default: $PATCHKIT_LINT_CACHE, else .venv/lint-cache)", type=Path)),
            _lint, render.lint_result,
            "make lint TRTLLM=main FIX=1\npatchkit lint --target main --src build/trtllm-main --fix",
            lambda res: _mismatch_unless(res.ok)),
    Command("pr", "a signed-off PR branch, title and body from the last delta report",
            (TARGET, SRC, REPORT, SIGNOFF,
             arg("--fork", "FORK", "your GitHub user, whose fork the PR comes from (default: git config github.user)"),
             arg("--out", None, "where to write title, body and patches (default: build/pr/<target>)", type=Path)),
            _pr, render.pr_result,
            'make pr TRTLLM=main SIGNOFF="Jane Developer <jane@example.com>"\n'
            "patchkit pr --target main --src build/trtllm-main --signoff 'Jane Developer <jane@example.com>'"),
    Command("dco", "check (or fix) DCO sign-offs on a branch",
            (SRC_REQUIRED, arg("--branch", "BRANCH", "the branch to check", required=True),
             arg("--base", None, "check base..branch (default: commits on no remote branch or tag)"),
             arg("--fix", "FIX", "add missing sign-offs, keeping the old tip on a backup ref", action="store_true"),
             SIGNOFF),
            _dco, render.dco_result, "make dco BRANCH=pr/main\npatchkit dco --src build/trtllm-main --branch pr/main",
            lambda res: _mismatch_unless(res.ok)),
    Command("export", "write a branch back into the target's patch set", (TARGET, SRC, BRANCH), _export(False),
            render.export_result, "make export TRTLLM=main\npatchkit export --target main --src build/trtllm-main"),
    Command("check-export", "fail when patches/<target> differs from the branch", (TARGET, SRC, BRANCH),
            _export(True), render.export_result,
            "make check-export TRTLLM=main\npatchkit check-export --target main --src build/trtllm-main",
            lambda res: _mismatch_unless(res.up_to_date)),
    Command("container", "build the patched image of the target's container base",
            (TARGET, SRC, URL, BASE, BUILDER,
             arg("--context", None, "where to render the build context (default: build/container/<target>)", type=Path)),
            _container, render.container_result,
            "make container TRTLLM=rc25 BUILDER=buildah\npatchkit container --target rc25 --builder buildah"),
    Command("container-push", "push the target's patched image",
            (TARGET, arg("--registry", "REGISTRY", "host/repo to push to", required=True),
             arg("--base", "BASE", "base image the image was built from (default: the set's)"), BUILDER,
             arg("--tls-verify", "TLS_VERIFY", "verify the registry's certificate", choices=("true", "false"),
                 default="true")),
            _push, render.push_result,
            "make container-push TRTLLM=rc25 REGISTRY=registry.example.com/ml/trtllm\n"
            "patchkit container-push --target rc25 --registry registry.example.com/ml/trtllm"),
    Command("miniature", "build the miniature upstream repository",
            (arg("--dest", "DEST", "where (a new or empty directory)", type=Path, required=True),
             arg("--variant", "VARIANT", "add a variant's commits on main (e.g. fixed-upstream: upstream's own fix)")),
            _miniature, render.miniature_result,
            "make miniature DEST=/tmp/mini\npatchkit miniature --dest /tmp/mini"),
    Command("targets", "list the patch sets", (), _targets, render.targets, "make targets\npatchkit targets"),
    Command("workflow", "render .github/workflows/patchkit.yml: every target's jobs, from the sets on disk",
            (arg("--gpu-runner", "GPU_RUNNER", "the container job's runner labels (default: self-hosted,gpu)"),
             arg("--check", None, "change nothing; exit 1 when the file is stale", action="store_true")),
            _workflow, render.workflow_result,
            "make workflow GPU_RUNNER=self-hosted,gpu\npatchkit workflow --gpu-runner self-hosted,gpu",
            lambda res: _mismatch_unless(res.ok)),
    Command("summary", "merge delta, lint and radar reports into one table (Markdown and JSON)",
            (arg("--reports", "REPORTS", "folders of reports, searched for *.json (repeat it, or separate them by spaces)",
                 type=Path, required=True, action="append"),
             arg("--out", None, "where to write summary.md and summary.json (default: build/summary)", type=Path)),
            _summary, render.summary_result,
            "make summary REPORTS=reports\npatchkit summary --reports reports",
            lambda res: _mismatch_unless(res.ok)),
    Command("bench", "measure the cold start by clone method, the delta, the image build, the waiver step, the radar",
            (WORKDIR, arg("--files", None, "files of the generated upstream (default 15,000)", type=int),
             arg("--commits", None, "commits of the generated upstream (default 5,000)", type=int)),
            _bench, _bench_text, "make bench\npatchkit bench --workdir build/bench"),
    Command("demo", "run the main job on the miniature upstream",
            (WORKDIR, arg("--signoff", "SIGNOFF", "'Name <email>' for the demo's PR branch (default: git config)")),
            _demo, render.demo_result,
            "make demo\npatchkit demo --workdir build/demo", lambda res: _mismatch_unless(res.ok)),
)}


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line on stderr (exit 2), like every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(ExitCode.USAGE, f"patchkit: error: {message} (see: {self.prog} --help)\n")


def _given(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type that refuses an empty value: an empty TRTLLM_SRC must not mean '.'."""
    def convert(text: str) -> Any:
        if not text.strip():
            raise argparse.ArgumentTypeError("must not be empty")
        return kind(text)
    convert.__name__ = getattr(kind, "__name__", "value")
    return convert


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="patchkit", description="Carry TensorRT-LLM fixes as versioned patch sets.")
    p.add_argument("--version", action="version", version=f"patchkit {__version__}")
    p.add_argument("--root", type=Path, help="project directory holding patches/ and waivers/")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr (shown only on a terminal)")
    sub = p.add_subparsers(dest="command", required=True)
    for c in COMMANDS.values():
        sp = sub.add_parser(c.name, help=c.help, description=c.help, formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog="example:\n" + "\n".join(f"  {line}" for line in c.example.splitlines()))
        for a in c.args:
            options = dict(a.options)
            if options.get("type", str) in (str, Path) and "choices" not in options and options.get("action") in (None, "append"):
                options["type"] = _given(options.get("type", str))
            sp.add_argument(a.flag, help=a.help + (f" (make: {a.make})" if a.make else ""), **options)
        # `patchkit apply ... --json` as well as `patchkit --json apply ...`
        sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print the result as JSON")
    return p


def voice(args: argparse.Namespace) -> render.Voice:
    """How this invocation came (make or a shell) and with which values: hints are said that way."""
    options = {c.name: {a.dest: (a.flag, a.make) for a in c.args} for c in COMMANDS.values()}
    given = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
             if k in options.get(args.command, {})}
    return render.Voice(via_make=os.environ.get("PATCHKIT_VIA_MAKE") == "1", command=args.command, given=given,
                        options=options, prefix=("--root", str(args.root)) if args.root else ())


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    progress.set_quiet(args.quiet)
    said = voice(args)
    command = COMMANDS[args.command]
    try:
        scratch.sweep()  # what a killed run left in $TMPDIR (#17 item 9)
        res = command.run((args.root or find_root()).resolve(), args)
        text = render.as_json(res) if args.json else "\n".join(
            filter(None, [command.text(res), *(said.hint(h) for h in getattr(res, "hints", []))]))
        try:
            if text:
                print(text, flush=True)
        except BrokenPipeError:  # `patchkit --json targets | head`: the reader had enough; not our bug
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return command.verdict(res)
    except UserError as exc:
        if exc.details:
            print(exc.details)
        notes = "".join(f"; {n}" for n in getattr(exc, "__notes__", ()))  # e.g. a restore that failed too
        line = " ".join(f"{said.error(exc)}{notes}".splitlines())  # one line, whatever a message held
        print(f"patchkit: error: {line}", file=sys.stderr)
        return exc.code
    except CommandError as exc:
        # A tool failed where nothing more specific applies: not a bug of ours (exit 70), one
        # line with the command and the tool's own words. A git failure is exit 3 (the
        # transaction has put the checkout back); a builder that fails so is exit 5, a tool
        # that does not work here.
        notes = "".join(f"; {n}" for n in getattr(exc, "__notes__", ()))
        where = f" in {exc.cwd}" if exc.cwd else ""
        print(f"patchkit: error: {' '.join(exc.cmd[:2])} failed{where} (exit {exc.returncode}): "
              f"{exc.first_line()}{notes}", file=sys.stderr)
        return ExitCode.CONFLICT if is_git_error(exc) else ExitCode.TOOL_MISSING
    except KeyboardInterrupt:
        print("patchkit: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except ImportError as exc:
        if "Failed to initialize" not in str(exc):  # GitPython's words when its `git version` at import fails
            return crashed()
        # The git facade is imported by the commands that use git, when they run: a git that
        # GitPython cannot start is one line and the tool-missing code, not an internal error.
        cause = str(exc.__cause__ or exc).strip().splitlines()
        said = next((line.strip() for line in reversed(cause) if line.strip()), "no answer")
        print(f"patchkit: error: the version control tool does not work here ({said[:200]})", file=sys.stderr)
        return ExitCode.TOOL_MISSING
    except OSError as exc:
        # The filesystem said no (a path too long or not a directory, no permission, no space):
        # the user's paths or machine, not a bug; one line naming the path.
        name = str(exc.filename or "")
        # Shortened only when absurd (ENAMETOOLONG bait): a real path is said whole, so it can be acted on.
        name = name if len(name) <= 1000 else name[:500] + "..." + name[-200:]
        bad_path = exc.errno in (errno.ENAMETOOLONG, errno.ENOTDIR, errno.EINVAL, errno.ELOOP, errno.EISDIR)
        print(f"patchkit: error: {exc.strerror or exc}: {name}", file=sys.stderr)
        return ExitCode.USAGE if bad_path else ExitCode.CONFLICT
    except Exception:
        return crashed()

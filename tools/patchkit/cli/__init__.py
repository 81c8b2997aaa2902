"""The command line: argparse over the command table, error tiers and exit codes.

Each subcommand is one entry of COMMANDS (commands.py): its settings (flag, make variable;
table.py), the function it runs (runs.py), how its result reads (each command's text module:
apply_text.py, delta/text.py, ...) and its verdict.
Only this package knows argparse, and only this module exits.
"""
from __future__ import annotations

import argparse
import errno
import logging
import os
import sys
from pathlib import Path

# Only what every command needs is imported here: the ground floor and the rendering (each
# command imports its own modules when it runs: runs.py).
from .. import __version__, progress, scratch
from ..errors import CommandError, ExitCode, UserError, crashed, is_git_error
from . import parser
from .commands import COMMANDS
from .table import verdict_line, voice
from ..text.table import as_json
from ..text.words import visible

__all__ = ["COMMANDS", "find_root", "main", "voice"]

log = logging.getLogger("patchkit")


def find_root(start: Path | None = None) -> Path:
    """The project directory holding patches/: $PATCHKIT_ROOT, or up from cwd, or this package's repo."""
    env = os.environ.get("PATCHKIT_ROOT")
    if env:
        return Path(env)
    for d in [(start or Path.cwd()).resolve(), *(start or Path.cwd()).resolve().parents]:
        if (d / "patches").is_dir() and (d / "tools" / "patchkit").is_dir():
            return d
    return Path(__file__).resolve().parents[3]


def _parser() -> argparse.ArgumentParser:
    p = parser.Parser(prog="patchkit", description="Carry TensorRT-LLM fixes as versioned patch sets.")
    p.add_argument("--version", action="version", version=f"patchkit {__version__}")
    p.add_argument("--root", type=Path, help="project directory holding patches/ and waivers/")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr (shown only on a terminal)")
    sub = p.add_subparsers(dest="command", required=True)
    for c in COMMANDS.values():
        sp = sub.add_parser(c.name, help=c.help, description=c.help, formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog="example:\n" + "\n".join(f"  {line}" for line in c.example.splitlines()),
                            make_names={a.flag: a.make for a in c.args if a.make})
        for a in c.args:
            options = dict(a.options)
            if options.get("type", str) in (str, Path) and "choices" not in options and options.get("action") in (None, "append"):
                options["type"] = parser.given(options.get("type", str))
            sp.add_argument(a.flag, help=a.help + (f" (make: {a.make})" if a.make else ""), **options)
        # `patchkit apply ... --json` as well as `patchkit --json apply ...`
        sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print the result as JSON")
    return p


def _say(text: str, *, err: bool = False) -> None:
    """A line (or lines) patchkit prints, on stdout or stderr: through text.words.visible, so that
    nothing untrusted (a PR's title or files, a patch's lines, git's words about them) reaches a
    terminal as itself (#31 item 9: a U+009B in a PR's title was printed raw by make targets)."""
    print(visible(text), file=sys.stderr if err else sys.stdout, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    progress.set_quiet(args.quiet)
    said = voice(args)
    command = COMMANDS[args.command]
    blank = parser.blank_make_value((a.make, a.options.get("action") in (None, "append") and a.options.get("nargs") != "?")
                                    for a in command.args if a.make) if said.via_make else None
    if blank:
        _say(f"patchkit: error: {blank}: must not be empty (see: make help)", err=True)
        return ExitCode.USAGE
    try:
        scratch.sweep()  # what a killed run left in $TMPDIR (#17 item 9)
        res = command.run((args.root or find_root()).resolve(), args)
        text = as_json(res) if args.json else "\n".join(
            filter(None, [command.text(res), *(said.hint(h) for h in getattr(res, "hints", []))]))
        try:
            if text:
                _say(text)
        except BrokenPipeError:  # `patchkit --json targets | head`: the reader had enough; not our bug
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = command.verdict(res)
        if code == ExitCode.MISMATCH:  # a verdict, said so: make's `*** Error 1` is never the only word
            _say(f"patchkit: {verdict_line(args.command, res)}", err=True)
        return code
    except UserError as exc:
        if exc.details:
            _say(exc.details)
        for more in exc.more:  # further ways on (make radar; how to give up a git am session)
            _say(said.hint(more))
        notes = "".join(f"; {n}" for n in getattr(exc, "__notes__", ()))  # e.g. a restore that failed too
        line = " ".join(f"{said.error(exc)}{notes}".splitlines())  # one line, whatever a message held
        _say(f"patchkit: error: {line}", err=True)
        return exc.code
    except CommandError as exc:
        # A tool failed where nothing more specific applies: not a bug of ours (exit 70), one
        # line with the command and the tool's own words. A git failure is exit 3 (the
        # transaction has put the checkout back); a builder that fails so is exit 5, a tool
        # that does not work here.
        notes = "".join(f"; {n}" for n in getattr(exc, "__notes__", ()))
        where = f" in {exc.cwd}" if exc.cwd else ""
        _say(f"patchkit: error: {' '.join(exc.cmd[:2])} failed{where} (exit {exc.returncode}): "
             f"{exc.first_line()}{notes}", err=True)
        return ExitCode.CONFLICT if is_git_error(exc) else ExitCode.TOOL_MISSING
    except KeyboardInterrupt:
        _say("patchkit: interrupted", err=True)
        return ExitCode.INTERRUPTED
    except ImportError as exc:
        if "Failed to initialize" not in str(exc):  # GitPython's words when its `git version` at import fails
            return crashed()
        # GitPython is imported when a command first reads a git object: a git that GitPython
        # cannot start is one line and the tool-missing code, not an internal error.
        cause = str(exc.__cause__ or exc).strip().splitlines()
        said = next((line.strip() for line in reversed(cause) if line.strip()), "no answer")
        _say(f"patchkit: error: the version control tool does not work here ({said[:200]})", err=True)
        return ExitCode.TOOL_MISSING
    except OSError as exc:
        # The filesystem said no (a path too long or not a directory, no permission, no space):
        # the user's paths or machine, not a bug; one line naming the path.
        name = str(exc.filename or "")
        # Shortened only when absurd (ENAMETOOLONG bait): a real path is said whole, so it can be acted on.
        name = name if len(name) <= 1000 else name[:500] + "..." + name[-200:]
        bad_path = exc.errno in (errno.ENAMETOOLONG, errno.ENOTDIR, errno.EINVAL, errno.ELOOP, errno.EISDIR)
        _say(f"patchkit: error: {exc.strerror or exc}: {name}", err=True)
        return ExitCode.USAGE if bad_path else ExitCode.CONFLICT
    except Exception:
        return crashed()


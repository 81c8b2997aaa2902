"""The command table's vocabulary: a setting (flag and make variable), a command, and the
settings several commands share. Also how an invocation's hints are said (voice), from the
table that commands.py registers here."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import parser
from ..errors import ExitCode
from ..text.voice import Voice

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
# The command-line name of a fix of the stack (FIX is taken: it means "mend" for lint and dco).
FIX_ID = arg("--fix-id", "FIXID", "one fix of the set's stack, by its id (e.g. 19514; default: every fix)")
# Check, radar, apply, delta, backport and the verbs that edit a stack fetch the set's ref first (#33 item 4);
# FETCH=0 does not.
NO_FETCH = arg("--no-fetch", "FETCH", "judge the set's ref as the checkout has it: no fetch first (make: FETCH=0)",
               action="store_true")
# How make wheel builds, and make container and make delta MODE=container where a fix needs a wheel.
WHEEL_BUILD = arg("--wheel-build", "WHEEL_BUILD", "image: in the set's devel image (the default where a builder works); "
                  "host: on this machine", choices=("image", "host"))
CUDA_ARCHS = arg("--cuda-archs", "CUDA_ARCHS", "the CUDA architectures the wheel is built for, e.g. 120-real "
                 "(default: the set's container.cuda_archs)")
JOBS = arg("--jobs", "JOBS", "parallel compile jobs (default: from the memory the build may use; see make wheel)",
           type=int)
DEVEL = arg("--devel", "DEVEL", "the devel image the wheel is built in (default: the set's container.devel)")
WHEEL_OUT = arg("--wheel-out", None, "where the set's wheel is, or is built (default: build/wheel)", type=Path)
WHEEL_CACHE = arg("--wheel-cache", None, "the wheel's build trees and compiler caches (default: build/wheel-cache)",
                  type=Path)
WORKDIR = arg("--workdir", None, "where to work (make: $(BUILD)/<target>)", type=Path, required=True)


@dataclass(frozen=True)
class Command:
    """One subcommand: its settings, what it runs, how its result reads, and its verdict."""

    name: str
    help: str
    args: tuple[Arg, ...]
    run: Callable[[Path, argparse.Namespace], Any]  # (project root, arguments) -> result
    text: Callable[[Any], str]  # the result for people; --json prints text.table.as_json(result)
    example: str  # one make line and the same as a CLI line, ending every --help
    verdict: Callable[[Any], ExitCode] = lambda res: ExitCode.OK


def _mismatch_unless(ok: bool) -> ExitCode:
    """A command that ran and shows its result, and whose verdict may still be a failure."""
    return ExitCode.OK if ok else ExitCode.MISMATCH



# name -> Command, filled by commands.py (the table) when the CLI imports it.
REGISTRY: dict[str, Command] = {}


def voice(args: argparse.Namespace) -> Voice:
    """How this invocation came (make or a shell) and with which values: hints are said that way."""
    options = {c.name: {a.dest: (a.flag, a.make) for a in c.args} for c in REGISTRY.values()}
    given = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
             if k in options.get(args.command, {})}
    return Voice(via_make=parser.via_make(), command=args.command, given=given,
                 options=options, prefix=("--root", str(args.root)) if args.root else ())


# What exit 1 means for each command whose exit 1 is a verdict (#27 item 4): the command ran, and
# what it found is above; one line on stderr says so, beside make's own `*** Error 1`.
_EXIT_1 = {
    "radar": lambda r: f"there is work to do at UNTIL: {r.action} (verdict and to do above)",
    "apply": lambda r: "the git am -3 session stopped at a conflict, left for you to resolve (the next steps above)",
    "check": lambda r: "a patch applies only with a 3-way merge (refresh the set) or is already upstream "
                       "(retire it): above",
    "delta": lambda r: "the measured delta does not match what the set declares (above)",
    "lint": lambda r: f"{len(r.failures)} hook(s) fail on the series' files (above)" if r.config_found
    else "not linted: upstream has no pre-commit config at the ref",
    "dco": lambda r: f"{len(r.violations)} commit(s) without a valid sign-off (above)",
    "check-export": lambda r: f"patches/{r.target} is out of date with {r.branch} (above)",
    "workflow": lambda r: "the workflow files are stale (above)",
    "summary": lambda r: "not every row is as declared (its verdict in bold, or flagged, above)",
    "demo": lambda r: "a step's verdict is not the declared one (above)",
}


def verdict_line(command: str, result) -> str:
    """The line that says an exit 1 is a verdict, not a failure to run."""
    said = _EXIT_1.get(command)
    return f"exit 1 is {command}'s verdict, not a failure to run: " + (said(result) if said else "see above")

"""The command line's words: argparse made to say one line, in the user's vocabulary.

Through make (the Makefile sets PATCHKIT_VIA_MAKE=1) a setting is a make variable: an error
about --mode must name MODE, the variable the user set, and a value make drops before the CLI
sees it must be refused as the CLI refuses it (#24 item 6). commands.py holds the command
table; this module knows each command's flags only as {flag: make variable}.
"""
from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

from ..errors import ExitCode


def via_make() -> bool:
    """Whether make runs us (hints and errors then speak in make variables)."""
    return os.environ.get("PATCHKIT_VIA_MAKE") == "1"


class Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line on stderr (exit 2), like every other error;
    through make, each flag is named as its make variable (MODE, not --mode).

    make_names: the command's {flag: make variable} (a subcommand's parser is given its own)."""

    def __init__(self, *args: Any, make_names: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.make_names = dict(make_names or {})

    def error(self, message: str) -> NoReturn:
        if via_make():
            self.exit(ExitCode.USAGE, f"patchkit: error: {make_words(self.make_names, message)} (see: make help)\n")
        self.exit(ExitCode.USAGE, f"patchkit: error: {message} (see: {self.prog} --help)\n")


def make_words(names: Mapping[str, str], message: str) -> str:
    """argparse's message with each flag said as its make variable:
    "argument --mode: invalid choice: 'bogus'" -> "MODE: invalid choice: 'bogus'"."""
    message = re.sub(r"argument (--[\w-]+)(?:/-\w+)?:", lambda m: f"{names[m[1]]}:" if m[1] in names else m[0],
                     message)
    return re.sub(r"(?<![\w-])--[\w-]+", lambda m: names.get(m[0], m[0]), message)


def blank_make_value(settings: Iterable[tuple[str, bool]]) -> str | None:
    """The first make variable of (variable, takes a value) set to blanks only: the Makefile's
    `$(if $(VAR),--flag="$$VAR")` drops such a value as unset, where the CLI refuses it ("must
    not be empty"); make workflow GPU_RUNNER=' ' rendered the default runners without a word.
    A switch (FIX, THREEWAY) takes no value, so blanks there are just unset."""
    for name, takes_value in settings:
        value = os.environ.get(name)
        if takes_value and value and not value.strip():
            return name
    return None


def given(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type that refuses an empty value: an empty TRTLLM_SRC must not mean '.'."""
    def convert(text: str) -> Any:
        if not text.strip():
            raise argparse.ArgumentTypeError("must not be empty")
        return kind(text)
    convert.__name__ = getattr(kind, "__name__", "value")
    return convert


def threeway(text: str) -> bool | str:
    """THREEWAY's values: 1 merges drifted patches 3-way (True, as the bare --threeway), keep
    leaves a conflict as a git am -3 session to resolve by hand."""
    if text in ("1", "keep"):
        return True if text == "1" else text
    raise argparse.ArgumentTypeError(f"invalid value {text[:40]!r}: 1 (merge drifted patches 3-way) or keep "
                                     f"(leave a conflict as a git am -3 session to resolve by hand)")

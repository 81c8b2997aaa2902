"""The user's vocabulary: a hint said as make variables through make, as flags otherwise, with the
user's own values, so that it runs as printed."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import Ask, Hint, UserError
from .words import shell_word


@dataclass(frozen=True)
class Voice:
    """How the user called us, so that a hint is said their way and runs as printed.

    via_make: through the Makefile (it sets PATCHKIT_VIA_MAKE=1): make variables, else flags.
    given: the settings of this invocation as the user gave them ({setting: value}).
    options: every command's settings ({command: {setting: (flag, make variable or None)}}),
    from the CLI's command table.
    """

    via_make: bool
    command: str
    given: dict[str, Any]
    options: dict[str, dict[str, tuple[str, str | None]]]
    prefix: tuple[str, ...] = ()  # global flags to repeat (--root)

    def _spelling(self, setting: str, command: str | None = None) -> tuple[str, str | None]:
        for cmd in (command or self.command, *self.options):
            if setting in self.options.get(cmd, {}):
                return self.options[cmd][setting]
        return "--" + setting.replace("_", "-"), None

    def name(self, setting: str) -> str:
        """A setting as the user sets it: TRTLLM_SRC through make, --src otherwise."""
        flag, make = self._spelling(setting)
        return make if self.via_make and make else flag

    def command_line(self, command: str, changes: Sequence[tuple[str, Any]]) -> str:
        """The command with the user's own values and the changes, in their vocabulary."""
        accepted = self.options.get(command, {})
        mine = self.options.get(self.command, {})
        # Through make, a setting of no make variable was the Makefile's own (--wheel-out
        # $(BUILD)/wheel): the make line gives it again, and it is no make variable to print.
        merged = {k: v for k, v in self.given.items() if k in accepted and v not in (None, False, [], "")
                  and not (self.via_make and mine.get(k, ("", None))[1] is None)}
        # Ask: the user's own value when they gave one, else a place for it
        merged.update({k: (merged.get(k) or f"<{v.what}>") if isinstance(v, Ask) else v for k, v in changes})
        merged = {k: v for k, v in merged.items() if v is not False}  # False: that setting left out
        # In the command's own order of settings, then anything it does not list.
        values = {k: merged[k] for k in [*accepted, *merged] if k in merged}
        spelled = {k: self._spelling(k, command) for k in values}
        if self.via_make and all(make for _flag, make in spelled.values()):
            # make has no variable for another project (--root): its environment does
            root = [f"PATCHKIT_ROOT={shell_word(self.prefix[1])}"] if self.prefix[:1] == ("--root",) else []
            # a switch is VAR=1; one that turns something off (--no-fetch) is VAR=0 (FETCH=0)
            return " ".join([*root, "make", command] + [
                f"{spelled[k][1]}={shell_word(('0' if spelled[k][0].startswith('--no-') else '1') if v is True else str(v))}"
                for k, v in values.items()])
        words = ["patchkit", *map(shell_word, self.prefix), command]
        for k, v in values.items():
            for one in (v if isinstance(v, (list, tuple)) else [v]):
                if one is True:
                    words.append(spelled[k][0])
                elif str(one).startswith("-") or shell_word(str(one)).startswith("$'"):
                    # `--src -d` reads -d as an option: glue it on (and $'...' the way it was given)
                    words.append(f"{spelled[k][0]}={shell_word(str(one))}")
                else:
                    words += [spelled[k][0], shell_word(str(one))]
        return " ".join(words)

    def hint(self, h: Hint) -> str:
        if h.command is None and h.settings and all(v is None for _, v in h.settings):
            # "choose another" a value the user gave; "set" one they did not (FORK, SIGNOFF)
            verb = "choose another" if any(self.given.get(k) not in (None, False, "") for k, _ in h.settings) else "set"
            return f"{verb} {', '.join(self.name(k) for k, _ in h.settings)}" + (f" {h.also}" if h.also else "")
        chain = [f if isinstance(f, str) else self.command_line(f.command or self.command, f.settings) for f in h.first]
        line = " && ".join([*chain, self.command_line(h.command or self.command, h.settings)])
        return f"run: {line}" + (f" ({h.also})" if h.also else "")

    def error(self, exc: UserError) -> str:
        """The one line for a UserError: the setting it is about, the facts, what to do next."""
        text = f"{self.name(exc.setting)}: {exc.message}" if exc.setting else exc.message
        return text + (f"; {self.hint(exc.hint)}" if exc.hint else "")

"""python -m patchkit and the console script: only call the CLI.

Ctrl-C at any instant is `patchkit: interrupted` and exit 130, a second Ctrl-C too. So the
first thing the entry point does, before any import (the CLI's own, then each command's
modules as it runs, GitPython's `git version` among them), is take SIGINT: while the CLI
imports nothing has changed yet, so a Ctrl-C there ends the process at once. Once the CLI runs, a Ctrl-C is a KeyboardInterrupt
that unwinds through the transactions (they put the checkout back) to the CLI's handler; a
second one while they restore is held off, so the restore finishes. One that Python swallows
on the way (an exception in `__del__` or a weakref callback is only printed) still ends in
130, never in a run that looks finished, and lets the next Ctrl-C in. A Ctrl-C after the
answer is decided is ignored: the exit is already 130 or the command's own.

GitPython runs `git version` when it is imported, which happens when a command first reads a
git object; the CLI says a git that fails there in one line, with the tool-missing code.
"""
import signal

signal.signal(signal.SIGINT, lambda signum, frame: _exit_now(signum, frame))  # the first instruction

import os  # noqa: E402 - after the handler, as every other line
import sys  # noqa: E402

INTERRUPTED = 130
_MESSAGE = b"patchkit: interrupted\n"
_state = {"unwinding": False, "swallowed": False}


def _exit_now(signum, frame):  # noqa: ARG001 - a signal handler's signature
    """Start-up: nothing to undo yet; say so and leave (no Python left to run that could swallow it)."""
    os.write(2, _MESSAGE)
    os._exit(INTERRUPTED)


def _interrupt(signum, frame):  # noqa: ARG001
    """The first Ctrl-C unwinds through the transactions; more while they restore are not let in."""
    if not _state["unwinding"]:
        _state["unwinding"] = True
        raise KeyboardInterrupt


def _unraisable(info) -> None:
    """Python swallows an exception raised in __del__ or a weakref callback: not our Ctrl-C."""
    if info.exc_type is not None and issubclass(info.exc_type, KeyboardInterrupt):
        _state.update(unwinding=False, swallowed=True)  # the next Ctrl-C interrupts again
        return
    sys.__unraisablehook__(info)


def main(argv: list[str] | None = None) -> int:
    """The process's entry point: it owns SIGINT from here to the exit (library callers use cli.main)."""
    signal.signal(signal.SIGINT, _exit_now)
    _state.update(unwinding=False, swallowed=False)
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        # the one answer that needs no command: said before the CLI's table imports every
        # command's text module (#34 item 4: 0.1 s; argparse says the same line the same way)
        from . import __version__
        sys.stdout.write(f"patchkit {__version__}\n")
        return 0
    from .cli import main as cli_main
    sys.unraisablehook = _unraisable
    signal.signal(signal.SIGINT, _interrupt)
    try:
        code = cli_main(argv)
    except KeyboardInterrupt:  # one that arrived outside the CLI's own handler
        code = None
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the answer is decided; shutting down is not interrupted
    # The interpreter's finalization runs full collections that walk every object still alive
    # (make waivers: 100,000 waives.txt lines, indexed twice; 0.3-0.4 s after its answer, #17
    # item 16). Frozen, they are skipped; what is in no cycle is still freed by reference counting.
    # (Imported here, where a Ctrl-C is ignored: at the top it would be a start-up event.)
    import gc
    gc.freeze()
    if code is None or (_state["swallowed"] and code != INTERRUPTED):
        os.write(2, _MESSAGE)
        return INTERRUPTED
    return code


if __name__ == "__main__":
    sys.exit(main())

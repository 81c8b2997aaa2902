"""python -m patchkit and the console script: only call the CLI.

GitPython runs `git version` when it is imported; a git that fails there must still end in
one line and the tool-missing code, not a traceback before the CLI's error handling starts.
"""
import sys


def main(argv: list[str] | None = None) -> int:
    try:
        from .cli import main as cli_main
    except ImportError as exc:
        if "Failed to initialize" not in str(exc):  # GitPython's words when its git check fails
            raise
        cause = str(exc.__cause__ or exc).strip().splitlines()
        said = next((line.strip() for line in reversed(cause) if line.strip()), "no answer")
        print(f"patchkit: error: the version control tool does not work here ({said[:200]})", file=sys.stderr)
        return 5
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())

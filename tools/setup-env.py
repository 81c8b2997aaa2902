"""make setup's steps, run before .venv exists: by the system Python, with the standard library only.

    python3 tools/setup-env.py venv VENV          .venv with uv (pip the fallback), patchkit in it;
                                                  meanwhile pip fetches the hook tools' wheels
    python3 tools/setup-env.py wheelhouse VENV    the hook tools' wheels, linked at VENV/wheelhouse
    python3 tools/setup-env.py extra NAME VENV    pyproject's extra NAME (test, docs) into VENV

(patchkit/envs.py says how.) One line on stderr for what went otherwise than planned (pip
instead of uv, offline from uv's cache) or wrong; exit 0, 2 bad usage, 3 another setup holds
the project's cache, 5 a tool or the index missing, 130 interrupted.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "tools" / "patchkit" / "lint" / "wheelhouse.txt"  # the hook tools' wheels (make lint)
USAGE = "usage: setup-env.py venv VENV | wheelhouse VENV | extra NAME VENV"


def main(argv: list[str]) -> int:
    from patchkit import envs, lock  # tools/ is this script's own folder: sys.path[0]
    from patchkit.errors import ExitCode, UserError

    if argv[:1] == ["extra"] and len(argv) == 3 and argv[1].isidentifier():
        step, venv = "extra", Path(argv[2])
    elif argv[:1] in (["venv"], ["wheelhouse"]) and len(argv) == 2:
        step, venv = argv[0], Path(argv[1])
    else:
        print(f"patchkit: error: {USAGE}", file=sys.stderr)
        return ExitCode.USAGE
    try:
        with lock.hold(envs.cache_dir(ROOT) / "setup.lock", f"make setup ({step})", str(envs.cache_dir(ROOT))):
            if step == "wheelhouse":
                envs.wheelhouse(ROOT, venv, WHEELS)
                return ExitCode.OK
            built = (envs.build(ROOT, venv, sys.executable, wheels=WHEELS, own=(ROOT / "tools" / "patchkit",))
                     if step == "venv"
                     else envs.extra(ROOT, venv, sys.executable, argv[1]))
    except UserError as exc:
        print(f"patchkit: error: {exc.message}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("patchkit: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    for line in built.said:
        print(line, file=sys.stderr)
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

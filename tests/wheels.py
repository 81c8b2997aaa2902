"""The miniature's wheel as its own build makes it (#32 item 5): a checkout at a ref, and the
wheel its scripts/build_wheel.py writes there (g++, on this machine), for the tests that need
a built wheel: the release image's stand-in installs the tag's."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import sh

SCRIPT = "scripts/build_wheel.py"


def tree_at(miniature: Path, rev: str, dest: Path, *patches: Path) -> Path:
    """A checkout of the miniature at rev (with these patches applied), as a user builds it."""
    sh("git", "clone", "-q", miniature.as_uri(), dest)
    sh("git", "-C", dest, "checkout", "-q", "--detach", rev)
    if patches:
        sh("git", "-C", dest, "apply", *patches)
    return dest


def build_wheel(tree: Path, work: Path, *flags: str) -> Path:
    """Its own scripts/build_wheel.py, as upstream's Dockerfile runs it; the wheel it wrote."""
    dist = work / "dist"
    res = subprocess.run([sys.executable, SCRIPT, "--no-venv", "-j", "2", "-a", "120-real", "--build_dir",
                          str(work / "cpp-build"), "--dist_dir", str(dist), *flags], cwd=tree, text=True,
                         capture_output=True)
    assert res.returncode == 0, res.stdout + res.stderr
    [wheel] = dist.glob("*.whl")
    return wheel

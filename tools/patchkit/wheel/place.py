"""Where a wheel build runs (WHEEL_BUILD): in the set's devel image, or on this machine.

The pull request's build is untrusted code. In the image (WHEEL_BUILD=image, the default where
a builder works) it runs through the builder make container uses, the checkout, its build
tree and the compiler cache mounted, and without network: docker and podman give the
container none (--network=none); buildah's chroot isolation cannot, so the run goes into a
network namespace of its own first (unshare --net, which needs root; where that fails the
build runs with the network, and says so). On this machine (WHEEL_BUILD=host, for a user
already inside the devel container) it runs fenced by bubblewrap where bubblewrap works
(fence.py: no network, the filesystem read-only but the tree and the cache), else unfenced,
and says so.

Both run the same small driver: it zeroes ccache's statistics, runs the ref's own
scripts/build_wheel.py with the planned flags, and writes ccache's statistics beside the tree.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import fence, proc
from ..container.builders import Builder, Mount
from ..errors import NotFound

HOST, IMAGE = "host", "image"
PLACES = (IMAGE, HOST)
# Where the image sees the tree and the cache: upstream's wheel stage builds in /src/tensorrt_llm
# with CCACHE_DIR=/root/.cache/ccache (docker/Dockerfile.multi).
IMAGE_SRC = "/src/tensorrt_llm"
IMAGE_CCACHE = "/root/.cache/ccache"
STATS = ".patchkit-ccache-stats"  # in the tree's root, beside src/

DRIVER = """\
import shutil, subprocess, sys
stats, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
ccache = shutil.which("ccache")
if ccache:
    subprocess.run([ccache, "--zero-stats"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
code = subprocess.run([sys.executable, script, *args]).returncode
if ccache:
    out = subprocess.run([ccache, "--print-stats"], capture_output=True, text=True).stdout
    open(stats, "w").write(out)
sys.exit(code)
"""
PROBE = """\
import json, shutil
found = {t: bool(shutil.which(t)) for t in ("ninja", "ccache", "cmake")}
found["c++"] = any(shutil.which(c) for c in ("c++", "g++", "clang++"))
print(json.dumps(found))
"""


@dataclass(frozen=True)
class Place:
    """A place to build: its name, the image (None on the host), how the run is fenced."""

    name: str
    image: str | None = None  # the devel image, by id
    builder: Builder | None = None
    fence: fence.Fence | None = None
    offline: bool = False  # the image's run has no network
    said: str = ""  # how it is fenced, or why not, in words

    @property
    def src(self) -> str:
        """The tree's src/ as the build names it (compiler errors name files under it)."""
        return IMAGE_SRC if self.image else ""


def unshare_works() -> str:
    """'' when unshare --net can make a network namespace here, else why not."""
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    res = proc.run(["unshare", "--net", "true"], check=False)
    if res.returncode != 0:
        said = next((ln.strip() for ln in res.stderr.splitlines() if ln.strip()), f"exit {res.returncode}")
        return f"unshare --net cannot make a network namespace here ({said})"
    return ""


def tools(place: Place) -> dict[str, bool]:
    """Which of ninja, ccache, cmake and a C++ compiler the place has."""
    if place.image is None:
        found = {t: shutil.which(t) is not None for t in ("ninja", "ccache", "cmake")}
        return {**found, "c++": any(shutil.which(c) for c in ("c++", "g++", "clang++"))}
    res = place.builder.run(place.image, ["python3", "-c", PROBE], mounts=[], workdir="/", env={})
    if res.returncode != 0:
        raise NotFound(f"the devel image cannot run python3 (exit {res.returncode}): "
                       f"{(res.stderr or res.stdout).strip().splitlines()[-1:] or ['no output']}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def run(place: Place, tree_root: Path, ccache: Path, argv: list[str], on_line: Callable[[str], None],
        program: str = DRIVER, started: Callable[[int], None] | None = None) -> int:
    """The driver and the build in the place (or another program run the same way: its first
    argument is where ccache's statistics go); every line of its output to on_line; its exit code.
    started: on this machine the build runs in a session of its own, whose id it is given."""
    src = tree_root / "src"
    if place.image is not None:
        mounts = [Mount(src, IMAGE_SRC, read_only=False), Mount(ccache, IMAGE_CCACHE, read_only=False)]
        env = {"CCACHE_DIR": IMAGE_CCACHE, "CCACHE_BASEDIR": IMAGE_SRC}
        cmd = ["python3", "-c", program, f"{IMAGE_SRC}/{STATS}", *argv]
        res = place.builder.run(place.image, cmd, mounts=mounts, workdir=IMAGE_SRC, env=env, on_line=on_line,
                                offline=place.offline)
        return res.returncode
    python, prefixes = _python()
    cmd = [python, "-c", program, str(src / STATS), *argv]
    env = {"CCACHE_DIR": str(ccache), "CCACHE_BASEDIR": str(src)}
    if place.fence is not None:
        cmd = place.fence.command(cmd, cwd=src, writable=[src, ccache], env=env, readable=[Path(p) for p in prefixes])
        return proc.run_lines(cmd, on_line, cwd=src, started=started).returncode
    return proc.run_lines(cmd, on_line, cwd=src, env={**os.environ, **env}, started=started).returncode


def _python() -> tuple[str, list[str]]:
    """The python3 a user inside the devel container builds with (the one on PATH; else the one
    running patchkit), by its real path (not a shim), and its prefixes (the fence binds them back)."""
    found = shutil.which("python3") or sys.executable
    out = proc.run([found, "-c", "import json, sys; print(json.dumps([sys.executable, sys.prefix, sys.base_prefix]))"])
    exe, *prefixes = json.loads(out.stdout.strip().splitlines()[-1])
    return exe, prefixes


def stats(tree_root: Path) -> str:
    path = tree_root / "src" / STATS
    try:
        return path.read_text()
    except OSError:
        return ""


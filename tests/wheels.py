"""The miniature's wheel as its own build makes it (#32 item 5): a checkout at a ref, and the
wheel its scripts/build_wheel.py writes there (g++, on this machine), for the tests that need
a built wheel: the release image's stand-in installs the tag's."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from helpers import sh
from patchkit.wheel.place import HOST

SCRIPT = "scripts/build_wheel.py"
# Our fix's guard in capacityScheduler.cpp, as its patch adds it.
GUARD = "+    if (crossKvCacheManager->isEnableBlockReuse() && req.getEncoderUniqueTokens().has_value())\n"


def one_line_change(patch_text: str) -> str:
    """The fix's patch with one line of code changed (the guard asks for tokens, not only their
    presence): a second make wheel recompiles that file alone."""
    more = "has_value() && !req.getEncoderUniqueTokens().value()->empty())"
    return patch_text.replace(GUARD, GUARD.replace("has_value())", more), 1)


def tree_at(miniature: Path, rev: str, dest: Path, *patches: Path) -> Path:
    """A checkout of the miniature at rev (with these patches applied), as a user builds it."""
    sh("git", "clone", "-q", miniature.as_uri(), dest)
    sh("git", "-C", dest, "checkout", "-q", "--detach", rev)
    if patches:
        sh("git", "-C", dest, "apply", *patches)
    return dest


def build_wheel(tree: Path, work: Path, ccache: Path, *flags: str) -> Path:
    """Its own scripts/build_wheel.py, as upstream's Dockerfile runs it, in the tree's own build
    folder (cpp/build) with ccache at ccache (the session's compiler_cache); the wheel it wrote."""
    dist = work / "dist"
    res = subprocess.run([sys.executable, SCRIPT, "--no-venv", "-j", "2", "-a", "120-real", "--use_ccache",
                          "--dist_dir", str(dist), *flags], cwd=tree, text=True, capture_output=True,
                         env=ccache_env(ccache, tree))
    assert res.returncode == 0, res.stdout + res.stderr
    [wheel] = dist.glob("*.whl")
    return wheel


def ccache_env(ccache: Path, tree: Path) -> dict[str, str]:
    """The environment of a build of tree on this machine with the session's compiler_cache: the
    cache in it that make wheel's builds on this machine use (<cache>/ccache/host), and paths
    taken relative to the tree (CCACHE_BASEDIR, as make wheel sets it), so that a translation
    unit is a hit in any tree, whatever its folder, that holds the same source at the same place."""
    return {**os.environ, "CCACHE_DIR": str(ccache / HOST), "CCACHE_BASEDIR": str(tree)}


def wheel_cache(folder: Path, ccache: Path) -> Path:
    """A folder for make wheel's --cache (make container's and delta's --wheel-cache): its build
    trees its own, its compiler caches (<cache>/ccache/<devel key>) the session's compiler_cache."""
    folder.mkdir(parents=True)
    (folder / "ccache").symlink_to(ccache, target_is_directory=True)
    return folder


# A request of an encoder fed with features (Whisper): no encoder tokens, 1500 positions.
ASK = ("import json, sys\nfrom types import SimpleNamespace\n"
       "import tensorrt_llm._native as native\n"
       "from tensorrt_llm._torch.pyexecutor.scheduler import needed_cross_blocks\n"
       "out = {'archs': native.cuda_architectures(), 'tokens': needed_cross_blocks("
       "SimpleNamespace(encoder_unique_tokens=[7] * 64, encoder_output_len=1500), 32)}\n"
       "try:\n    out['features'] = needed_cross_blocks(SimpleNamespace(encoder_unique_tokens=None, "
       "encoder_output_len=1500), 32)\n"
       "except RuntimeError as exc:\n    out['features'] = 'RuntimeError: ' + str(exc)\n"
       "print(json.dumps(out))\n")


def ask(wheel: Path, where: Path) -> dict:
    """What the wheel's library answers, unpacked at where and called through its Python side."""
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(where)
    res = subprocess.run([sys.executable, "-c", ASK], env={"PYTHONPATH": str(where)}, text=True, capture_output=True)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)

"""make miniature: build the small upstream repository the demo and the tests run on.

The scaffolding lives in tests/fixtures/miniature (a manifest of commits, each a directory
laid over the tree before it). Lines marked '#patchkit: preimage <target> <n>' become the
preimage of hunk n of that target's patches for the file, so the lines the real patches
touch are the patches' own.
"""
from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import patchset
from .errors import BadInput
from .git import Repo, git

SCAFFOLD = Path("tests/fixtures/miniature")
MARKER = re.compile(r"^#patchkit: preimage (?P<target>\S+) (?P<n>\d+)\n", re.M)
IDENTITY = {"GIT_AUTHOR_NAME": "Miniature Upstream", "GIT_AUTHOR_EMAIL": "miniature@upstream.invalid",
            "GIT_COMMITTER_NAME": "Miniature Upstream", "GIT_COMMITTER_EMAIL": "miniature@upstream.invalid"}


@dataclass(frozen=True)
class MiniatureResult:
    path: Path
    tag: str
    branch: str
    commits: tuple[str, ...]


def build(root: Path, dest: Path) -> MiniatureResult:
    """Build the miniature at dest (which must not exist, or be an empty directory)."""
    dest = dest.resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BadInput(f"{dest} already exists and is not empty; choose another DEST")
    if not dest.parent.is_dir():
        raise BadInput(f"{dest.parent} does not exist")
    scaffold = root / SCAFFOLD
    manifest = yaml.safe_load((scaffold / "manifest.yaml").read_text())
    tmp = Path(tempfile.mkdtemp(prefix=".miniature-", dir=dest.parent))
    try:
        repo = Repo(tmp)
        git("init", "-q", "-b", manifest.get("branch", "main"), str(tmp))
        tag, commits = "", []
        for c in manifest["commits"]:
            _lay(root, scaffold / c["dir"], tmp)
            repo.run("add", "-A")
            env = dict(IDENTITY, GIT_AUTHOR_DATE=c["date"], GIT_COMMITTER_DATE=c["date"])
            repo.run("commit", "-q", "--no-verify", "-m", c["message"], env=env)
            commits.append(repo.out("rev-parse", "HEAD"))
            if c.get("tag"):
                tag = c["tag"]
                repo.run("tag", tag)
        if dest.exists():
            dest.rmdir()
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return MiniatureResult(dest, tag, manifest.get("branch", "main"), tuple(commits))


def _lay(root: Path, layer: Path, tree: Path) -> None:
    for src in sorted(layer.rglob("*")):
        if src.is_dir():
            continue
        rel = src.relative_to(layer)
        out = tree / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        text = src.read_text()
        out.write_text(MARKER.sub(lambda m: _preimage(root, rel.as_posix(), m["target"], int(m["n"])), text))


def _preimage(root: Path, path: str, target: str, n: int) -> str:
    ps = patchset.load(root, target)
    for patch in ps.patches:
        for fc in patch.files:
            if fc.old_path == path and len(fc.hunks) >= n:
                return "".join(fc.hunks[n - 1].preimage)
    raise BadInput(f"miniature: no hunk {n} for {path} in the {target} patch set")

"""Hook repositories made resolvable without GitHub: local mirrors of the real tools from PyPI.

pre-commit clones each hook repository at its pinned rev and pip-installs it. GitHub is out of
reach here, so for every repository whose tool is published on PyPI we build a local git
repository (a "mirror") holding the repository's hook manifest and a one-line package that
depends on the pinned tool from PyPI (`ruff==0.9.4` for astral-sh/ruff-pre-commit v0.9.4,
the shape ruff-pre-commit itself has), tagged with the rev. git's `url.<mirror>.insteadOf
<repo url>` (given to pre-commit through GIT_CONFIG_COUNT/KEY/VALUE, which pre-commit passes
on) sends pre-commit's clone there, and pip installs the tool from the wheelhouse that
`make setup` fetched (no index). The tools that run are the real pinned ones; only the
manifests (id, entry, file types) are written here, from the repositories' own manifests
at those revs. A repository not in this table is not run, and says so.

Checked against the repositories' own .pre-commit-hooks.yaml (search index, 2026-12-01):
ruff-pre-commit's ruff and ruff-format (`ruff check --force-exclude`, `ruff format
--force-exclude`, require_serial, types_or python/pyi, with jupyter since its PR #96 for ruff
0.6.0, so at v0.9.4 too); yapf's yapf (`yapf -i`, types python; its newer yapf-diff hook,
which upstream does not use, is left out); codespell (types text); pre-commit-hooks' ids,
entries, types and files as listed below. autoflake and isort match their manifests at the
pinned revs key for key (neither PyPI sdist ships the manifest, so they were read with the
search tools; tests/lint/test_manifests.py holds the facts and where they come from):
autoflake's default args are --in-place, --expand-star-imports, --remove-duplicate-keys and
--remove-unused-variables (upstream's config replaces them with its own); isort 5.12.0 selects
by types_or cython/pyi/python (PyCQA/isort#1612, 2020-12) with --filter-files and
minimum_pre_commit_version 2.9.2, not the older `files: '.pxd$|.py$'`.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..git import Identity, init

# pre-commit-hooks' manifest (the entries a TensorRT-LLM config uses), as at v6.0.0.
_PCH_TEXT = ["check-merge-conflict", "detect-private-key", "end-of-file-fixer", "mixed-line-ending"]
_PCH = [{"id": "check-added-large-files", "entry": "check-added-large-files"},
        {"id": "check-symlinks", "entry": "check-symlinks", "types": ["symlink"]},
        {"id": "check-yaml", "entry": "check-yaml", "types": ["yaml"]},
        {"id": "check-toml", "entry": "check-toml", "types": ["toml"]},
        {"id": "check-json", "entry": "check-json", "types": ["json"]},
        {"id": "debug-statements", "entry": "debug-statement-hook", "types": ["python"]},
        {"id": "file-contents-sorter", "entry": "file-contents-sorter", "files": "^$"},
        {"id": "trailing-whitespace", "entry": "trailing-whitespace-fixer", "types": ["text"]}]
_PCH += [{"id": h, "entry": h, "types": ["text"]} for h in _PCH_TEXT]


@dataclass(frozen=True)
class Mirror:
    """A hook repository whose tool is on PyPI: the package and the repository's manifest."""

    package: str  # the PyPI distribution; its version is the rev without a leading 'v'
    hooks: tuple[dict, ...]


MIRRORS: dict[str, Mirror] = {
    "github.com/astral-sh/ruff-pre-commit": Mirror("ruff", (
        {"id": "ruff", "entry": "ruff check --force-exclude", "types_or": ["python", "pyi", "jupyter"],
         "require_serial": True},
        {"id": "ruff-format", "entry": "ruff format --force-exclude", "types_or": ["python", "pyi", "jupyter"],
         "require_serial": True})),
    "github.com/google/yapf": Mirror("yapf", ({"id": "yapf", "entry": "yapf", "args": ["-i"], "types": ["python"]},)),
    "github.com/pycqa/isort": Mirror("isort", (
        {"id": "isort", "entry": "isort", "require_serial": True, "types_or": ["cython", "pyi", "python"],
         "args": ["--filter-files"], "minimum_pre_commit_version": "2.9.2"},)),
    "github.com/pycqa/autoflake": Mirror("autoflake", (
        {"id": "autoflake", "entry": "autoflake", "types": ["python"], "require_serial": True,
         "args": ["--in-place", "--expand-star-imports", "--remove-duplicate-keys", "--remove-unused-variables"]},)),
    "github.com/codespell-project/codespell": Mirror("codespell", (
        {"id": "codespell", "entry": "codespell", "types": ["text"]},)),
    "github.com/pre-commit/pre-commit-hooks": Mirror("pre-commit-hooks", tuple(_PCH)),
}


def key(url: str) -> str:
    """A hook repository's URL as the table knows it: host/owner/name, lower case, no .git."""
    u = url.strip().rstrip("/")
    for prefix in ("https://", "http://", "git://", "ssh://git@", "git@"):
        if u.startswith(prefix):
            u = u[len(prefix):]
    u = u.replace(":", "/", 1) if u.startswith("github.com:") else u
    return (u[:-4] if u.endswith(".git") else u).lower()


def pin(mirror: Mirror, rev: str) -> str:
    """The requirement a repository at rev installs: the tool at the rev's version."""
    return f"{mirror.package}=={rev[1:] if rev[:1] == 'v' else rev}"


def fingerprint() -> str:
    """Changes when the mirrors' content changes, so pre-commit's cache of them is not reused."""
    data = json.dumps({k: [m.package, m.hooks] for k, m in MIRRORS.items()}, sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:12]


def available(wheelhouse: Path, requirement: str) -> bool:
    """Whether the wheelhouse holds the pinned tool (a wheel named for that version)."""
    name, version = requirement.split("==")
    stem = f"{name.replace('-', '_').lower()}-{version}-"
    return wheelhouse.is_dir() and any(p.name.lower().startswith(stem) for p in wheelhouse.iterdir())


def ensure(cache: Path, url: str, rev: str) -> Path:
    """The mirror repository of url at rev under cache (built once; reused after)."""
    mirror = MIRRORS[key(url)]
    dest = cache / "mirrors" / key(url) / rev
    if (dest / ".patchkit-done").exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=dest.parent))
    try:
        hooks = [{"name": h["id"], "language": "python", **h} for h in mirror.hooks]
        (tmp / ".pre-commit-hooks.yaml").write_text(yaml.safe_dump(hooks, sort_keys=False))
        (tmp / "setup.py").write_text(
            "from setuptools import setup\n\n"
            f"setup(name={('patchkit-mirror-' + mirror.package)!r}, version='0', py_modules=[],\n"
            f"      install_requires=[{pin(mirror, rev)!r}])\n")
        repo = init(tmp)
        repo.add_all_and_commit(f"mirror of {url} at {rev}: {pin(mirror, rev)} from PyPI",
                                Identity("patchkit", "patchkit@invalid"), "2026-01-01T00:00:00+00:00")
        repo.tag(rev)
        repo.close()
        (tmp / ".patchkit-done").write_text("")
        try:
            os.rename(tmp, dest)
        except OSError:  # another run built it first
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def git_env(redirects: dict[str, Path]) -> dict[str, str]:
    """url.<mirror>.insteadOf <url> for each repository, as environment pre-commit passes to git."""
    env = {"GIT_CONFIG_COUNT": str(len(redirects))}
    for i, (url, path) in enumerate(sorted(redirects.items())):
        env[f"GIT_CONFIG_KEY_{i}"] = f"url.{path.as_uri()}.insteadOf"
        env[f"GIT_CONFIG_VALUE_{i}"] = url
    return env

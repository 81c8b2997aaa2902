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

One repository upstream runs on every file has no package on PyPI: Lucas-C/pre-commit-hooks
(its distribution would be named pre-commit-hooks, which PyPI gives to pre-commit's own). Its
remove-crlf hook is imitated: the mirror installs a module of ours that does what the hook
does (a text file with a CRLF line ending is rewritten with LF and the hook fails), and the
lint names it as imitated, never as the tool itself (DEVELOPERS.md: imitate only what cannot
run here, and say so).

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

from packaging.version import Version

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

    package: str  # the PyPI distribution; its version is the rev's (without a leading 'v')
    hooks: tuple[dict, ...]
    renamed: tuple[tuple[str, str], ...] = ()  # (first version, package) where the repository's pin changed name
    imitation: str = ""  # not on PyPI: the source of our module that does what its hooks do (see above)

    def says(self, version: str) -> str:
        """What runs, for the report: the pinned tool, or that patchkit imitates the hooks."""
        return f"patchkit's imitation; no package on PyPI at {version}" if self.imitation else pin(self, version)


# remove-crlf as Lucas-C/pre-commit-hooks has it (entry remove_crlf, types text): each file
# given that has a line ending in CRLF is rewritten with LF endings, named, and the hook fails.
_REMOVE_CRLF = '''"""patchkit's imitation of Lucas-C/pre-commit-hooks' remove-crlf (not on PyPI)."""
import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("filenames", nargs="*")
    parser.add_argument("--ignore_files", default="")
    args = parser.parse_args(argv)
    ignored = {f for f in args.ignore_files.split(",") if f}
    changed = []
    for name in args.filenames:
        if name in ignored:
            continue
        with open(name, "rb") as fh:
            data = fh.read()
        if b"\\r\\n" in data:
            with open(name, "wb") as fh:
                fh.write(data.replace(b"\\r\\n", b"\\n"))
            changed.append(name)
            print(f"Removing CRLF end-lines in: {name}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
'''


# How a mirror's one-line package is built: a PEP 517 backend of its own (pyproject.toml's
# backend-path), which writes the wheel (metadata, the tool as its one requirement, our module
# and console scripts for an imitation) with the standard library. setuptools took 1.7-2.7 s a
# mirror in a cold lint (an isolated build environment, then setuptools itself, #34 item 1);
# this takes a Python start. Its data is the mirror's mirror.json.
_BACKEND = '''"""Build the mirror's wheel (PEP 517): patchkit's lint mirror, described by mirror.json."""
import base64
import hashlib
import json
import os
import re
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _wheel(directory):
    with open(os.path.join(HERE, "mirror.json")) as fh:
        spec = json.load(fh)
    name = re.sub(r"[-_.]+", "_", spec["name"]).lower()
    info = f"{name}-{spec['version']}.dist-info"
    files = {f"{info}/METADATA": "Metadata-Version: 2.1\\nName: {}\\nVersion: {}\\n{}".format(
                 spec["name"], spec["version"], "".join(f"Requires-Dist: {r}\\n" for r in spec["requires"])),
             f"{info}/WHEEL": "Wheel-Version: 1.0\\nGenerator: patchkit\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
    if spec["scripts"]:
        files[f"{info}/entry_points.txt"] = "[console_scripts]\\n" + "".join(f"{s}\\n" for s in spec["scripts"])
    for module in spec["modules"]:
        with open(os.path.join(HERE, f"{module}.py")) as fh:
            files[f"{module}.py"] = fh.read()
    wheel = f"{name}-{spec['version']}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as out:
        for path, text in files.items():
            data = text.encode()
            out.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        out.writestr(f"{info}/RECORD", "\\n".join(record + [f"{info}/RECORD,,"]) + "\\n")
    return wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory)
'''
_PYPROJECT = ('[build-system]\nrequires = []\nbuild-backend = "patchkit_mirror_build"\nbackend-path = ["."]\n')

MIRRORS: dict[str, Mirror] = {
    "github.com/astral-sh/ruff-pre-commit": Mirror("ruff", (
        {"id": "ruff", "entry": "ruff check --force-exclude", "types_or": ["python", "pyi", "jupyter"],
         "require_serial": True},
        {"id": "ruff-format", "entry": "ruff format --force-exclude", "types_or": ["python", "pyi", "jupyter"],
         "require_serial": True})),
    "github.com/google/yapf": Mirror("yapf", ({"id": "yapf", "entry": "yapf", "args": ["-i"], "types": ["python"]},)),
    "github.com/pre-commit/mirrors-yapf": Mirror("yapf", (
        {"id": "yapf", "entry": "yapf", "args": ["-i"], "types": ["python"], "require_serial": False,
         "additional_dependencies": [], "minimum_pre_commit_version": "0"},)),
    "github.com/pycqa/isort": Mirror("isort", (
        {"id": "isort", "entry": "isort", "require_serial": True, "types_or": ["cython", "pyi", "python"],
         "args": ["--filter-files"], "minimum_pre_commit_version": "2.9.2"},)),
    "github.com/pycqa/autoflake": Mirror("autoflake", (
        {"id": "autoflake", "entry": "autoflake", "types": ["python"], "require_serial": True,
         "args": ["--in-place", "--expand-star-imports", "--remove-duplicate-keys", "--remove-unused-variables"]},)),
    "github.com/codespell-project/codespell": Mirror("codespell", (
        {"id": "codespell", "entry": "codespell", "types": ["text"]},)),
    "github.com/pre-commit/pre-commit-hooks": Mirror("pre-commit-hooks", tuple(_PCH)),
    "github.com/pre-commit/mirrors-clang-format": Mirror("clang-format", (
        {"id": "clang-format", "description": "", "entry": "clang-format -i",
         "types_or": ["c++", "c", "c#", "cuda", "java", "javascript", "json", "objective-c", "proto", "textproto"],
         "args": ["-style=file"], "require_serial": False, "additional_dependencies": [],
         "minimum_pre_commit_version": "2.9.2"},)),
    "github.com/cheshirekow/cmake-format-precommit": Mirror("cmake-format", (
        {"id": "cmake-format", "description": "cmake-format can format your listfiles nicely so that they don't "
         "look like crap.", "entry": "cmake-format --in-place", "types": ["cmake"]},
        {"id": "cmake-lint", "description": "cmake-lint will check your listfiles for style violations, common "
         "mistakes, and anti-patterns.", "entry": "cmake-lint", "types": ["cmake"]}),
        renamed=(("0.6.12", "cmakelang"),)),
    "github.com/executablebooks/mdformat": Mirror("mdformat", (
        {"id": "mdformat", "description": "CommonMark compliant Markdown formatter", "entry": "mdformat",
         "language_version": "python3", "types": ["markdown"], "minimum_pre_commit_version": "1.0.0"},)),
    "github.com/lucas-c/pre-commit-hooks": Mirror("patchkit-remove-crlf", (
        {"id": "remove-crlf", "name": "CRLF end-lines remover", "entry": "remove_crlf", "types": ["text"]},),
        imitation=_REMOVE_CRLF),
    "github.com/pre-commit/mirrors-mypy": Mirror("mypy", (
        {"id": "mypy", "entry": "mypy", "types_or": ["python", "pyi"],
         "args": ["--ignore-missing-imports", "--scripts-are-modules"], "require_serial": True,
         "additional_dependencies": [], "minimum_pre_commit_version": "2.9.2"},)),
}


def key(url: str) -> str:
    """A hook repository's URL as the table knows it: host/owner/name, lower case, no .git."""
    u = url.strip().rstrip("/")
    for prefix in ("https://", "http://", "git://", "ssh://git@", "git@"):
        if u.startswith(prefix):
            u = u[len(prefix):]
    u = u.replace(":", "/", 1) if u.startswith("github.com:") else u
    return (u[:-4] if u.endswith(".git") else u).lower()


def pin(mirror: Mirror, version: str) -> str:
    """The requirement a repository installs at the tool's version (`ruff==0.9.4` for ruff-pre-commit v0.9.4)."""
    package = mirror.package
    for first, name in mirror.renamed:
        if Version(version) >= Version(first):
            package = name
    return f"{package}=={version}"


def fingerprint(urls) -> str:
    """Changes when the content of these repositories' mirrors changes."""
    data = json.dumps({key(u): [MIRRORS[key(u)].package, MIRRORS[key(u)].hooks, MIRRORS[key(u)].imitation, _BACKEND]
                       for u in urls}, sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:12]


def mirror_rev(url: str, tag: str) -> str:
    """The rev pre-commit fetches from url's mirror for upstream's tag: the tag and the mirror's
    content, so that pre-commit's cache (by repository and rev) is not reused when the content
    changes, and only that repository's is not (a mirror added to the table leaves the others' be)."""
    return f"{tag}-patchkit.{fingerprint([url])}"


def ensure(cache: Path, url: str, rev: str, requirement: str) -> Path:
    """The mirror repository of url, tagged rev, that installs requirement, under cache (built once; reused after)."""
    mirror = MIRRORS[key(url)]
    dest = cache / "mirrors" / key(url) / rev
    if (dest / ".patchkit-done").exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=dest.parent))
    try:
        hooks = [{"name": h["id"], "language": "python", **h} for h in mirror.hooks]
        (tmp / ".pre-commit-hooks.yaml").write_text(yaml.safe_dump(hooks, sort_keys=False))
        if mirror.imitation:  # our module, its hooks' entries as console scripts; nothing from an index
            module = mirror.package.replace("-", "_")
            (tmp / f"{module}.py").write_text(mirror.imitation)
            spec = {"name": mirror.package, "requires": [], "modules": [module],
                    "scripts": [f"{h['entry']} = {module}:main" for h in mirror.hooks]}
        else:
            spec = {"name": "patchkit-mirror-" + mirror.package, "requires": [requirement], "modules": [], "scripts": []}
        (tmp / "mirror.json").write_text(json.dumps({**spec, "version": "0"}, indent=1) + "\n")
        (tmp / "patchkit_mirror_build.py").write_text(_BACKEND)
        (tmp / "pyproject.toml").write_text(_PYPROJECT)
        repo = init(tmp)
        repo.add_all_and_commit(f"mirror of {url} at {rev}: {requirement} from PyPI",
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

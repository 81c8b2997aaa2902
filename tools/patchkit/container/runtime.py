"""A Python runtime with pytest for small test images, taken from this machine, offline.

The container tests need a base image that can run pytest, and the tests run without
network: no registry to pull python:3.x from, no PyPI inside a build. The interpreter that
runs patchkit is already here, so the image gets a copy of it: its executable, its standard
library (without its tests, IDLE, tkinter and the other parts a test run never imports), the
shared libraries the executable and its extension modules link against (as ldd names them),
and pytest with its requirements from the environment patchkit runs in. Everything lands at
the path it has here, so the interpreter finds its prefix exactly as it does on this machine;
`/usr/bin/python3` points at it. The same Python minor version as the venv is guaranteed,
which pure-Python pytest needs; a Debian package would need apt at CI time and pin a version.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import proc

# Parts of the standard library that a pytest run never imports; together about half of it.
SKIP_STDLIB = {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip",
               "lib2to3", "pydoc_data", "__phello__"}
_LDD = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


@dataclass(frozen=True)
class Interpreter:
    executable: str  # the real file, symlinks resolved
    stdlib: str
    platstdlib: str
    site: str  # the first directory site.py adds: where pytest and .pth files go


def interpreter(python: str | None = None) -> Interpreter:
    """Where the base interpreter (not a venv) behind `python` keeps its parts."""
    exe = python or getattr(sys, "_base_executable", None) or sys.executable
    code = ("import json, os, site, sys, sysconfig; p = sysconfig.get_paths(); "
            "print(json.dumps([os.path.realpath(sys.executable), p['stdlib'], p['platstdlib'], "
            "(site.getsitepackages() or [p['purelib']])[0]]))")
    out = proc.run([exe, "-I", "-c", code]).stdout
    return Interpreter(*json.loads(out))


def shared_libraries(files: list[Path]) -> set[str]:
    """Every shared library (and the loader) that ldd says these ELF files need (one ldd for a
    batch of files: a toolchain has hundreds of programs)."""
    libs: set[str] = set()
    names = [str(f) for f in files]
    for at in range(0, len(names), 200):
        res = proc.run(["ldd", *names[at:at + 200]], check=False)
        libs |= {m.group(1) for m in map(_LDD.search, res.stdout.splitlines()) if m}
    return libs


def install_libraries(rootfs: Path, files: list[Path]) -> None:
    """The shared libraries these ELF files load (ldd here), copied into rootfs at their paths."""
    for lib in shared_libraries(files):
        _put(lib, rootfs)


def _put(src: str | Path, rootfs: Path, at: str | None = None) -> None:
    dest = rootfs / str(at or src).lstrip("/")
    if os.path.lexists(dest):  # already there (a toolchain's copy): never written through a link
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest)  # follows symlinks: the image gets the file, not a dangling link


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in SKIP_STDLIB or n.startswith("config-") or n.endswith((".opt-1.pyc", ".opt-2.pyc"))}


def distributions(top: str = "pytest") -> list[importlib.metadata.Distribution]:
    """`top` and everything it requires in this environment (markers evaluated here)."""
    from packaging.requirements import Requirement

    seen: dict[str, importlib.metadata.Distribution] = {}
    todo = [top]
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        dist = importlib.metadata.distribution(name)
        seen[key] = dist
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen.values())


def install(rootfs: Path, python: str | None = None, packages: str = "pytest") -> Interpreter:
    """Copy the interpreter, its trimmed standard library, its libraries and `packages` into rootfs."""
    it = interpreter(python)
    _put(it.executable, rootfs)
    for d in {it.stdlib, it.platstdlib}:
        shutil.copytree(d, rootfs / d.lstrip("/"), ignore=_ignore, dirs_exist_ok=True, symlinks=False)
    elf = [Path(it.executable), *Path(it.platstdlib, "lib-dynload").glob("*.so")]
    for lib in shared_libraries(elf):
        _put(lib, rootfs)
    for link in ("usr/bin/python3", "usr/bin/python"):
        target = rootfs / link
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(it.executable)
    site = rootfs / it.site.lstrip("/")
    site.mkdir(parents=True, exist_ok=True)
    for dist in distributions(packages):
        for f in dist.files or []:
            src = Path(dist.locate_file(f))
            if src.is_file() and "__pycache__" not in f.parts and not str(f).startswith(".."):
                _put(src, site, str(f))
    return it

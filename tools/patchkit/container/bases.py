"""Small base images, made here: busybox-static and a package tree (make bench and the tests).

A feature of the package, not a test helper: `make bench` times the patched image's build
from a small and from a 1 GiB base that it makes with this, and the container tests build
on the same images.

Made with buildah alone (no daemon): a scratch container, the files copied into its mount,
committed under a name. `ballast_mb` adds a file of that many MiB, for a large base.

`python=True` makes an image the delta can run tests in, the way the release image can:
this machine's Python and pytest (runtime.py), the package at `site_packages` on that
Python's path (a .pth file, since the release's Python version need not be this one), and a
stand-in module for everything the tree imports that the release has but the miniature does
not model (torch, transformers, the compiled bindings, the rest of tensorrt_llm). The
stand-ins are generated from the tree's imports, so they follow the miniature as it changes.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path, PurePosixPath

from .. import proc, pyimports
from . import runtime, toolchain

BUSYBOX = Path("/bin/busybox")
LDCONFIG = Path("/sbin/ldconfig")
APPLETS = ("sh", "sha256sum", "echo", "test", "cat", "rm", "rmdir")  # what the Containerfile's RUN lines use
# What a distribution's root file system has: a RUN step mounts over these, and where a base
# lacks them buildah makes them, in the new layer (a release image has them all).
MOUNT_POINTS = ("dev", "proc", "sys", "run", "etc/hosts", "etc/hostname", "etc/resolv.conf")
HAVE = {"pytest", "_pytest", "pluggy", "iniconfig", "packaging"}  # what runtime.install puts in

STAND_IN = '''"""Stand-in for {name}, which the release image has and the miniature does not model
(written by patchkit for its test images). Any attribute is a class; anything can be called."""


class _Anything(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(name, (_Instance,), {{}})


class _Instance(metaclass=_Anything):
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(name, (_Instance,), {{}})

    def __call__(self, *args, **kwargs):
        return args[0] if len(args) == 1 and not kwargs and callable(args[0]) else _Instance()

    def __getitem__(self, key):
        return _Instance()

    def __iter__(self):
        return iter(())


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Anything(name, (_Instance,), {{}})
'''


def stand_ins(tree: Path) -> dict[str, str]:
    """Files (path relative to site-packages -> text) for the modules tree imports and does not
    have, where the release has them (site-packages, the tree's top): a module the tree holds
    under a folder of its own (a test helper, upstream's tests/integration/defs imported by
    tests/unittest/conftest.py) is the tree's, and gets none (#31 item 15: a stand-in for it in
    site-packages would come first on sys.path and hide the real one)."""
    paths = [f.relative_to(tree).as_posix() for f in tree.rglob("*") if f.is_file() and ".git" not in f.parts]
    held = pyimports.Tree(paths)
    missing = set()
    for rel in (f for f in paths if f.endswith(".py")):
        try:
            text = (tree / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for imp in pyimports.imports(text, PurePosixPath(rel).parts[:-1]):
            top = imp.module.split(".")[0]
            if top in sys.stdlib_module_names or top in HAVE or held.root(rel, imp) not in ("", None):
                continue
            missing |= set(held.missing(rel, imp))
    files = {}
    for name in sorted(missing):
        parts = name.split(".")
        is_package = any(m.startswith(name + ".") for m in missing)
        rel = "/".join(parts) + ("/__init__.py" if is_package else ".py")
        files[rel] = STAND_IN.format(name=name)
    return files


def make_base(name: str, package_tree: Path | None, site_packages: str, *, package: str = "tensorrt_llm",
              replace: dict[str, str] | None = None, ballast_mb: int = 0, python: bool = False,
              with_shell: bool = True, wheel: Path | None = None) -> str:
    """Commit an image `name` whose site_packages holds package_tree/package (files in replace
    overridden), or the wheel installed there by pip (as upstream's release image has it: its
    .dist-info, RECORD and all; pip itself and ldconfig come along, for pip show and pip check;
    package_tree, when given with a wheel, is the tree whose imports the stand-ins serve)."""
    ctr = proc.run(["buildah", "from", "scratch"]).stdout.strip()
    try:
        mnt = Path(proc.run(["buildah", "mount", ctr]).stdout.strip())
        for point in MOUNT_POINTS:
            (mnt / point).parent.mkdir(parents=True, exist_ok=True)
            if point.startswith("etc/"):
                (mnt / point).touch()
            else:
                (mnt / point).mkdir()
        if with_shell:
            (mnt / "bin").mkdir()
            shutil.copy(BUSYBOX, mnt / "bin" / "busybox")
            for applet in APPLETS:
                (mnt / "bin" / applet).symlink_to("busybox")
        site = mnt / site_packages.lstrip("/")
        if wheel is not None:
            proc.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-compile",
                      "--disable-pip-version-check", "--target", str(site), str(wheel)])
            package_tree = package_tree or site
            (mnt / "sbin").mkdir(exist_ok=True)
            shutil.copy2(LDCONFIG, mnt / "sbin" / "ldconfig")  # static: it runs in an image without a libc
            (mnt / "etc" / "ld.so.conf.d").mkdir(parents=True, exist_ok=True)
        else:
            assert package_tree is not None
            shutil.copytree(package_tree / package, site / package)
        for rel, text in (replace or {}).items():
            (site / rel).write_text(text)
        if python:
            (mnt / "tmp").mkdir(mode=0o1777, exist_ok=True)  # pytest's capture needs a temporary directory
            os.chmod(mnt / "tmp", 0o1777)
            it = runtime.install(mnt)
            if wheel is not None:
                runtime.install(mnt, packages="pip")
                runtime.install_libraries(mnt, sorted(site.rglob("*.so")))  # the wheel's libraries' own needs
            (mnt / it.site.lstrip("/") / "release-dist-packages.pth").write_text(site_packages + "\n")
            for rel, text in stand_ins(package_tree).items():
                dest = site / rel
                if not dest.exists():
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_text(text)
        if ballast_mb:
            with open(mnt / "ballast.bin", "wb") as fh:
                for _ in range(ballast_mb):
                    fh.write(os.urandom(1 << 20))
        proc.run(["buildah", "umount", ctr])
        proc.run(["buildah", "commit", "-q", ctr, name])
    finally:
        proc.run(["buildah", "rm", ctr], check=False)
    return name


def make_devel(name: str) -> str:
    """Commit an image `name` with this machine's C++ toolchain, CMake, ccache and Python in it
    (toolchain.py): the stand-in for upstream's devel image."""
    ctr = proc.run(["buildah", "from", "scratch"]).stdout.strip()
    try:
        mnt = Path(proc.run(["buildah", "mount", ctr]).stdout.strip())
        toolchain.install(mnt)
        proc.run(["buildah", "umount", ctr])
        proc.run(["buildah", "config", "--env", "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", ctr])
        proc.run(["buildah", "commit", "-q", ctr, name])
    finally:
        proc.run(["buildah", "rm", ctr], check=False)
    return name

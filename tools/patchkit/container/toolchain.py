"""A stand-in devel image: this machine's C++ toolchain copied into an image (make bench, tests).

Upstream's wheel is built in its devel image (the toolchain, CMake, ccache); the miniature's
wheel needs the same kind of image, with a real compiler, and the tests run without network.
This machine's toolchain is copied in: the files of the Debian packages that own its g++,
binutils, C and C++ headers and runtime objects, CMake, Ninja, make and ccache (dpkg says
which), the shared libraries their programs load (ldd says which), busybox for /bin/sh, and
this machine's Python (runtime.py). Everything lands at the path it has here.

Why not mmdebstrap (bookworm, --variant=essential, the same tools): measured on this machine
(2 cores, shared), mmdebstrap took 42.8 s for a 483 MB tree, before any import into the store,
and needs the Debian mirror; the copy makes a 336 MB image in 36 s all told (most of it
buildah's commit), offline, with exactly the compiler this machine's host builds use, so a host
build and an image build of the same tree can be compared. It needs dpkg (a Debian machine).
"""
from __future__ import annotations

import compileall
import os
import shutil
from pathlib import Path

from .. import proc
from ..errors import CommandError, ToolMissing
from . import runtime

# The programs the image must have, and the files whose packages bring the headers, the C
# runtime objects and the libraries the linker needs. dpkg -S names the package of each.
PROGRAMS = ("g++", "gcc", "c++", "cc", "as", "ld", "cmake", "ctest", "ninja", "make", "ccache", "ldconfig")
COMPILER_FILES = ("cc1plus", "cc1", "collect2", "lto-wrapper", "liblto_plugin.so", "libstdc++.so", "libgcc.a",
                  "crt1.o", "crtbeginS.o", "libgcc_s.so.1", "libc.so.6", "libc.so", "libm.so")
HEADERS = ("/usr/include/stdio.h", "/usr/include/linux/limits.h")
# Parts of those packages a build never reads: documentation, manuals, translations.
SKIP_PREFIXES = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/locale/",
                 "/usr/share/lintian/", "/usr/share/bash-completion/", "/usr/share/emacs/", "/usr/share/vim/",
                 "/usr/share/aclocal/")
SKIP_PARTS = ("/plugin/include/", "/lto1", "lto-dump", "/libasan", "/libtsan", "/libhwasan", "/liblsan", "/libubsan")
MERGED_USR = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def packages() -> list[str]:
    """The Debian packages that own this machine's toolchain (ToolMissing without dpkg or a tool)."""
    if shutil.which("dpkg") is None:
        raise ToolMissing("dpkg is not here: the stand-in devel image copies a Debian machine's toolchain")
    paths = []
    for program in PROGRAMS:
        found = shutil.which(program)
        if found is None:
            raise ToolMissing(f"{program} is not installed: the stand-in devel image copies it from here")
        paths += [found, os.path.realpath(found)]  # the name's package (g++) and the program's (g++-12)
    for name in COMPILER_FILES:
        out = proc.run(["g++", f"-print-prog-name={name}" if "." not in name else f"-print-file-name={name}"]).stdout
        if out.strip().startswith("/"):
            paths += [os.path.normpath(out.strip()), os.path.realpath(out.strip())]
    paths += [p for p in HEADERS if Path(p).exists()]
    # dpkg knows a path by the spelling its package has (merged /usr: /bin/x or /usr/bin/x): ask
    # for both, in one call (each dpkg -S reads the whole database); an unknown one is skipped.
    spellings = {s for p in paths for s in (p, p.removeprefix("/usr") if p.startswith("/usr/") else "/usr" + p)}
    res = proc.run(["dpkg", "-S", *sorted(spellings)], check=False)
    owners = {pkg.strip().split(":")[0] for line in res.stdout.splitlines() if ": " in line
              for pkg in line.split(": ", 1)[0].split(",")}
    cmake_data = proc.run(["dpkg-query", "-W", "-f=${Depends}", "cmake"], check=False).stdout
    owners |= {d.split()[0] for d in cmake_data.split(",") if d.strip().startswith("cmake")}
    return sorted(owners)


def files_of(package: str) -> list[str]:
    try:
        out = proc.run(["dpkg-query", "-L", package]).stdout
    except CommandError as exc:
        raise ToolMissing(f"dpkg cannot list {package}: {exc.first_line()}") from exc
    return [p for p in out.splitlines()
            if p.startswith("/") and not p.startswith(SKIP_PREFIXES) and not any(s in p for s in SKIP_PARTS)]


def _inside(rootfs: Path, path: Path) -> bool:
    real = os.path.realpath(path)
    return real == str(rootfs) or real.startswith(str(rootfs) + os.sep)


def _copy(src: str, rootfs: Path, done: set[str]) -> None:
    """src at the same path under rootfs: a folder made, a file copied, a symlink made as it is
    here (and what it points to copied too). Never written through a link out of rootfs."""
    if src in done:
        return
    done.add(src)
    dest = rootfs / src.lstrip("/")
    if not _inside(rootfs, dest.parent):
        return
    if os.path.islink(src):
        target = os.readlink(src)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists() and not dest.is_symlink():
            dest.symlink_to(target)
        hop = target if target.startswith("/") else os.path.normpath(os.path.join(os.path.dirname(src), target))
        if os.path.lexists(hop):
            _copy(hop, rootfs, done)
    elif os.path.isdir(src):
        if _inside(rootfs, dest):
            dest.mkdir(parents=True, exist_ok=True)
    elif os.path.isfile(src):
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists() and _inside(rootfs, dest.parent):
            shutil.copy2(src, dest)


def install(rootfs: Path) -> list[str]:
    """Copy the toolchain, the libraries its programs load, busybox and Python into rootfs; the
    packages copied."""
    for name in MERGED_USR:  # /lib -> usr/lib as here: a file of /lib lands in usr/lib
        here = Path("/") / name
        if here.is_symlink():
            target = os.readlink(here).lstrip("/")
            (rootfs / target).mkdir(parents=True, exist_ok=True)
            (rootfs / name).symlink_to(target)
    done: set[str] = set()
    pkgs = packages()
    for pkg in pkgs:
        for path in files_of(pkg):
            _copy(path, rootfs, done)
    for program in PROGRAMS:  # c++ and cc are the alternatives system's links, in no package's list
        found = shutil.which(program)
        if found:
            _copy(found, rootfs, done)
    elf = [rootfs / p.lstrip("/") for p in done if os.path.isfile(p) and not os.path.islink(p) and os.access(p, os.X_OK)]
    for lib in runtime.shared_libraries([f for f in elf if f.is_file()]):
        _copy(lib, rootfs, done)
    (rootfs / "usr" / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2("/bin/busybox", rootfs / "usr" / "bin" / "busybox")
    for folder in ("usr/bin", "bin"):  # /bin/sh and the rest, with or without a merged /usr
        (rootfs / folder).mkdir(parents=True, exist_ok=True)
        for applet in ("sh", "cp", "rm", "mkdir", "ln", "cat", "env", "ls", "mv", "touch", "sha256sum", "test"):
            link = rootfs / folder / applet
            if not link.exists() and not link.is_symlink():
                link.symlink_to("/usr/bin/busybox")
    (rootfs / "tmp").mkdir(mode=0o1777, exist_ok=True)
    os.chmod(rootfs / "tmp", 0o1777)
    it = runtime.install(rootfs)
    runtime.install(rootfs, packages="pip")  # upstream's release stage pip-installs the wheel in it
    site = rootfs / it.site.lstrip("/")
    # pip's bytecode, as a devel image has it: else pip's first run there writes it (5 MiB).
    compileall.compile_dir(site / "pip", ddir=f"{it.site}/pip", quiet=1)
    return pkgs

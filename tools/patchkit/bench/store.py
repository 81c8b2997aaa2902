"""make bench's private image store, and the mounts it must never leave behind (#24 item 8).

With overlay storage, containers/storage mounts its overlay folder onto itself (to make it
private) and each container's layers below it. buildah undoes that when it shuts the store
down; skopeo does not (a `skopeo copy containers-storage:...` leaves the folder mounted), and
a run killed midway undoes nothing. A mount left there makes `rm -rf build` fail with
"Device or resource busy" until someone runs umount by hand. So the store is shut down when
the bench's container section ends, however it ends (`buildah umount --all`: every container
unmounted, then the store shut down); and before the bench removes anything under its
folder, whatever a killed run left mounted there is shut down or unmounted first.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

from .. import proc
from ..errors import CommandError, Conflict, Hint

CONF = "storage.conf"
_ENV = ("CONTAINERS_STORAGE_CONF", "BUILDAH_ISOLATION")


@contextlib.contextmanager
def private(store: Path, driver: str) -> Iterator[Path]:
    """A new, empty store in store/ (its storage.conf yielded), used by buildah and skopeo
    while the context lasts (CONTAINERS_STORAGE_CONF, chroot isolation); shut down on every
    way out, so that nothing under store/ stays mounted."""
    sweep(store)
    if store.exists():
        shutil.rmtree(store)
    store.mkdir(parents=True)
    conf = store / CONF
    conf.write_text(f'[storage]\ndriver = "{driver}"\ngraphroot = "{store}/graph"\nrunroot = "{store}/run"\n')
    saved = {k: os.environ.get(k) for k in _ENV}
    os.environ.update(CONTAINERS_STORAGE_CONF=str(conf), BUILDAH_ISOLATION="chroot")
    try:
        yield conf
    finally:
        try:
            shutdown(conf)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def shutdown(conf: Path) -> None:
    """Shut the store of this storage.conf down: its containers unmounted, its overlay folder
    no longer mounted onto itself (containers/storage's Shutdown, which `buildah umount --all`
    runs). Quiet when buildah is not here or the store was never opened."""
    if not conf.is_file() or shutil.which("buildah") is None:
        return
    proc.run(["buildah", "umount", "--all"], env={**os.environ, "CONTAINERS_STORAGE_CONF": str(conf)}, check=False)


def mounts_under(path: Path) -> list[Path]:
    """The mount points at or under path in this process's mount namespace, deepest first."""
    top = Path(os.path.realpath(path))
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:  # not Linux: containers/storage's overlay is not here either
        return []
    found = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4:
            point = Path(_unescape(fields[4]))
            if point == top or top in point.parents:
                found.append(point)
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def sweep(path: Path) -> None:
    """Nothing mounted under path any more (what a killed run left): each store there shut
    down through buildah, then anything still mounted unmounted, deepest first. A mount that
    cannot be removed is one line naming it and the command that removes it."""
    if not mounts_under(path):
        return
    for conf in (path / CONF, path / "containers" / CONF):
        shutdown(conf)
    for point in mounts_under(path):
        try:
            proc.run(["umount", str(point)])
        except CommandError as exc:
            raise Conflict(f"{point} is still mounted (left by a run that was killed?) and umount failed: "
                           f"{exc.stderr.strip() or exc.stdout.strip()}",
                           hint=Hint(None, also=f"after unmounting it as the user who mounted it: "
                                                f"umount {shlex.quote(str(point))}")) from None


def _unescape(field: str) -> str:
    """A mountinfo path: space, tab, newline and backslash are written as octal escapes."""
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")

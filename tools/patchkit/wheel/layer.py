"""The layer that carries a wheel into the release image: only what differs from the base.

The base's installed package is read in the base itself (its Python's importlib.metadata: the
distribution's version, where it lives, its RECORD, and the sha256 of every file it installed),
and compared with the wheel's files by content: the layer holds the wheel's files whose bytes
differ from the installed ones (a new file too), removes the installed files the wheel no
longer has (and the bytecode compiled from a module it changes or removes), and rewrites the
.dist-info's RECORD so that it lists what is installed now, with its hashes: pip show and pip
check in the image stay true. A base whose installed version is not the wheel's is refused,
naming both: another release would break the ABI the rest of the image was built against.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..container.builders import Builder
from ..errors import Conflict, NotFound

# pip's own files in a .dist-info: they stay as the base has them (RECORD is rewritten).
PIP_FILES = ("INSTALLER", "REQUESTED", "direct_url.json")
PROBE = """\
import hashlib, importlib.metadata as md, json, os, sys
try:
    d = md.distribution(sys.argv[1])
except md.PackageNotFoundError:
    print(json.dumps({"found": False}))
    raise SystemExit(0)
files = {}
for f in d.files or []:
    p = str(d.locate_file(f))
    if os.path.isfile(p) and not os.path.islink(p):
        with open(p, "rb") as fh:
            data = fh.read()
        files[str(f)] = [hashlib.sha256(data).hexdigest(), len(data)]
record = next((str(f) for f in d.files or [] if str(f).endswith(".dist-info/RECORD")), "")
print(json.dumps({"found": True, "version": d.version, "location": str(d.locate_file("")), "record": record,
                  "record_text": d.read_text("RECORD") or "", "files": files}))
"""


@dataclass(frozen=True)
class Installed:
    """The package as the base has it installed."""

    version: str
    location: str  # its site-packages folder
    record: str  # the RECORD's path, relative to location
    record_text: str
    files: dict[str, tuple[str, int]]  # path relative to location -> (sha256, size)


def installed(builder: Builder, image: str, distribution: str) -> Installed:
    """What the image has installed of the distribution (NotFound when it has none)."""
    res = builder.run(image, ["python3", "-c", PROBE, distribution], mounts=[], workdir="/", env={})
    lines = res.stdout.strip().splitlines()
    if res.returncode != 0 or not lines:
        raise NotFound(f"cannot read the installed {distribution} in {image}: "
                       f"{(res.stderr or res.stdout).strip().splitlines()[-1:] or ['python3 said nothing']}")
    data = json.loads(lines[-1])
    if not data.get("found"):
        raise NotFound(f"{image} has no {distribution} installed (by pip): there is nothing to lay the wheel over")
    return Installed(data["version"], data["location"], data["record"], data["record_text"],
                     {k: (v[0], v[1]) for k, v in data["files"].items()})


@dataclass
class Layer:
    """What the image's new layer does to the installed package."""

    version: str
    copied: dict[str, bytes] = field(default_factory=dict)  # path relative to site-packages -> bytes
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0  # files of the wheel the base already has, byte for byte
    record: str = ""  # the RECORD's path
    libraries: list[str] = field(default_factory=list)  # shared libraries among the copied: ldconfig

    @property
    def copied_bytes(self) -> int:
        return sum(len(d) for d in self.copied.values())


def plan(wheel: Path, base: Installed, image: str) -> Layer:
    """The layer that makes base's installed package the wheel's (see the module)."""
    files = _wheel_files(wheel)
    version = _metadata_version(files)
    if version != base.version:
        raise Conflict(f"{image} has tensorrt_llm {base.version} installed, the wheel {wheel.name} is {version}: "
                       "laying another release's files over it would break the ABI the rest of the image was "
                       "built against; use the matching BASE, or build the wheel at its release")
    record = next((p for p in files if p.endswith(".dist-info/RECORD")), base.record)
    layer = Layer(version, record=record)
    for path, data in files.items():
        if path == record:
            continue
        if base.files.get(path, ("",))[0] == hashlib.sha256(data).hexdigest():
            layer.unchanged += 1
            continue
        layer.copied[path] = data
    info = PurePosixPath(record).parent.as_posix()
    for path in sorted(base.files):
        p = PurePosixPath(path)
        if path in files or path == base.record or (p.parent.as_posix() == info and p.name in PIP_FILES):
            continue
        if p.parts[0] == "..":  # a console script pip made outside site-packages from the entry points
            continue
        if p.suffix == ".pyc" and p.parent.name == "__pycache__":
            source = (p.parent.parent / (p.name.split(".", 1)[0] + ".py")).as_posix()
            if source in files and source not in layer.copied:
                continue  # the bytecode of a module the wheel leaves as it is
        layer.removed.append(path)
    layer.libraries = sorted(p for p in layer.copied if ".so" in PurePosixPath(p).suffixes)
    layer.copied[record] = _record(base, files, layer, record).encode()
    return layer


def _wheel_files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist() if not i.is_dir()}


def _metadata_version(files: dict[str, bytes]) -> str:
    meta = next((d for p, d in files.items() if p.endswith(".dist-info/METADATA")), b"")
    return next((ln.split(":", 1)[1].strip() for ln in meta.decode("utf-8", "replace").splitlines()
                 if ln.startswith("Version:")), "")


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _record(base: Installed, files: dict[str, bytes], layer: Layer, record: str) -> str:
    """RECORD as pip would have written it for the wheel over this base: each of the wheel's
    files with its hash and size, pip's own files and the bytecode that stays as the base lists
    them, and RECORD itself without a hash."""
    rows = {path: (_hash(data), str(len(data))) for path, data in files.items() if path != record}
    gone = set(layer.removed)
    for row in csv.reader(io.StringIO(base.record_text)):
        if row and row[0] not in rows and row[0] not in gone and row[0] != base.record and row[0] in base.files:
            rows[row[0]] = (row[1] if len(row) > 1 else "", row[2] if len(row) > 2 else "")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for path in sorted(rows):
        writer.writerow([path, *rows[path]])
    writer.writerow([record, "", ""])
    return out.getvalue()

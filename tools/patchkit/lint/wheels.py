"""The wheelhouse the hooks' tools install from, and fetching into it what upstream's pins need.

pre-commit installs each hook's tool with pip from the wheelhouse alone (no index: your pip
configuration never shapes a verdict). Which tools, at which versions, is what upstream's
config at the ref pins; `make setup` warms the wheelhouse with today's pins
(lint/wheelhouse.txt), and a pin it lacks (upstream bumped a rev) is fetched on first use with
pip's own configuration (PIP_INDEX_URL and friends, pip.conf), kept there per version. A pin
that cannot be fetched (offline, no such release) leaves its hooks "not run", with pip's reason
and the command that fetches it.
"""
from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion

from .. import proc
from ..envs import pip_reason

def has(house: Path, requirement: str) -> bool:
    """Whether the wheelhouse holds a wheel that satisfies the requirement (`ruff==0.9.4`, `tomli`)."""
    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return False
    name = canonicalize_name(req.name)
    for p in house.glob("*.whl") if house.is_dir() else ():
        try:
            wname, version, _build, _tags = parse_wheel_filename(p.name)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if wname == name and req.specifier.contains(version, prereleases=True):
            return True
    return False


def command(house: Path, requirement: str) -> list[str]:
    """The pip command that puts the requirement's wheels into the wheelhouse (pip's own configuration)."""
    return [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--only-binary", ":all:",
            "--dest", str(house), requirement]


def fetch(house: Path, requirements: list[str]) -> dict[str, str]:
    """Fetch each requirement's wheels (and its dependencies') into the wheelhouse; those that
    could not be, with pip's reason and the command that fetches them."""
    failed: dict[str, str] = {}
    for req in requirements:
        tmp = Path(tempfile.mkdtemp(prefix=".fetch-", dir=house))
        try:
            cmd = command(tmp, req)
            res = proc.run(cmd, check=False)
            if res.returncode != 0:
                failed[req] = (f"{req} is not in the wheelhouse {house} and pip could not fetch it "
                               f"({pip_reason(res.stdout + chr(10) + res.stderr)}); fetch it with: "
                               f"{shlex.join(command(house, req))}")
                continue
            for wheel in tmp.iterdir():  # each wheel whole, by rename: a concurrent run sees it or not
                if not (house / wheel.name).exists():
                    wheel.replace(house / wheel.name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return failed

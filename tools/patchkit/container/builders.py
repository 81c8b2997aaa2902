"""Image builders behind one small interface, chosen from a registry by name.

docker and podman share a command line; buildah runs without a daemon (chroot isolation,
any storage driver its storage.conf names). A builder is available when its client runs and,
for docker, when a daemon answers.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Protocol

from .. import proc
from ..errors import CommandError, ToolMissing


class Builder(Protocol):
    name: str

    def available(self) -> bool: ...
    def build_command(self, context: Path, iidfile: Path) -> list[str]: ...
    def build(self, context: Path, iidfile: Path) -> str: ...
    def tag(self, image_id: str, name: str) -> None: ...
    def untag(self, name: str) -> None: ...
    def digest(self, image: str) -> str: ...
    def push(self, name: str, dest: str, tls_verify: bool) -> None: ...


class _Cli:
    name = ""

    def _run(self, *args: str, check: bool = True) -> proc.Result:
        return proc.run([self.name, *args], check=check)

    def build(self, context: Path, iidfile: Path) -> str:
        proc.run(self.build_command(context, iidfile))
        return iidfile.read_text().strip()

    def tag(self, image_id: str, name: str) -> None:
        self._run("tag", image_id, name)


class DockerLike(_Cli):
    """docker or podman."""

    def __init__(self, name: str) -> None:
        self.name = name

    def available(self) -> bool:
        if shutil.which(self.name) is None:
            return False
        return self._run("info", check=False).returncode == 0  # the docker client alone cannot build

    def build_command(self, context: Path, iidfile: Path) -> list[str]:
        return [self.name, "build", "--iidfile", str(iidfile), "-f", str(context / "Containerfile"), str(context)]

    def untag(self, name: str) -> None:
        self._run("rmi", name, check=False)

    def digest(self, image: str) -> str:
        if self._run("image", "inspect", image, check=False).returncode != 0:
            self._run("pull", image)
        res = self._run("image", "inspect", "--format", "{{range .RepoDigests}}{{.}} {{end}}", image)
        found = res.stdout.split()
        return found[0].split("@", 1)[-1] if found else self._run("image", "inspect", "--format", "{{.Id}}", image).stdout.strip()

    def push(self, name: str, dest: str, tls_verify: bool) -> None:
        self._run("tag", name, dest)
        tls = [] if self.name == "docker" else [f"--tls-verify={str(tls_verify).lower()}"]  # docker: daemon config
        self._run("push", *tls, dest)


class Buildah(_Cli):
    name = "buildah"

    def available(self) -> bool:
        return shutil.which("buildah") is not None and self._run("--version", check=False).returncode == 0

    def build_command(self, context: Path, iidfile: Path) -> list[str]:
        return ["buildah", "bud", "--isolation", "chroot", "--layers=false", "--iidfile", str(iidfile),
                "-f", str(context / "Containerfile"), str(context)]

    def untag(self, name: str) -> None:
        self._run("rmi", name, check=False)

    def digest(self, image: str) -> str:
        if self._run("inspect", "--type", "image", image, check=False).returncode != 0:
            self._run("pull", "-q", image)
        return self._run("inspect", "--type", "image", "--format", "{{.FromImageDigest}}", image).stdout.strip()

    def push(self, name: str, dest: str, tls_verify: bool) -> None:
        self._run("push", f"--tls-verify={str(tls_verify).lower()}", name, f"docker://{dest}")


BUILDERS: dict[str, Builder] = {"docker": DockerLike("docker"), "podman": DockerLike("podman"), "buildah": Buildah()}


def pick(name: str | None) -> Builder:
    """The named builder, or the first that works here; ToolMissing when none does."""
    if name:
        if name not in BUILDERS:
            raise ToolMissing(f"unknown BUILDER {name!r} (known: {', '.join(BUILDERS)})")
        if not BUILDERS[name].available():
            raise ToolMissing(f"BUILDER={name} does not work on this machine")
        return BUILDERS[name]
    for builder in BUILDERS.values():
        try:
            if builder.available():
                return builder
        except (CommandError, ToolMissing):
            continue
    raise ToolMissing("no image builder works here (docker, podman or buildah)")

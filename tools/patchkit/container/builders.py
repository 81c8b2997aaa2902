"""Image builders behind one small interface, chosen from a registry by name.

docker and podman share a command line; buildah runs without a daemon (chroot isolation,
any storage driver its storage.conf names). A builder is usable when its client runs and can
reach its store (buildah, podman) or daemon (docker). Every failure of a builder becomes one
line carrying the builder's own reason (see reason()): 4 when an image or registry cannot be
reached, 5 when the builder itself does not work, 3 when a build step fails.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Protocol

from .. import proc
from ..errors import BadInput, CommandError, NotFound, ToolMissing


@dataclass(frozen=True)
class Mount:
    host: Path
    at: str
    read_only: bool = True

    def spec(self) -> str:
        return f"{self.host}:{self.at}" + (":ro" if self.read_only else "")


@dataclass(frozen=True)
class Image:
    """An image as the builder's store holds it."""

    name: str
    id: str
    digest: str
    labels: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # its config's Env: what a process in it starts with


def _env(pairs: list[str] | None) -> dict[str, str]:
    """An image config's Env (["KEY=value", ...]) as a dict."""
    return dict(p.split("=", 1) for p in pairs or [] if "=" in p)


class Builder(Protocol):
    name: str

    def problem(self) -> str | None: ...  # why it does not work here; None when it does
    def build_command(self, context: Path, iidfile: Path) -> list[str]: ...
    def build(self, context: Path, iidfile: Path) -> str: ...
    def tag(self, image_id: str, name: str) -> None: ...
    def inspect(self, image: str) -> Image | None: ...  # None: not in the local store
    def pull(self, image: str) -> None: ...
    def push(self, name: str, dest: str, tls_verify: bool) -> None: ...
    def run(self, image: str, argv: list[str], *, mounts: list[Mount], workdir: str, env: dict[str, str],
            on_line: Callable[[str], None] | None = None,
            offline: bool = False) -> proc.Result: ...  # never raises on argv's own exit code


_ERROR = re.compile(r"^(?:Error(?: response from daemon)?|error|ERROR|ERRO\[\d+\]|FATA\[\d+\]):?\s+(.*)$")
_STEP = re.compile(r"^STEP (\d+/\d+): (.*)$")
_EXITED = re.compile(r"(process exited with error|subprocess exited with status).*$")
_EXIT_STATUS = re.compile(r"^Error: exit status \d+$")
_LOGRUS = re.compile(r'level=(?:error|fatal) msg="((?:[^"\\]|\\.)*)"')


def reason(exc: CommandError) -> str:
    """The builder's own reason for a failure: its last error line, not its first line of progress
    ("Trying to pull ...", "Getting image source signatures")."""
    for text in (exc.stderr, exc.stdout):
        found = [m.group(1) for m in map(_ERROR.match, (ln.strip() for ln in text.splitlines())) if m]
        found = found or [m.group(1).replace('\\"', '"') for m in map(_LOGRUS.search, text.splitlines()) if m]
        if found:
            return found[-1].strip()
    for text in (exc.stderr, exc.stdout):
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if lines:
            return lines[-1]
    return f"{exc.cmd[0]} exited {exc.returncode}"


def build_reason(exc: CommandError) -> str:
    """Why a build failed: the step, and what the step itself said (buildah's own verdict only
    repeats the whole RUN line and "exit status 1")."""
    lines = [ln.strip() for ln in (exc.stdout + "\n" + exc.stderr).splitlines() if ln.strip()]
    steps = [(i, m) for i, m in ((i, _STEP.match(ln)) for i, ln in enumerate(lines)) if m]
    if not steps:
        return reason(exc)
    at, step = steps[-1]
    said = [_EXITED.sub("", ln).strip() for ln in lines[at + 1:] if not _ERROR.match(ln)]
    said = [ln for ln in said if ln]
    what = step.group(2) if len(step.group(2)) <= 48 else step.group(2)[:45] + "..."
    return f"STEP {step.group(1)} ({what}): {said[-1] if said else reason(exc)}"


class _Cli:
    name = ""

    def _run(self, *args: str, check: bool = True) -> proc.Result:
        return proc.run([self.name, *args], check=check)

    def problem(self) -> str | None:
        if shutil.which(self.name) is None:
            return f"{self.name} is not installed or not on PATH"
        try:
            self._run(*self._probe)
        except CommandError as exc:
            return reason(exc)
        return None

    def build(self, context: Path, iidfile: Path) -> str:
        proc.run(self.build_command(context, iidfile))  # a CommandError: the caller says what failed
        return iidfile.read_text().strip()

    def tag(self, image_id: str, name: str) -> None:
        self._run("tag", image_id, name)

    def pull(self, image: str) -> None:
        try:
            self._run("pull", "-q", image)
        except CommandError as exc:
            raise NotFound(f"cannot pull {image} with {self.name}: {reason(exc)}") from exc


class DockerLike(_Cli):
    """docker or podman."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._probe = ("info",)  # the docker client alone cannot build: a daemon must answer

    def build_command(self, context: Path, iidfile: Path) -> list[str]:
        return [self.name, "build", "--iidfile", str(iidfile), "-f", str(context / "Containerfile"), str(context)]

    def inspect(self, image: str) -> Image | None:
        res = self._run("image", "inspect", image, check=False)
        if res.returncode != 0:
            return None
        data = json.loads(res.stdout)[0]
        digests = [d.split("@", 1)[-1] for d in data.get("RepoDigests") or []]
        config = data.get("Config") or {}
        return Image(image, data["Id"], digests[0] if digests else data["Id"],
                     dict(config.get("Labels") or {}), _env(config.get("Env")))

    def push(self, name: str, dest: str, tls_verify: bool) -> None:
        self._run("tag", name, dest)
        tls = [] if self.name == "docker" else [f"--tls-verify={str(tls_verify).lower()}"]  # docker: daemon config
        try:
            self._run("push", *tls, dest)
        except CommandError as exc:
            raise NotFound(f"push to {dest} failed: {reason(exc)}") from exc

    def run_command(self, image: str, argv: list[str], *, mounts: list[Mount], workdir: str,
                    env: dict[str, str]) -> list[str]:
        return [self.name, "run", "--rm", "--network=none", *(a for m in mounts for a in ("-v", m.spec())),
                "-w", workdir, *(a for k, v in env.items() for a in ("-e", f"{k}={v}")), image, *argv]

    def run(self, image: str, argv: list[str], *, mounts: list[Mount], workdir: str, env: dict[str, str],
            on_line: Callable[[str], None] | None = None, offline: bool = False) -> proc.Result:
        """argv in the image (never with network: run_command says --network=none); with
        on_line, its output a line at a time as it comes (stdout and stderr merged)."""
        cmd = self.run_command(image, argv, mounts=mounts, workdir=workdir, env=env)
        return proc.run_lines(cmd, on_line) if on_line else proc.run(cmd, check=False)


class Buildah(_Cli):
    name = "buildah"
    _probe = ("info",)  # reads storage.conf and opens the store: a broken store shows here

    def build_command(self, context: Path, iidfile: Path) -> list[str]:
        return ["buildah", "bud", "--isolation", "chroot", "--layers=false", "--iidfile", str(iidfile),
                "-f", str(context / "Containerfile"), str(context)]

    def inspect(self, image: str) -> Image | None:
        res = self._run("inspect", "--type", "image", image, check=False)
        if res.returncode != 0:
            return None
        data = json.loads(res.stdout)
        config = data["OCIv1"].get("config", {})
        return Image(image, data["FromImageID"], data["FromImageDigest"],
                     dict(config.get("Labels") or {}), _env(config.get("Env")))

    def push(self, name: str, dest: str, tls_verify: bool) -> None:
        try:
            self._run("push", "-q", f"--tls-verify={str(tls_verify).lower()}", name, f"docker://{dest}")
        except CommandError as exc:
            raise NotFound(f"push to {dest} failed: {reason(exc)}") from exc

    def run(self, image: str, argv: list[str], *, mounts: list[Mount], workdir: str, env: dict[str, str],
            on_line: Callable[[str], None] | None = None, offline: bool = False) -> proc.Result:
        """`buildah from` + `buildah run` (chroot isolation, so no daemon and no network
        namespace: chroot cannot give one) + `buildah rm`. offline: buildah runs in a network
        namespace of its own (unshare --net: root only; see wheel/place.py), so argv has no
        network. on_line: argv's output a line at a time as it comes (stdout and stderr merged)."""
        try:
            ctr = self._run("from", "--pull=never", "-q", image).stdout.strip()
        except CommandError as exc:
            raise NotFound(f"cannot start {image} with buildah: {reason(exc)}") from exc
        try:
            missing = self._not_found(ctr, image, argv[0])
            if missing:
                return proc.Result(("buildah", "run", ctr, "--", *argv), 127, "", missing)
            cmd = [*(["unshare", "--net", "--"] if offline else []), "buildah", "run", "--isolation", "chroot",
                   *(a for m in mounts for a in ("-v", m.spec())), "--workingdir", workdir,
                   *(a for k, v in env.items() for a in ("--env", f"{k}={v}")), ctr, "--", *argv]
            res = proc.run_lines(cmd, on_line) if on_line else proc.run(cmd, check=False)
            # buildah's own epilogue ("subprocess exited with status 1", "Error: exit status 1")
            # says nothing the exit code does not; what the process said is what counts.
            said = [_EXITED.sub("", ln).rstrip() for ln in res.stderr.splitlines() if not _EXIT_STATUS.match(ln.strip())]
            return proc.Result(res.cmd, res.returncode, res.stdout, "\n".join(ln for ln in said if ln))
        finally:
            self._run("rm", ctr, check=False)


    def _not_found(self, ctr: str, image: str, command: str) -> str:
        """Why the command cannot start in the container: it is on no directory of the image's
        PATH (looked up in its files, symlinks followed inside them); '' when it is there, or when
        the files cannot be read. Asked before the run, because buildah's chroot runner can exit
        before it relays what the failed exec said (its stdio relay races its exit: under load
        the reason was lost, and the delta said no more than 'exit 1')."""
        found = self.inspect(image)
        path = (found.env.get("PATH") if found else None) or DEFAULT_PATH
        mounted = self._run("mount", ctr, check=False)
        if mounted.returncode != 0:
            return ""
        try:
            root = Path(mounted.stdout.strip())
            dirs = [""] if "/" in command else [d for d in path.split(":") if d.startswith("/")]
            if any(_executable_in(root, f"{d}/{command}" if d else command) for d in dirs):
                return ""
        finally:
            self._run("umount", ctr, check=False)
        return (f"{command}: not found in the image" if "/" in command
                else f"{command}: not found on the image's PATH ({path})")


# What buildah runs a process with when the image's config sets no PATH.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _executable_in(root: Path, path: str, hops: int = 40) -> bool:
    """Whether path names an executable file in the file tree at root, its symlinks resolved
    inside that tree (an absolute link target is the image's path, not this machine's)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    at: list[str] = []
    while parts:
        name = parts.pop(0)
        if name == "..":
            at = at[:-1]
            continue
        here = root.joinpath(*at, name)
        if here.is_symlink():
            if hops <= 0:
                return False
            hops -= 1
            target = os.readlink(here)
            parts = [p for p in target.split("/") if p not in ("", ".")] + parts
            at = [] if target.startswith("/") else at
            continue
        if not here.exists():
            return False
        at.append(name)
    final = root.joinpath(*at)
    return final.is_file() and os.access(final, os.X_OK)


def base_image(builder: Builder, base: str) -> Image:
    """The base as the builder's store holds it, pulled when it is not there yet."""
    found = builder.inspect(base)
    if found is None:
        builder.pull(base)
        found = builder.inspect(base)
    if found is None:
        raise NotFound(f"{builder.name} pulled {base} but cannot find it in its store")
    return found


BUILDERS: dict[str, Builder] = {"docker": DockerLike("docker"), "podman": DockerLike("podman"), "buildah": Buildah()}


def pick(name: str | None) -> Builder:
    """The named builder, or the first that works here; ToolMissing (with the reason) when none does."""
    if name:
        if name not in BUILDERS:
            # A name outside the registry is bad input (exit 2), as argparse says of a bad choice;
            # exit 5 is for a known builder that does not work here (#24 item 6).
            raise BadInput(f"unknown image builder {name!r} (known: {', '.join(BUILDERS)})", setting="builder")
        problem = BUILDERS[name].problem()
        if problem:
            raise ToolMissing(f"{name} does not work on this machine: {problem}", setting="builder")
        return BUILDERS[name]
    problems = []
    for builder in BUILDERS.values():
        problem = builder.problem()
        if problem is None:
            return builder
        problems.append(f"{builder.name}: {problem}")
    raise ToolMissing("no image builder works here (docker, podman or buildah)" +
                      (f"; {'; '.join(problems)}" if problems else ""))

"""make container: the patched image, built from a rendered context, tagged only on success."""
from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import jinja2

from .. import __version__, atomic, progress, scratch, series, stack
from ..wheel import command as wheel_cmd, layer as wheel_layer
from ..errors import CommandError, Conflict, Hint, NotFound, ToolMissing, UserError
from ..git import Repo
from ..model import PatchSet
from ..upstream import base_of, refuse_symlinked_paths
from .builders import Builder, base_image, build_reason, pick, reason

TEMPLATE = Path("overlay/Containerfile.j2")
IMAGE_REPO = "localhost/patchkit"


@dataclass(frozen=True)
class PackageFile:
    path: str  # relative to site-packages, e.g. tensorrt_llm/_torch/pyexecutor/_util.py
    preimage_sha256: str | None  # None: the patches add this file
    removed: bool = False  # the stack deletes it, or renames it away: the image loses it too


@dataclass
class ContainerResult:
    target: str
    base: str
    image: str
    context: str
    files: list[PackageFile]
    builder: str | None = None
    image_id: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    command: str = ""
    wheel: dict = field(default_factory=dict)  # a stack that needs a wheel: the wheel and what of it the layer holds


@dataclass(frozen=True)
class Carried:
    """The wheel an image carries (a stack that needs a wheel build), and its layer over the base."""

    path: Path
    info: dict  # its wheel.json
    layer: wheel_layer.Layer
    installed: wheel_layer.Installed


def image_name(ps: PatchSet, base: str) -> str:
    """<IMAGE_REPO>/<base name>:<base tag>-<12 hex of the patch set hash>: same inputs, same tag."""
    name, _, tag = base.rpartition(":") if ":" in base.rsplit("/", 1)[-1] else (base, "", "latest")
    return f"{IMAGE_REPO}/{name.rsplit('/', 1)[-1]}:{tag}-{ps.content_hash[:12]}"


def package_patches(ps: PatchSet):
    """The patches of every fix of the stack that change the installed package (tests-only
    patches never go in; of a mixed patch, only its package files are laid over)."""
    return [p for p in ps.patches if not p.tests_only and any(_in_package(ps, x) for x in p.paths)]


def refuse_wheel_changes(ps: PatchSet) -> None:
    """Conflict (exit 3) when a fix changes what the wheel is built from (cpp/, CMake, setup.py,
    requirements): laying files over the installed package would drop that change in silence."""
    for fix in ps.fixes:
        found = stack.wheel_files(ps, fix)
        if found:
            said = "; ".join(f"{p.name} changes {', '.join(files)}" for p, files in found)
            raise Conflict(f"{ps.target}: fix {fix.id} ({fix.kind}) needs a wheel build: {said}; an image made by "
                           f"laying the package's files over {ps.container.base} cannot carry that (a wheel built "
                           "from the patched tree would); nothing built")


def fix_labels(ps: PatchSet) -> str:
    """The fixes the image carries, in stack order, as one JSON label (id, kind, origin),
    escaped for a double-quoted Containerfile word (no quote ends it, no $ expands in it)."""
    text = json.dumps([{"id": f.id, "kind": f.kind, "origin": f.origin} for f in ps.fixes], separators=(",", ":"))
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")


def _in_package(ps: PatchSet, path: str) -> bool:
    return PurePosixPath(path).parts[0] == ps.container.package


REGULAR = {"100644": 0o644, "100755": 0o755}  # git's file modes -> the mode the file has in the image


def render_context(root: Path, ps: PatchSet, repo: Repo, dest: Path, base: str, base_digest: str,
                   carried: Carried | None = None) -> ContainerResult:
    """Apply the package patches (the one series path), and write the package's files that the
    stack changes, adds, deletes or renames, and the Containerfile. A file the stack leaves as
    the ref has it is not in the context. A stack that needs a wheel build (carried): the wheel's
    files that differ from the base's installed ones instead, its RECORD rewritten (wheel/layer.py)."""
    if carried is not None:
        return _render_wheel(root, ps, repo, dest, base, base_digest, carried)
    ref, commit = base_of(repo, ps)
    refuse_symlinked_paths(repo, commit, ps)  # a symlink never reaches the image
    patches = package_patches(ps)
    res = series.apply_series(repo, commit, patches, committer_date=series.THROWAWAY_DATE)
    res.raise_on_conflict(f" to {ref}")
    # #31 item 1: what differs between the ref and the stack's tree, read from git's trees: a
    # deletion, or the old name of a rename, is a removal from the image, never a file kept.
    changes = [c for c in repo.tree_changes(repo.commit_info(commit).tree, repo.commit_info(res.tip).tree)
               if _in_package(ps, c.path)]
    for c in changes:
        _refuse_unlayable(ps, c.path, c.old_mode, c.new_mode)
    files = []
    with atomic.replace_dir(dest) as fresh:  # a failed render leaves the old context whole
        for c in changes:
            before = hashlib.sha256(repo.read_blob(c.old_blob)).hexdigest() if c.old_blob else None
            files.append(PackageFile(c.path, before, removed=not c.new_blob))
            if c.new_blob:
                out = fresh / c.path
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(repo.read_blob(c.new_blob))
                out.chmod(REGULAR[c.new_mode])  # COPY keeps the context's mode: never the umask's
        removed = [f.path for f in files if f.removed]
        image = image_name(ps, base)
        ctx = {"image": image, "base": base, "base_digest": base_digest, "target": ps.target, "ref": ref,
               "commit": commit, "package": ps.container.package, "site_packages": ps.container.site_packages,
               "files": files, "removed": removed, "bytecode": _bytecode(removed),
               "folders": _emptied(repo, res.tip, removed),
               "copy_dirs": [ps.container.package] if any(not f.removed for f in files) else [],
               "patchset_hash": ps.content_hash, "version": __version__, "fixes": fix_labels(ps), "wheel": None,
               "ldconfig": False}
        _containerfile(root, fresh, ctx)
    return ContainerResult(ps.target, base, image, str(dest), files)  # labels: the template's, read back once built


def _containerfile(root: Path, folder: Path, ctx: dict) -> None:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["sh"] = shlex.quote  # a path is the PR's words: one shell word, whatever it holds
    (folder / "Containerfile").write_text(env.from_string((root / TEMPLATE).read_text()).render(**ctx))


def _render_wheel(root: Path, ps: PatchSet, repo: Repo, dest: Path, base: str, base_digest: str,
                  carried: Carried) -> ContainerResult:
    """The context of an image that carries the stack's wheel: its files that differ from the
    base's installed package, by content (their mode as the wheel gives it), the RECORD
    rewritten, what the wheel no longer has removed, ldconfig where a shared library changed."""
    ref, commit = base_of(repo, ps)
    lay, got, info = carried.layer, carried.installed, carried.info
    files = [PackageFile(p, got.files.get(p, (None,))[0]) for p in sorted(lay.copied)]
    files += [PackageFile(p, got.files[p][0], removed=True) for p in lay.removed]
    with atomic.replace_dir(dest) as fresh:
        for path, data in lay.copied.items():
            out = fresh / path
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
            out.chmod(0o755 if path in lay.libraries else 0o644)
        image = image_name(ps, base)
        ctx = {"image": image, "base": base, "base_digest": base_digest, "target": ps.target, "ref": ref,
               "commit": commit, "package": ps.container.package, "site_packages": got.location or
               ps.container.site_packages, "files": [], "removed": lay.removed, "bytecode": [], "folders": [],
               "copy_dirs": sorted({PurePosixPath(p).parts[0] for p in lay.copied}),
               "patchset_hash": ps.content_hash, "version": __version__, "fixes": fix_labels(ps),
               "ldconfig": bool(lay.libraries),
               "wheel": {"name": carried.path.name, "sha256": info["sha256"], "archs": info["archs"],
                         "devel": info.get("devel_digest") or "host", "installed": lay.version, "record": got.record,
                         "record_sha256": got.files[got.record][0]}}
        _containerfile(root, fresh, ctx)
    result = ContainerResult(ps.target, base, image, str(dest), files)
    result.wheel = {"name": carried.path.name, "sha256": info["sha256"], "version": lay.version, "archs": info["archs"],
                    "devel_digest": info.get("devel_digest", ""), "place": info.get("place", ""),
                    "copied": len(lay.copied), "copied_bytes": lay.copied_bytes, "removed": len(lay.removed),
                    "unchanged": lay.unchanged, "libraries": lay.libraries}
    return result


def _refuse_unlayable(ps: PatchSet, path: str, *modes: str) -> None:
    """An entry that is not a regular file before or after the stack is refused (a patch names
    no file with a control character: patchset.load refuses it, so every name fits one line)."""
    odd = next((m for m in modes if m and m not in REGULAR), None)
    if odd:
        what = {"120000": "a symlink", "160000": "a submodule"}.get(odd, f"of mode {odd}")
        raise Conflict(f"{ps.target}: the stack changes {path}, {what}; an image made by laying files over "
                       f"{ps.container.base} carries regular files only; nothing built")


def _bytecode(removed: list[str]) -> list[str]:
    """Shell words matching the compiled bytecode pip wrote for each removed module
    (<folder>/__pycache__/<name>.<tag>.pyc), quoted but for the glob."""
    out = []
    for path in removed:
        p = PurePosixPath(path)
        if p.suffix == ".py":
            out.append(shlex.quote(str(p.parent / "__pycache__" / p.stem)) + ".*.pyc")
    return out


def _emptied(repo: Repo, tip: str, removed: list[str]) -> list[str]:
    """The package's folders that the stack empties (every file in them removed, none added):
    removed from the image too, deepest first, or an empty folder would still import (a
    namespace package)."""
    folders = {str(parent) for path in removed for parent in PurePosixPath(path).parents if len(parent.parts) > 1}
    kept = {name for name, (_mode, typ, _id) in repo.ls_entries(tip, folders).items() if typ == "tree"}
    return sorted(folders - kept, key=lambda f: (-f.count("/"), f))


def build(root: Path, ps: PatchSet, repo: Repo, *, context_dir: Path, base: str | None = None,
          builder_name: str | None = None, wheel: wheel_cmd.Settings | None = None,
          held: contextlib.ExitStack | None = None) -> ContainerResult:
    """Render the context; build it with the chosen (or first working) builder; tag on success.
    A stack that needs a wheel build carries the set's wheel (built first when it is missing or
    stale, with the wheel settings), laid over the base as only what differs (#32 item 2)."""
    base = base or ps.container.base
    try:
        builder, digest, unpulled = _builder_and_base(ps, base, builder_name, wheel)
        carried = None
        if needs_wheel(ps):
            carried = _carried(ps, repo, base, builder, unpulled, wheel, held)
        with progress.step(f"rendering the build context in {context_dir}"):
            result = render_context(root, ps, repo, context_dir, base, digest, carried)
    except (UserError, CommandError) as exc:
        retire_context(context_dir, ps, exc)
        raise
    result.command = f"docker build -t {result.image} {context_dir}"
    if unpulled is not None:
        # #27 item 4: an unpullable base wrote no context and suggested nothing.
        raise NotFound(f"{unpulled.message}; the build context is written to {context_dir}: log in to the base's "
                       f"registry or pull it yourself, then run again (or build the context: {result.command})",
                       hint=Hint.choose("base", also="an image you have, or can pull"))
    if builder is None:
        raise ToolMissing(f"no image builder works here (docker, podman or buildah); the context is in "
                          f"{context_dir}; build it with: {result.command}")
    result.builder = builder.name
    with scratch.folder("build") as tmp:
        iid = Path(tmp) / "iid"
        try:
            with progress.step(f"building {result.image} with {builder.name}"):
                image_id = builder.build(context_dir, iid)
        except CommandError as exc:
            # The drift guard's own line, as the step printed it (not buildah echoing the RUN line)
            said = next((ln.strip() for ln in (exc.stderr + exc.stdout).splitlines() if ln.startswith("patchkit: ")), None)
            raise Conflict(said.split("patchkit: ", 1)[1] if said else f"{builder.name} build failed at {build_reason(exc)}") from exc
    try:
        with progress.step(f"tagging {result.image}"):
            builder.tag(image_id, result.image)
    except CommandError as exc:
        raise Conflict(f"{builder.name} could not tag {result.image}: {reason(exc)}") from exc
    built = builder.inspect(result.image)
    if built is None:
        raise Conflict(f"{builder.name} built {image_id[:19]} but {result.image} is not in its store")
    result.image_id, result.labels = built.id, built.labels  # what the image carries, read back
    return result


def needs_wheel(ps: PatchSet) -> bool:
    """Whether a fix of the stack changes what the wheel is built from (cpp/, CMake, ...)."""
    return any(stack.wheel_files(ps, f) for f in ps.fixes)


def _carried(ps: PatchSet, repo: Repo, base: str, builder: Builder | None, unpulled: NotFound | None,
             settings: wheel_cmd.Settings | None, held: contextlib.ExitStack | None) -> Carried:
    """The set's wheel (built when missing or stale) and its layer over what the base has installed."""
    if builder is None:
        raise ToolMissing("no image builder works here (docker, podman or buildah): the stack needs a wheel build, "
                          "and what differs from the base's installed package is read in the base")
    if unpulled is not None:
        raise unpulled
    assert settings is not None and held is not None  # the caller gives them where needs_wheel() (see refuse_wheel_changes)
    path, info = wheel_cmd.current(ps, repo, settings, held)
    with progress.step(f"reading the installed {ps.container.package} in {base}"):
        got = wheel_layer.installed(builder, base, ps.container.package)
    return Carried(path, info, wheel_layer.plan(path, got, base), got)


def _builder_and_base(ps: PatchSet, base: str, builder_name: str | None,
                      wheel: wheel_cmd.Settings | None = None) -> tuple[Builder | None, str, NotFound | None]:
    """The builder (None: none works, and none was named), the base's digest, and why the base
    could not be pulled (the context is still of use then)."""
    if wheel is None:
        refuse_wheel_changes(ps)  # before a base is pulled or anything is rendered
    try:
        builder: Builder | None = pick(builder_name)
    except ToolMissing:
        if builder_name:
            raise
        builder = None
    with progress.step(f"reading (or pulling) the base image {base}"):
        try:
            return builder, base_image(builder, base).digest if builder else "unknown (no builder ran)", None
        except NotFound as exc:  # the registry is out of reach or wants a login
            return builder, "unknown (the base could not be pulled)", exc


def retire_context(context: Path, ps: PatchSet, exc: BaseException) -> None:
    """A run that refuses before it renders removes the context an earlier run rendered for
    another version of the set (#31 item 11: that run's hint said to build it, and it built the
    old stack); the context of this very stack (its patch set label), or a folder that is not a
    context of ours (no such label), stays. The refusal's line says so."""
    try:
        text = (context / "Containerfile").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    label = re.search(r'io\.patchkit\.patchset\.sha256="([0-9a-f]+)"', text)
    if label is None or label[1] == ps.content_hash:
        return
    atomic.remove_dir(context)
    if isinstance(exc, UserError):
        exc.args = (f"{exc.message}; the build context in {context}, rendered for another version of the "
                    f"set ({label[1][:12]}), is removed", *exc.args[1:])


def push(ps: PatchSet, *, base: str | None = None, registry: str, builder_name: str | None = None,
         tls_verify: bool = True) -> str:
    """Push the image built from base to <registry>:<its tag>; returns the destination."""
    base = base or ps.container.base
    image = image_name(ps, base)
    builder = pick(builder_name)
    if builder.inspect(image) is None:
        raise NotFound(f"{image} is not in {builder.name}'s store", hint=Hint.run("container"))
    dest = f"{registry.rstrip('/')}:{image.rsplit(':', 1)[-1]}"
    builder.push(image, dest, tls_verify)
    return dest

"""make container: the patched image, built from a rendered context, tagged only on success."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import jinja2

from .. import __version__, atomic, progress, scratch, series, stack
from ..errors import CommandError, Conflict, Hint, NotFound, ToolMissing
from ..git import Repo
from ..model import PatchSet
from ..upstream import base_of, refuse_symlinked_paths
from .builders import Builder, Image, build_reason, pick, reason

TEMPLATE = Path("overlay/Containerfile.j2")
IMAGE_REPO = "localhost/patchkit"


@dataclass(frozen=True)
class PackageFile:
    path: str  # relative to site-packages, e.g. tensorrt_llm/_torch/pyexecutor/_util.py
    preimage_sha256: str | None  # None: the patches add this file


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


def render_context(root: Path, ps: PatchSet, repo: Repo, dest: Path, base: str, base_digest: str) -> ContainerResult:
    """Apply the package patches (the one series path), and write the patched files and the
    Containerfile (build() has refused a stack that needs a wheel build)."""
    ref, commit = base_of(repo, ps)
    refuse_symlinked_paths(repo, commit, ps)  # a symlink never reaches the image
    patches = package_patches(ps)
    res = series.apply_series(repo, commit, patches, committer_date=series.THROWAWAY_DATE)
    res.raise_on_conflict(f" to {ref}")
    paths = sorted({fc.path for p in patches for fc in p.files if fc.path and _in_package(ps, fc.path)})
    files = []
    with atomic.replace_dir(dest) as fresh:  # a failed render leaves the old context whole
        for path in paths:
            before = repo.show_file(commit, path)
            files.append(PackageFile(path, None if before is None else hashlib.sha256(before).hexdigest()))
            after = repo.show_file(res.tip, path)
            if after is None:  # the series deletes it: nothing to lay over
                continue
            out = fresh / path
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(after)
        image = image_name(ps, base)
        ctx = {"image": image, "base": base, "base_digest": base_digest, "target": ps.target, "ref": ref,
               "commit": commit, "package": ps.container.package, "site_packages": ps.container.site_packages,
               "files": files, "patchset_hash": ps.content_hash, "version": __version__,
               "fixes": fix_labels(ps)}
        env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
        (fresh / "Containerfile").write_text(env.from_string((root / TEMPLATE).read_text()).render(**ctx))
    return ContainerResult(ps.target, base, image, str(dest), files)  # labels: the template's, read back once built


def build(root: Path, ps: PatchSet, repo: Repo, *, context_dir: Path, base: str | None = None,
          builder_name: str | None = None) -> ContainerResult:
    """Render the context; build it with the chosen (or first working) builder; tag on success."""
    refuse_wheel_changes(ps)  # before a base is pulled or anything is rendered
    base = base or ps.container.base
    try:
        builder: Builder | None = pick(builder_name)
    except ToolMissing:
        if builder_name:
            raise
        builder = None
    unpulled = None
    with progress.step(f"reading (or pulling) the base image {base}"):
        try:
            digest = base_image(builder, base).digest if builder else "unknown (no builder ran)"
        except NotFound as exc:  # the registry is out of reach or wants a login: the context is still of use
            unpulled, digest = exc, "unknown (the base could not be pulled)"
    with progress.step(f"rendering the build context in {context_dir}"):
        result = render_context(root, ps, repo, context_dir, base, digest)
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


def base_image(builder: Builder, base: str) -> Image:
    """The base as the builder's store holds it, pulled when it is not there yet."""
    found = builder.inspect(base)
    if found is None:
        builder.pull(base)
        found = builder.inspect(base)
    if found is None:
        raise NotFound(f"{builder.name} pulled {base} but cannot find it in its store")
    return found


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

"""make wheel: the wheel of the applied stack, built by upstream's own build at the set's ref.

The stack is applied on the ref by the one series path (into a throwaway commit); its files are
synced into the persistent build tree of the set and the devel image (tree.py); the flags are
read from the tree at the ref (flags.py) and planned; the build runs in the devel image or on
this machine (place.py), its progress read as it goes (output.py); the wheel and wheel.json
land in $(BUILD)/wheel/<set>/ whole, in one step, or not at all: a failed build leaves the
previous wheel as it was.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import atomic, fence, lock, progress, series
from ..container.builders import base_image, pick
from ..errors import BadInput, Conflict, NotFound, ToolMissing
from ..git import Repo, short_ref
from ..model import PatchSet
from ..upstream import base_of, obtain
from . import flags, jobs as jobs_mod, output, place as places, tree as trees

INFO = "wheel.json"
_ARCHS = re.compile(r"^[0-9A-Za-z_;,.+-]{1,200}$")  # 120-real, 90-real;100-real, all, native


@dataclass
class WheelResult:
    target: str
    folder: str  # $(BUILD)/wheel/<set>
    wheel: str  # its file name there
    sha256: str
    version: str
    stack: str  # the set's content hash: what the wheel carries
    ref: str
    ref_commit: str
    tree: str  # the stack's tree id on the ref
    place: str  # image or host
    devel: str  # the devel image, as the set (or DEVEL) names it; '' on the host
    devel_digest: str
    fenced: str  # how the build was kept off the network, or why it was not
    archs: str
    jobs: int
    jobs_why: str
    flags: list[dict] = field(default_factory=list)  # {"args": [...], "why": ...}
    not_passed: list[dict] = field(default_factory=list)  # {"setting": ..., "why": ...}
    makefile_note: str = ""
    compiled: int = 0  # translation units compiled by this build
    compiled_files: list[str] = field(default_factory=list)
    steps: int = 0  # the build's steps, when it said them (Ninja)
    ccache: dict = field(default_factory=dict)  # hits, misses, hit_rate
    seconds: float = 0.0
    sources_written: int = 0  # files of the stack's tree written into the build tree this time
    build_tree: str = ""


@dataclass(frozen=True)
class Settings:
    """How a wheel is built: make wheel's settings, which make container and make delta
    MODE=container take too."""

    out: Path  # $(BUILD)/wheel
    cache: Path  # $(BUILD)/wheel-cache
    where: str | None = None  # WHEEL_BUILD
    archs: str | None = None  # CUDA_ARCHS
    jobs: int | None = None  # JOBS
    builder_name: str | None = None  # BUILDER
    devel: str | None = None  # DEVEL


def wheel(ps: PatchSet, *, src: Path, url: str | None = None, settings: Settings) -> WheelResult:
    """Build the set's wheel (see the module); Conflict (exit 3) when the build fails."""
    _check(ps, settings)
    with contextlib.ExitStack() as held:
        repo, _ = obtain(ps, src, url, hold=held, command=f"wheel {ps.target}")
        return build(ps, repo, settings, held)


def current(ps: PatchSet, repo: Repo, settings: Settings, held: contextlib.ExitStack) -> tuple[Path, dict]:
    """The set's wheel for this stack, ref, build environment and architectures: the one in
    settings.out when it is all of those, else one built now (make container and make delta
    MODE=container start here); its path and its wheel.json."""
    _check(ps, settings)
    _ref, base = base_of(repo, ps)
    where = _place(settings.where, settings.builder_name, settings.devel or ps.container.devel, ps)
    info = read_info(settings.out / ps.target)
    want = {"stack": ps.content_hash, "ref_commit": base, "archs": settings.archs or ps.container.cuda_archs,
            "place": where[0].name, "devel_digest": where[2]}
    if info is not None and all(info.get(k) == v for k, v in want.items()):
        return settings.out / ps.target / info["wheel"], info
    stale = [f"{k} {str(info.get(k))[:19] or 'none'} (now {str(v)[:19] or 'none'})" for k, v in want.items()
             if info is not None and info.get(k) != v]
    progress.say(f"building the {ps.target} wheel: " + (f"the one there is stale: {', '.join(stale)}" if stale
                                                         else "there is none"))
    res = build(ps, repo, settings, held, where)
    return Path(res.folder) / res.wheel, asdict(res)


def _check(ps: PatchSet, settings: Settings) -> None:
    """Bad settings, said before anything runs."""
    archs = settings.archs or ps.container.cuda_archs
    if not archs:
        raise BadInput(f"{ps.target} names no CUDA architectures: set container.cuda_archs in its patchset.yaml, "
                       "or give them", setting="cuda_archs")
    if not _ARCHS.match(archs):
        raise BadInput(f"{archs!r} is not a list of CUDA architectures (e.g. 120-real, or 90-real;120-real)",
                       setting="cuda_archs")
    if settings.jobs is not None and settings.jobs < 1:
        raise BadInput(f"JOBS must be 1 or more, not {settings.jobs}", setting="jobs")
    if settings.where is not None and settings.where not in places.PLACES:
        raise BadInput(f"unknown wheel build place {settings.where!r} (image or host)", setting="wheel_build")


def build(ps: PatchSet, repo: Repo, settings: Settings, held: contextlib.ExitStack,
          where: tuple | None = None) -> WheelResult:
    """The wheel of ps's stack, built on repo (see the module); held keeps the build tree's lock.
    where: the place _place() found (make container found it already)."""
    archs, out, cache = settings.archs or ps.container.cuda_archs, settings.out, settings.cache
    ref, base = base_of(repo, ps)
    with progress.step(f"applying the {ps.target} stack on {short_ref(ref)}"):
        applied = series.apply_series(repo, base, list(ps.patches), committer_date=series.THROWAWAY_DATE)
        applied.raise_on_conflict(f" to {short_ref(ref)}")
    tip = applied.tip
    text = repo.show_file(tip, flags.SCRIPT)
    if text is None:
        raise NotFound(f"{short_ref(ref)} has no {flags.SCRIPT}: make wheel builds with upstream's own build")
    script = flags.read_script(text.decode("utf-8", "replace"))
    composed = flags.compose(*(_text(repo.show_file(tip, p)) for p in (flags.MAKEFILE, flags.DOCKERFILE)),
                             cuda_archs=archs)
    place, image_name, digest = where or _place(settings.where, settings.builder_name,
                                                settings.devel or ps.container.devel, ps)
    key = tree_key(place, digest)
    hold_tree(held, cache, ps.target, key, f"wheel {ps.target}")
    tree = trees.open_tree(cache, ps.target, key)
    have = tree.state.get("tools") if place.image else None
    have = have or places.tools(place)
    if place.image:
        tree.state["tools"] = have
    if not have.get("c++") or not have.get("cmake"):
        raise ToolMissing(f"the {'devel image ' + image_name if place.image else 'machine'} has no "
                          f"{'C++ compiler' if not have.get('c++') else 'cmake'}: upstream's build needs both")
    chosen = jobs_mod.choose(settings.jobs, jobs_mod.read_memory())
    config = {"archs": archs, "script_flags": sorted(script.names)}
    reconfigure = ""
    if tree.configured and tree.configured != config:
        reconfigure = ("CUDA_ARCHS changed since this tree's last build: CMake is configured again"
                       if tree.configured.get("archs") != archs else
                       "the ref's build script changed since this tree's last build: CMake is configured again")
    ccache_at = str(tree.ccache) if have.get("ccache") else None
    plan = flags.plan(script, composed, archs=archs, jobs=chosen.value, jobs_why=chosen.why,
                      archs_from="CUDA_ARCHS, as given" if archs != ps.container.cuda_archs
                      else "CUDA_ARCHS: the set's container.cuda_archs", ccache=ccache_at,
                      ninja=bool(have.get("ninja")), reconfigure=reconfigure)
    with progress.step(f"writing the stack's files into the build tree {tree.src}"):
        synced = trees.sync(repo, tip, tree)
    for old in (tree.src / "build").glob("*.whl"):  # the script's dist folder: this build's wheel alone
        old.unlink()
    watch = output.Watch(roots=tuple(r for r in (place.src, str(tree.src)) if r), tree=tree.src)
    progress.say(f"building in {image_name or 'this machine'} ({place.said}), {chosen.why}")
    trees.begin(tree)
    with open(tree.root / trees.LOG, "w", encoding="utf-8", errors="replace", buffering=1) as log:  # tail -f follows it
        def feed(line: str) -> None:
            log.write(line if line.endswith("\n") else line + "\n")
            watch.feed(line)
        code = places.run(place, tree.root, tree.ccache, [flags.SCRIPT, *plan.argv], feed,
                          started=lambda session: trees.running(tree, session))
    trees.end(tree)
    if code != 0:
        said = watch.first_error or next((ln for ln in reversed(watch.tail) if ln.strip()), f"exit {code}")
        raise Conflict(f"{ps.target}: the wheel build failed: {said}; nothing written, the wheel in "
                       f"{out / ps.target} is as it was (the build's output: {tree.root / trees.LOG})",
                       details="\n".join(watch.tail[-40:]))
    tree.state["configured"] = config
    tree.save()
    built = sorted((tree.src / "build").glob("*.whl"))
    if len(built) != 1:
        raise Conflict(f"{ps.target}: the build ended well but left {len(built)} wheel(s) in "
                       f"{tree.src / 'build'}; nothing written")
    stats = output.ccache_stats(places.stats(tree.root))
    total = stats["hits"] + stats["misses"]
    result = WheelResult(
        ps.target, str(out / ps.target), built[0].name, _sha256(built[0]), _version(built[0]),
        ps.content_hash, ref, base, repo.commit_info(tip).tree, place.name, image_name, digest, place.said,
        archs, chosen.value, chosen.why, [{"args": list(f.args), "why": f.why} for f in plan.passed],
        [{"setting": s.setting, "why": s.why} for s in plan.skipped], plan.note, len(watch.compiled),
        watch.compiled, watch.total, {**stats, "hit_rate": round(stats["hits"] / total, 3) if total else None},
        round(watch.seconds, 1), len(synced.written), str(tree.root))
    with atomic.replace_dir(out / ps.target) as fresh:
        shutil.copy2(built[0], fresh / built[0].name)
        (fresh / INFO).write_text(json.dumps(asdict(result), indent=1) + "\n")
    return result


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def tree_key(place: places.Place, digest: str) -> str:
    """Which build tree (and compiler cache) a place builds in: one per devel image, by its digest."""
    return digest.split(":", 1)[-1][:12] if place.image else "host"


def hold_tree(held: contextlib.ExitStack, cache: Path, target: str, key: str, command: str) -> None:
    """The build tree's lock, held until held closes: one build or test run in a tree at a time."""
    held.enter_context(lock.hold(cache / "trees" / f".{target}-{key}.lock", command, f"the {target} build tree"))


@dataclass(frozen=True)
class Located:
    """Where the set's build tree is, for a run in it (make delta's C++ unit tests)."""

    place: places.Place
    key: str
    said: str  # the devel image and its digest, or this machine


def locate(ps: PatchSet, settings: Settings) -> Located | str:
    """The place and the key of the set's build tree as make wheel would build it with these
    settings, found without pulling or building anything; else why there is none."""
    try:
        found = _place(settings.where, settings.builder_name, settings.devel or ps.container.devel, ps, pull=False)
    except (BadInput, ToolMissing) as e:
        return str(e)
    if isinstance(found, str):
        return found
    place, image_name, digest = found
    return Located(place, tree_key(place, digest),
                   f"{image_name} ({digest[:19]})" if place.image else "this machine")


def _place(where: str | None, builder_name: str | None, devel: str, ps: PatchSet, pull: bool = True):
    """(place, devel image name, its digest): the devel image through the first working builder
    (WHEEL_BUILD=image, the default where one works), else this machine. pull=False: the image
    as the builder's store has it, or why it is not there (a str)."""
    builder = None
    if where != places.HOST:
        try:
            builder = pick(builder_name)
        except ToolMissing:
            if where == places.IMAGE or builder_name:
                raise
    if builder is None:
        found, why = fence.find()
        said = (f"fenced by {fence.NAME} (no network, the filesystem read-only but the build tree and its cache, "
                "a fresh HOME and /tmp)") if found else f"NOT fenced ({why}): with this machine's network and your files"
        return places.Place(places.HOST, fence=found, said=said), "", ""
    if not devel:
        raise BadInput(f"{ps.target} names no devel image: set container.devel in its patchset.yaml, or give one",
                       setting="devel")
    if pull:
        with progress.step(f"reading (or pulling) the devel image {devel}"):
            image = base_image(builder, devel)
    else:
        image = builder.inspect(devel)
        if image is None:
            return f"the devel image {devel} is not in {builder.name}'s store"
    offline, said = True, "no network"
    if builder.name == "buildah":
        why = places.unshare_works()
        offline, said = (True, "no network (a network namespace of its own)") if not why else (
            False, f"WITH this machine's network ({why})")
    return places.Place(places.IMAGE, image.id, builder, offline=offline, said=said), devel, image.digest


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _version(wheel: Path) -> str:
    """The Version of the wheel's METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next((n for n in zf.namelist() if n.endswith(".dist-info/METADATA")), None)
        text = zf.read(meta).decode("utf-8", "replace") if meta else ""
    return next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Version:")), "")


def read_info(folder: Path) -> dict | None:
    """A set's wheel.json, or None when there is none (or it cannot be read)."""
    try:
        data = json.loads((folder / INFO).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and (folder / str(data.get("wheel", ""))).is_file() else None


def describe(r: WheelResult) -> str:
    """The result as the user reads it."""
    where = f"in {r.devel} ({r.devel_digest[:19]})" if r.place == places.IMAGE else "on this machine"
    rate = f"{100 * r.ccache['hit_rate']:.0f} % ccache hits" if r.ccache.get("hit_rate") is not None else "no ccache"
    lines = [f"{r.target}: {r.wheel} (sha256 {r.sha256[:16]}) in {r.folder}",
             f"built {where}, {r.fenced}; CUDA_ARCHS={r.archs}; {r.jobs_why}",
             f"compiled {r.compiled} translation unit(s)" + (f" in {r.steps} step(s)" if r.steps else "")
             + f", {rate}, {r.seconds:.1f} s; {r.sources_written} source file(s) written into {r.build_tree}",
             "flags passed to scripts/build_wheel.py (read from the ref):"]
    width = max((len(" ".join(f["args"])) for f in r.flags), default=0)
    lines += [f"  {' '.join(f['args']):<{width}}  {f['why']}" for f in r.flags]
    if r.not_passed:
        lines.append("not passed:")
        width = max(len(s["setting"]) for s in r.not_passed)
        lines += [f"  {s['setting']:<{width}}  {s['why']}" for s in r.not_passed]
    if r.makefile_note:
        lines.append(f"note: {r.makefile_note}")
    return "\n".join(lines)


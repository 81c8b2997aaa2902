"""make bench, the wheel (#32): make wheel cold against a second make wheel after a one-line
change to one C++ file, and the image layer that carries the wheel against upstream's recipe.

On the miniature, rc25 carries 19450 (the C++ guard) beneath our fix, as make backport writes it.
- Build: pairs of (a cold make wheel: no build tree, an empty ccache) then (the same after one
  line of the guard changed: the persistent tree and cache), in this process, on this machine
  (WHEEL_BUILD=host); the translation units each compiled are counted from the build's own
  output, and the figure is the median of the per-pair ratios (warm / cold), at most a fifth.
- Layer (buildah, skopeo and this machine's toolchain): make container over a release stand-in
  that has the unpatched wheel installed by pip; its new layer's bytes (the files it holds)
  against the bytes of the wheel's files that differ from the base's, at most 1.1x; and
  upstream's own recipe on the same wheel (a release stage FROM the devel image, pip install of
  the wheel from a bind mount, as docker/Dockerfile.multi's), its layer's bytes beside ours.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import shutil
import statistics
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from .. import miniature, patchset, proc, progress
from ..backport import command as backport
from ..container import build as cbuild
from ..container.bases import make_base, make_devel
from ..errors import ToolMissing
from ..git import Repo
from ..wheel import command as wheel_cmd
from . import store
from .measure import Figure

GUARD = "+    if (crossKvCacheManager->isEnableBlockReuse() && req.getEncoderUniqueTokens().has_value())\n"
CHANGED = GUARD.replace("has_value())", "has_value() && !req.getEncoderUniqueTokens().value()->empty())")
RATIO, LAYER = 0.2, 1.1


@dataclass(frozen=True)
class WheelBench:
    cold: tuple[float, ...]  # seconds of each cold make wheel
    warm: tuple[float, ...]  # of each make wheel after the one-line change
    cold_units: int  # translation units a cold build compiled
    warm_units: tuple[int, ...]  # and each warm one
    layer_bytes: int = 0  # the files make container's new layer holds
    differing_bytes: int = 0  # the wheel's files that differ from the base's installed ones (the RECORD among them)
    layer_tar_bytes: int = 0  # that layer as a tar (headers, folders and all)
    upstream_bytes: int = 0  # upstream's recipe: the files of its pip install layer
    layer_note: str = ""  # why the layer was not measured

    @property
    def ratio(self) -> float:
        return statistics.median(w / c for w, c in zip(self.warm, self.cold))

    def figures(self) -> list[Figure]:
        out = [Figure("a second make wheel after a one-line C++ change: translation units compiled",
                      ", ".join(map(str, self.warm_units)), "exactly 1", set(self.warm_units) == {1}),
               Figure("that make wheel / a cold one", f"{self.ratio:.2f}x", f"at most {RATIO}x", self.ratio <= RATIO)]
        if self.layer_bytes:
            share = self.layer_bytes / max(self.differing_bytes, 1)
            out.append(Figure("make container's layer / the wheel's differing files", f"{share:.2f}x",
                              f"at most {LAYER}x", share <= LAYER))
        return out


def wheel_bench(root: Path, workdir: Path, pairs: int = 3, layer: bool = True) -> WheelBench:
    """The measurement; pairs fewer and layer off only in tests."""
    work = workdir / "wheel"
    shutil.rmtree(work, ignore_errors=True)
    up, project = work / "upstream", work / "project"
    miniature.build(root, up)
    for d in ("patches", "waivers", "overlay"):
        shutil.copytree(root / d, project / d)
    src = work / "trtllm-rc25"
    with progress.step("measuring: make backport rc25 PR=19450 (the stack the wheel is built from)"):
        backport.backport(patchset.load(project, "rc25"), root=project, src=src, url=up.as_uri(), pr="19450")
    patch = next((project / "patches" / "rc25").glob("0001-18609-*.patch"))
    cold, warm, units = [], [], []
    cold_units = 0
    for i in range(pairs):
        patch.write_text(patch.read_text().replace(CHANGED, GUARD))  # the fix as written
        shutil.rmtree(work / "cache", ignore_errors=True)
        seconds, res = _timed(project, src, work, f"measuring: a cold make wheel ({i + 1} of {pairs})")
        cold.append(seconds)
        cold_units = res.compiled
        patch.write_text(patch.read_text().replace(GUARD, CHANGED, 1))  # one line of the guard changed
        seconds, res = _timed(project, src, work, f"measuring: make wheel after a one-line change ({i + 1} of {pairs})")
        warm.append(seconds)
        units.append(res.compiled)
    bench = WheelBench(tuple(cold), tuple(warm), cold_units, tuple(units))
    if not layer:
        return bench
    try:
        with store.private(workdir / "containers", "overlay"):
            return _layer(bench, project, src, work)
    except (ToolMissing, OSError) as exc:
        return WheelBench(**{**bench.__dict__, "layer_note": str(getattr(exc, "message", exc))})


def _timed(project: Path, src: Path, work: Path, what: str):
    settings = wheel_cmd.Settings(work / "out", work / "cache", "host")
    with progress.step(what):
        t0 = time.perf_counter()
        res = wheel_cmd.wheel(patchset.load(project, "rc25"), src=src, settings=settings)
        return time.perf_counter() - t0, res


def _layer(bench: WheelBench, project: Path, src: Path, work: Path) -> WheelBench:
    """make container's layer over a release stand-in, and upstream's recipe on the devel stand-in."""
    if not all(shutil.which(t) for t in ("buildah", "skopeo")):
        return WheelBench(**{**bench.__dict__, "layer_note": "not measured: needs buildah and skopeo"})
    ps = patchset.load(project, "rc25")
    unpatched = _unpatched_wheel(work)
    with progress.step("measuring: the release and devel stand-ins"):
        release = make_base("localhost/bench-wheelrelease:1.3.0rc25", None, ps.container.site_packages, python=True,
                            wheel=unpatched)
        devel = make_devel("localhost/bench-devel:1.3.0rc25")
    settings = wheel_cmd.Settings(work / "out", work / "cache", "host")
    with progress.step("measuring: make container, the wheel laid over the release stand-in"), contextlib.ExitStack() as held:
        res = cbuild.build(project, ps, Repo(src), context_dir=work / "ctx", base=release, builder_name="buildah",
                           wheel=settings, held=held)
    ours, tar = layer_bytes(res.image, work / "oci")
    wheel = Path(work / "out" / "rc25" / json.loads((work / "out" / "rc25" / "wheel.json").read_text())["wheel"])
    recipe = work / "recipe"
    shutil.rmtree(recipe, ignore_errors=True)
    recipe.mkdir()
    shutil.copy2(wheel, recipe / wheel.name)
    (recipe / "Containerfile").write_text(  # upstream's release stage, on the same wheel
        f"FROM {devel}\nRUN --mount=type=bind,source=.,target=/tmp/wheel --mount=type=cache,target=/root/.cache/pip "
        f"python3 -m pip install --no-deps --no-index /tmp/wheel/{wheel.name}\n")
    with progress.step("measuring: upstream's recipe, FROM the devel image and pip install of the wheel"):
        proc.run(["buildah", "bud", "--isolation", "chroot", "--layers=false", "-t", "localhost/bench-recipe:1",
                  "-f", str(recipe / "Containerfile"), str(recipe)])
    upstream, _tar = layer_bytes("localhost/bench-recipe:1", work / "oci-recipe")
    return WheelBench(**{**bench.__dict__, "layer_bytes": ours, "differing_bytes": res.wheel["copied_bytes"],
                         "layer_tar_bytes": tar, "upstream_bytes": upstream})


def _unpatched_wheel(work: Path) -> Path:
    """The tag's wheel, as its release has it installed: its own script, on this machine."""
    tree = work / "release-tree"
    Repo(work / "upstream").worktree_add(tree, "v1.3.0rc25")
    proc.run(["python3", "scripts/build_wheel.py", "--no-venv", "-a", "120-real", "--build_dir", str(work / "release-build"),
              "--dist_dir", str(work / "release-dist")], cwd=tree)
    return next((work / "release-dist").glob("*.whl"))


def layer_bytes(image: str, oci: Path) -> tuple[int, int]:
    """(the bytes of the files the image's last layer holds, that layer's tar bytes, uncompressed)."""
    shutil.rmtree(oci, ignore_errors=True)
    proc.run(["skopeo", "copy", "-q", f"containers-storage:{image}", f"oci:{oci}:img"])
    index = json.loads((oci / "index.json").read_text())
    blob = lambda d: oci / "blobs" / "sha256" / d.split(":", 1)[1]  # noqa: E731
    manifest = json.loads(blob(index["manifests"][0]["digest"]).read_text())
    data = blob(manifest["layers"][-1]["digest"]).read_bytes()
    if data[:2] == b"\x1f\x8b":  # skopeo writes the layer gzipped
        data = gzip.decompress(data)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return sum(m.size for m in tar.getmembers() if m.isfile()), len(data)


def render(b: WheelBench) -> str:
    lines = ["make wheel on the miniature (rc25 with 19450 beneath our fix), on this machine:",
             f"  cold: {', '.join(f'{s:.1f}' for s in b.cold)} s, {b.cold_units} translation units compiled",
             f"  after a one-line change to capacityScheduler.cpp: {', '.join(f'{s:.1f}' for s in b.warm)} s, "
             f"{', '.join(map(str, b.warm_units))} translation unit(s) compiled; median of the pairs {b.ratio:.2f}x"]
    if b.layer_bytes:
        lines.append(f"make container's layer: {b.layer_bytes:,} bytes of files ({b.layer_tar_bytes:,} as a tar) for "
                     f"{b.differing_bytes:,} bytes of the wheel's differing files; upstream's recipe (FROM devel, "
                     f"pip install): {b.upstream_bytes:,} bytes of files, {b.upstream_bytes / max(b.layer_bytes, 1):.1f}x ours")
    else:
        lines.append(f"make container's layer: {b.layer_note or 'not measured'}")
    return "\n".join(lines)

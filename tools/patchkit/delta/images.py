"""MODE=container: the two images a delta runs in, found from what make container was given.

The unpatched tree runs in the base image, the patched tree in the image `make container`
built from that base for this set; both are found in the chosen builder's store from the same
BASE and BUILDER, and the patched one is refused when its labels say it was built for another
upstream commit, another version of the set, or another base.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..container.build import image_name, needs_wheel
from ..container.builders import Builder, Image, pick
from ..errors import Conflict, Hint, NotFound
from ..model import PatchSet

# label -> what it is called in the one-line refusal
CHECKED = {"io.patchkit.upstream.commit": "upstream commit", "io.patchkit.patchset.sha256": "patch set",
           "org.opencontainers.image.base.digest": "base digest", "io.patchkit.wheel.archs": "CUDA_ARCHS"}


@dataclass(frozen=True)
class Images:
    builder: Builder
    unpatched: Image
    patched: Image


def resolve(ps: PatchSet, *, commit: str, base: str | None = None, builder_name: str | None = None,
            archs: str | None = None) -> Images:
    """The base image and the patched image for this set and commit, or one line saying why not.
    A stack that needs a wheel build: the image's wheel was built for archs (CUDA_ARCHS)."""
    base = base or ps.container.base
    builder = pick(builder_name)
    hint = Hint.run("container")  # with the user's own target, checkout, base and builder
    found = builder.inspect(base)
    if found is None:
        raise NotFound(f"the base image {base} is not in {builder.name}'s store",
                       hint=Hint("container", also="it pulls the base and builds the patched image"))
    name = image_name(ps, base)
    patched = builder.inspect(name)
    if patched is None:
        raise NotFound(f"no patched image {name} in {builder.name}'s store", hint=hint)
    want = {"io.patchkit.upstream.commit": commit, "io.patchkit.patchset.sha256": ps.content_hash,
            "org.opencontainers.image.base.digest": found.digest}
    if archs and needs_wheel(ps):
        want["io.patchkit.wheel.archs"] = archs
    stale = [f"{CHECKED[k]} {_short(patched.labels.get(k))} (now {_short(v)})" for k, v in want.items()
             if patched.labels.get(k) != v]
    if stale:
        raise Conflict(f"{name} is stale: built for {', '.join(stale)}", hint=hint)
    return Images(builder, found, patched)


def _short(value: str | None) -> str:
    if not value:
        return "none"
    return value.split(":", 1)[-1][:12]

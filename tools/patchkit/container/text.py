"""make container's and make container-push's text."""
from __future__ import annotations

def container_result(r) -> str:
    w = r.wheel
    said = (f"wheel {w['name']} (sha256 {w['sha256'][:16]}, {w['archs']}, built "
            + (f"in {w['devel_digest'][:19]}" if w["devel_digest"] else "on this machine")
            + f"): {w['copied']} file(s) differ from the base's tensorrt_llm {w['version']} ({w['copied_bytes']} bytes, "
            f"the RECORD rewritten among them), {w['removed']} removed, {w['unchanged']} the same"
            + ("; ldconfig" if w["libraries"] else "") + "\n") if w else ""
    return (f"{r.image}  ({r.builder}, image {r.image_id[:19]})\nbase {r.base} "
            f"{r.labels['org.opencontainers.image.base.digest']}\n" + said
            + "\n".join(f"  {'removed' if f.removed else 'overlaid'} {f.path}" for f in r.files) + f"\ncontext: {r.context}")


def push_result(dest: str) -> str:
    return f"pushed {dest}"

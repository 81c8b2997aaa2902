"""make container's and make container-push's text."""
from __future__ import annotations

def container_result(r) -> str:
    return (f"{r.image}  ({r.builder}, image {r.image_id[:19]})\nbase {r.base} "
            f"{r.labels['org.opencontainers.image.base.digest']}\n"
            + "\n".join(f"  {'removed' if f.removed else 'overlaid'} {f.path}" for f in r.files) + f"\ncontext: {r.context}")


def push_result(dest: str) -> str:
    return f"pushed {dest}"

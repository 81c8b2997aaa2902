"""make workflow's and make summary's text."""
from __future__ import annotations

def workflow_result(r) -> str:
    def state(path: str) -> str:
        changed = path in r.changed_files
        return ("stale: make workflow would change it" if changed else "up to date") if r.check else \
            ("written" if changed else "unchanged")
    out = [f"{r.path}: {state(r.path)}; jobs {', '.join(r.jobs)}; targets {', '.join(r.targets)}"]
    if r.config_path:
        out.append(f"{r.config_path}: {state(r.config_path)}; self-hosted runner labels for actionlint: "
                   f"{', '.join(r.runner_labels) or 'none'}")
    if r.steps_left_out:
        out.append(f"left out (no such make target yet): {', '.join(r.steps_left_out)}")
    return "\n".join(out)


def summary_result(r) -> str:
    skipped = (f"\nskipped, not reports ({len(r.skipped)}): " + ", ".join(r.skipped[:5])
               + (f" and {len(r.skipped) - 5} more (summary.json lists them)" if len(r.skipped) > 5 else "")) if r.skipped else ""
    return r.markdown.rstrip("\n") + skipped + "".join(f"\nwritten: {p}" for p in r.written)

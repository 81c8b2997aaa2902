"""Upstream's .pre-commit-config.yaml at the ref, made runnable here without changing what it selects.

The config is upstream's own, anchors and all (PyYAML resolves `*legacy_files`), with the global
`files`/`exclude`, every hook's `files`/`exclude`/`types`/`types_or`/`exclude_types`/
`always_run`/`stages` kept as they are, so the real pre-commit decides which hook selects which
file. What changes: a hook that cannot run here (its repository's tool is not on PyPI or not
in the wheelhouse, a local hook that needs the whole repository or a file the ref lacks)
becomes a local `language: fail` hook with the same selection: pre-commit then tells us
whether it would have checked our files, and we name it as not run, never as passed.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import mirrors

SELECTION = ("files", "exclude", "types", "types_or", "exclude_types", "always_run", "stages")
RUNNABLE_LOCAL = ("python", "script")
NOT_RUN = "patchkit: not run here: "


@dataclass
class Plan:
    config: dict  # what pre-commit runs
    redirects: dict[str, tuple[str, str]] = field(default_factory=dict)  # url -> (rev, requirement)
    not_run: dict[str, str] = field(default_factory=dict)  # hook id -> why
    scripts: set[str] = field(default_factory=set)  # files at the ref that local hooks run
    pins: dict[str, str] = field(default_factory=dict)  # hook id -> the tool it runs (ruff==0.9.4)


def _wheel_name(req: str) -> str:
    return re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].replace("-", "_").lower()


def _in_wheelhouse(wheelhouse: Path, req: str) -> bool:
    if "==" in req:
        return mirrors.available(wheelhouse, req.replace(" ", ""))
    stem = _wheel_name(req) + "-"
    return wheelhouse.is_dir() and any(p.name.lower().startswith(stem) for p in wheelhouse.iterdir())


def _fail_hook(hook: dict, manifest: dict | None, why: str) -> dict:
    sel = {k: v for k, v in (manifest or {}).items() if k in SELECTION}
    sel.update({k: v for k, v in hook.items() if k in SELECTION})
    return {"id": hook["id"], "name": hook.get("name") or (manifest or {}).get("name") or hook["id"],
            "entry": NOT_RUN + why, "language": "fail", **sel}


PYTHON = re.compile(r"^python(3(\.\d+)?)?$")


def _script(entry: str, language: str) -> str | None:
    """The repository file a local hook runs (`./scripts/x.py --fix`, `python scripts/x.py`,
    `python3 scripts/x.py`)."""
    words = shlex.split(entry)
    if language == "python" and words[:1] and PYTHON.match(words[0]) and len(words) > 1:
        words = words[1:]
    return words[0][2:] if words and words[0].startswith("./") else (words[0] if words and "/" in words[0] else None)


def plan(text: str, *, wheelhouse: Path, exists: callable, unavailable: dict[str, str] | None = None) -> Plan:
    """The runnable config for upstream's config text; exists(path) says whether the ref has a file,
    unavailable which scripts cannot be had here all the same (path -> why)."""
    cfg = yaml.safe_load(text) or {}
    out = {k: v for k, v in cfg.items() if k != "repos"}
    out.pop("default_install_hook_types", None)
    result = Plan(out)
    repos: list[dict] = []
    failed: list[dict] = []
    for repo in cfg.get("repos") or []:
        url = repo.get("repo", "")
        if url in ("local", "meta"):
            kept = []
            for hook in repo.get("hooks") or []:
                why = _local_reason(hook, wheelhouse, exists, unavailable or {}) if url == "local" else None
                if why:
                    result.not_run[hook["id"]] = why
                    failed.append(_fail_hook(hook, None, why))
                else:
                    kept.append(hook)
                    script = _script(hook.get("entry", ""), hook.get("language", "")) if url == "local" else None
                    if script:
                        result.scripts.add(script)
            if kept:
                repos.append({**repo, "hooks": kept})
            continue
        rev = str(repo.get("rev", ""))
        mirror = mirrors.MIRRORS.get(mirrors.key(url))
        manifest = {h["id"]: h for h in (mirror.hooks if mirror else ())}
        why = None
        if mirror is None:
            why = f"{url} has no package on PyPI to mirror"
        elif not mirrors.available(wheelhouse, mirrors.pin(mirror, rev)):
            why = f"{mirrors.pin(mirror, rev)} is not in the wheelhouse {wheelhouse} (make setup fetches it)"
        kept = []
        for hook in repo.get("hooks") or []:
            hw = why
            if hw is None and hook["id"] not in manifest:
                hw = f"{url} {rev}: hook {hook['id']} is not in the local mirror's manifest"
            deps = [d for d in hook.get("additional_dependencies") or [] if not _in_wheelhouse(wheelhouse, d)]
            if hw is None and deps:
                hw = f"its additional dependencies {', '.join(deps)} are not in the wheelhouse"
            if hw:
                result.not_run[hook["id"]] = hw
                failed.append(_fail_hook(hook, manifest.get(hook["id"]), hw))
            else:
                kept.append(hook)
                result.pins[hook["id"]] = mirrors.pin(mirror, rev)
        if kept:
            repos.append({**repo, "hooks": kept})
            result.redirects[url] = (rev, mirrors.pin(mirror, rev))
    if failed:
        repos.append({"repo": "local", "hooks": failed})
    out["repos"] = repos
    return result


def _local_reason(hook: dict, wheelhouse: Path, exists: callable, unavailable: dict[str, str]) -> str | None:
    language = hook.get("language", "")
    if language not in RUNNABLE_LOCAL:
        return f"a local {language} hook"
    if hook.get("pass_filenames") is False:
        return f"it checks the whole repository ({hook.get('entry', '')}), which this lint does not hold"
    script = _script(hook.get("entry", ""), language)
    if script is None:
        return f"its entry {hook.get('entry', '')!r} is not a file of the repository"
    if not exists(script):
        return f"{script} is not at this ref"
    if script in unavailable:
        return unavailable[script]
    deps = [d for d in hook.get("additional_dependencies") or [] if not _in_wheelhouse(wheelhouse, d)]
    if deps:
        return f"its additional dependencies {', '.join(deps)} are not in the wheelhouse"
    return None


def dump(config: dict) -> str:
    return yaml.safe_dump(config, sort_keys=False, width=1000)

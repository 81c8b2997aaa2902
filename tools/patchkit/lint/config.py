"""Upstream's .pre-commit-config.yaml at the ref, made runnable here without changing what it selects.

The config is upstream's own, anchors and all (PyYAML resolves `*legacy_files`), with the global
`files`/`exclude`, every hook's `files`/`exclude`/`types`/`types_or`/`exclude_types`/
`always_run`/`stages` kept as they are, so the real pre-commit decides which hook selects which
file. What changes: a hook that cannot run here (its repository's tool is not on PyPI or not
in the wheelhouse, a local hook that needs the whole repository or a file the ref lacks)
becomes a local `language: fail` hook with the same selection: pre-commit then tells us
whether it would have checked our files, and we name it as not run, never as passed. Each
mirrored repository's rev becomes the tag of the tool version it pins (revs.py: a frozen
commit's `# frozen:` tag), which is what its local mirror is tagged with.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import mirrors, revs, wheels

SELECTION = ("files", "exclude", "types", "types_or", "exclude_types", "always_run", "stages")
RUNNABLE_LOCAL = ("python", "script")
NOT_RUN = "patchkit: not run here: "


@dataclass
class Plan:
    config: dict  # what pre-commit runs
    redirects: dict[str, tuple[str, str]] = field(default_factory=dict)  # url -> (the mirror's rev, requirement)
    not_run: dict[str, str] = field(default_factory=dict)  # hook id -> why
    scripts: set[str] = field(default_factory=set)  # files at the ref that local hooks run
    pins: dict[str, str] = field(default_factory=dict)  # hook id -> the tool it runs (ruff==0.9.4)
    wanted: set[str] = field(default_factory=set)  # requirements the wheelhouse lacks: fetch them, then plan again
    tool_missing: set[str] = field(default_factory=set)  # hook ids not run because their tool could not be fetched


def _lacking(wheelhouse: Path, reqs: list[str], unfetched: dict[str, str]) -> tuple[list[str], list[str]]:
    """Of reqs, those the wheelhouse lacks that were not tried yet, and the reasons of those that could not be fetched."""
    lacking = [r for r in reqs if not wheels.has(wheelhouse, r)]
    return [r for r in lacking if r not in unfetched], [unfetched[r] for r in lacking if r in unfetched]


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


def plan(text: str, *, wheelhouse: Path, exists: callable, unavailable: dict[str, str] | None = None,
         unfetched: dict[str, str] | None = None) -> Plan:
    """The runnable config for upstream's config text (which pre-commit has accepted); exists(path)
    says whether the ref has a file, unavailable which scripts cannot be had here all the same
    (path -> why), unfetched which requirements pip could not fetch (requirement -> why).
    A rev that names no version raises revs.Malformed."""
    cfg = yaml.safe_load(text) or {}
    frozen = revs.frozen(text)
    unfetched = unfetched or {}
    out = {k: v for k, v in cfg.items() if k != "repos"}
    out.pop("default_install_hook_types", None)
    result = Plan(out)
    repos: list[dict] = []
    failed: list[dict] = []

    def not_run(hook: dict, manifest: dict | None, why: str, missing: bool) -> None:
        result.not_run[hook["id"]] = why
        failed.append(_fail_hook(hook, manifest, why))
        if missing:
            result.tool_missing.add(hook["id"])

    for i, repo in enumerate(cfg.get("repos") or []):
        url = repo.get("repo", "")
        if url in ("local", "meta"):
            kept = []
            for hook in repo.get("hooks") or []:
                why, missing = (_local_reason(hook, wheelhouse, exists, unavailable or {}, unfetched, result)
                                if url == "local" else (None, False))
                if why:
                    not_run(hook, None, why, missing)
                else:
                    kept.append(hook)
                    script = _script(hook.get("entry", ""), hook.get("language", "")) if url == "local" else None
                    if script:
                        result.scripts.add(script)
            if kept:
                repos.append({**repo, "hooks": kept})
            continue
        rev = revs.resolve(url, str(repo.get("rev", "")), frozen.get(i))
        mirror = mirrors.MIRRORS.get(mirrors.key(url))
        manifest = {h["id"]: h for h in (mirror.hooks if mirror else ())}
        why, missing, pin = None, False, ""
        if mirror is None:
            why = f"{url} has no package on PyPI to mirror"
        elif not rev.version:
            why = (f"its rev is commit {rev.written[:12]} of {url}, which names no version here "
                   "(`pre-commit autoupdate --freeze` writes `# frozen: <tag>` beside it)")
        elif mirror.imitation:  # nothing to fetch: the mirror installs our own module
            pin = mirror.says(rev.written)
        else:
            pin = mirrors.pin(mirror, rev.version)
            todo, reasons = _lacking(wheelhouse, [pin], unfetched)
            result.wanted.update(todo)
            why = reasons[0] if reasons else (f"{pin} is not in the wheelhouse {wheelhouse}" if todo else None)
            missing = bool(reasons)
        kept = []
        for hook in repo.get("hooks") or []:
            hw, hmissing = why, missing
            if hw is None and hook["id"] not in manifest:
                hw = f"{url} {rev.written}: hook {hook['id']} is not in the local mirror's manifest"
            todo, reasons = _lacking(wheelhouse, list(hook.get("additional_dependencies") or []), unfetched)
            if mirror is not None and rev.version:  # fetched with the tool, in one round
                result.wanted.update(todo)
            if hw is None:
                hw, hmissing = (reasons[0], True) if reasons else (
                    (f"its additional dependencies {', '.join(todo)} are not in the wheelhouse", False) if todo
                    else (None, False))
            if hw:
                not_run(hook, manifest.get(hook["id"]), hw, hmissing)
            else:
                kept.append(hook)
                result.pins[hook["id"]] = pin
        if kept:
            tag = mirrors.mirror_rev(url, rev.tag)
            repos.append({**repo, "rev": tag, "hooks": kept})
            result.redirects[url] = (tag, pin)
    if failed:
        repos.append({"repo": "local", "hooks": failed})
    out["repos"] = repos
    return result


def _local_reason(hook: dict, wheelhouse: Path, exists: callable, unavailable: dict[str, str],
                  unfetched: dict[str, str], result: Plan) -> tuple[str | None, bool]:
    """Why a local hook cannot run here (None: it can), and whether that is a tool missing here."""
    language = hook.get("language", "")
    if language not in RUNNABLE_LOCAL:
        return f"a local {language} hook", False
    if hook.get("pass_filenames") is False:
        return f"it checks the whole repository ({hook.get('entry', '')}), which this lint does not hold", False
    script = _script(hook.get("entry", ""), language)
    if script is None:
        return f"its entry {hook.get('entry', '')!r} is not a file of the repository", False
    if not exists(script):
        return f"{script} is not at this ref", False
    if script in unavailable:
        return unavailable[script], False
    todo, reasons = _lacking(wheelhouse, list(hook.get("additional_dependencies") or []), unfetched)
    result.wanted.update(todo)
    if reasons:
        return reasons[0], True
    if todo:
        return f"its additional dependencies {', '.join(todo)} are not in the wheelhouse", False
    return None, False


def dump(config: dict) -> str:
    return yaml.safe_dump(config, sort_keys=False, width=1000)

"""Load and validate a target's patch set: the one place that parses patches/ and waivers/."""
from __future__ import annotations

import email
import email.policy
import re
from pathlib import Path, PurePosixPath
from typing import Any

import unidiff
import yaml

from .errors import BadInput, NotFound
from .model import (ChecklistAnswer, Container, FileChange, Hunk, Patch, PatchSet, PrIntent, Status, Tests, Upstream,
                    WaiverIntent)

METADATA = "patchset.yaml"
_SUBJECT_PREFIX = re.compile(r"^\[PATCH[^\]]*\]\s*")
_TARGET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def targets(root: Path) -> list[str]:
    """Every target with a patch set under root/patches."""
    base = root / "patches"
    return sorted(p.name for p in base.iterdir() if (p / METADATA).is_file()) if base.is_dir() else []


def load(root: Path, target: str) -> PatchSet:
    """Load patches/<target> and waivers/<target>.yaml; BadInput on anything malformed."""
    if not _TARGET_NAME.match(target or ""):
        raise BadInput(f"invalid target name {target!r}")
    set_dir = root / "patches" / target
    meta_file = set_dir / METADATA
    if not meta_file.is_file():
        known = ", ".join(targets(root)) or "none"
        raise NotFound(f"unknown target {target!r} (known: {known})")
    meta = _yaml(meta_file)
    where = str(meta_file.relative_to(root))

    upstream_meta = _mapping(meta, "upstream", where)
    upstream = Upstream(url=_str(upstream_meta, "url", where), ref=_str(upstream_meta, "ref", where))
    series = meta.get("series")
    if not isinstance(series, list) or not series:
        raise BadInput(f"{where}: 'series' must be a non-empty list of patch files")
    patches = []
    for i, entry in enumerate(series):
        if isinstance(entry, str):
            entry = {"file": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise BadInput(f"{where}: series[{i}] must name a patch file")
        name = entry["file"]
        if "/" in name or name.startswith("."):
            raise BadInput(f"{where}: series[{i}]: {name!r} must be a file name inside {set_dir.name}/")
        path = set_dir / name
        if not path.is_file():
            raise BadInput(f"{where}: series[{i}]: {name} does not exist")
        patches.append(parse_patch(path, tests_only=bool(entry.get("tests_only", False))))

    tests = _mapping(meta, "tests", where)
    container = _mapping(meta, "container", where)
    status = meta.get("status") or {}
    return PatchSet(
        target=target,
        root=set_dir,
        upstream=upstream,
        branch=meta.get("branch") or f"overlay/{target}",
        bug=_str(meta, "bug", where),
        title=_str(meta, "title", where),
        patches=tuple(patches),
        status=Status(forwarded=str(status.get("forwarded", "no")), applied_upstream=status.get("applied_upstream")),
        verified_on=tuple(meta.get("verified_on") or ()),
        tests=Tests(regression=tuple(tests.get("regression") or ()), neighbours=tuple(tests.get("neighbours") or ())),
        expected=meta.get("expected") or {},
        container=Container(base=_str(container, "base", where), site_packages=_str(container, "site_packages", where),
                            package=container.get("package", "tensorrt_llm")),
        waivers=_load_waiver_intent(root, target),
        extra_paths=tuple(meta.get("extra_paths") or ()),
        pr=_load_pr(meta.get("pr") or {}, where),
    )


def _load_pr(data: Any, where: str) -> PrIntent:
    """The optional pr: block (checklist answers, docs patterns); BadInput when malformed."""
    if not isinstance(data, dict):
        raise BadInput(f"{where}: 'pr' must be a mapping")
    answers = []
    for i, a in enumerate(data.get("checklist") or ()):
        if not (isinstance(a, dict) and all(isinstance(a.get(k), str) and a[k].strip() for k in ("item", "answer", "why"))):
            raise BadInput(f"{where}: pr.checklist[{i}] needs item, answer and why, each a non-empty string")
        if a["answer"] not in ("done", "n/a"):
            raise BadInput(f"{where}: pr.checklist[{i}].answer must be 'done' or 'n/a', not {a['answer']!r}")
        answers.append(ChecklistAnswer(a["item"], a["answer"], a["why"]))
    docs = data.get("docs") or []
    if not isinstance(docs, list) or not all(isinstance(d, str) and d.strip() for d in docs):
        raise BadInput(f"{where}: pr.docs must be a list of phrases")
    return PrIntent(tuple(answers), tuple(docs))


def parse_patch(path: Path, tests_only: bool = False) -> Patch:
    """Parse one git format-patch file; BadInput names the file and what is wrong."""
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{path.name}: not UTF-8 text") from None
    head, sep, rest = raw.partition("\n\n")
    msg = email.message_from_string(head + "\n\n", policy=email.policy.default)
    author, subject = msg.get("From"), msg.get("Subject")
    if not sep or not author or not subject or not msg.get("Date"):
        raise BadInput(f"{path.name}: not a git format-patch file (needs From, Date and Subject headers)")
    diff_at = re.search(r"^diff --git ", rest, re.M)
    if not diff_at:
        raise BadInput(f"{path.name}: contains no diff")
    diff = rest[diff_at.start():]
    body = re.split(r"^---$", rest[: diff_at.start()], maxsplit=1, flags=re.M)[0]
    diff = re.sub(r"\n-- \n[^\n]*\n*$", "\n", diff)  # the format-patch signature, if any
    addr = msg["From"].addresses[0]
    return Patch(
        file=path,
        author_name=addr.display_name,
        author_email=addr.addr_spec,
        date=str(msg["Date"]),
        subject=_SUBJECT_PREFIX.sub("", " ".join(str(subject).split())),
        body=body.strip("\n") + "\n" if body.strip() else "",
        diff=diff,
        files=_parse_diff(path.name, diff),
        tests_only=tests_only,
    )


def _parse_diff(name: str, diff: str) -> tuple[FileChange, ...]:
    try:
        parsed = unidiff.PatchSet(diff)
    except unidiff.UnidiffParseError as exc:
        raise BadInput(f"{name}: malformed diff: {exc}") from None
    if not len(parsed):
        raise BadInput(f"{name}: contains no file changes")
    link = re.search(r"^(?:new file |deleted file |new |old )mode 120000", diff, re.M)
    if link:
        raise BadInput(f"{name}: creates or changes a symlink; refusing")
    changes = []
    for pf in parsed:
        old = "" if pf.is_added_file else _safe_path(name, pf.source_file, "a/")
        new = "" if pf.is_removed_file else _safe_path(name, pf.target_file, "b/")
        hunks = tuple(
            Hunk(
                header=f"@@ -{h.source_start},{h.source_length} +{h.target_start},{h.target_length} @@",
                old_start=h.source_start,
                old_len=h.source_length,
                preimage=tuple(line.value for line in h if not line.is_added),
                postimage=tuple(line.value for line in h if not line.is_removed),
            )
            for h in pf
        )
        changes.append(FileChange(path=new, old_path=old, added=pf.is_added_file, removed=pf.is_removed_file, hunks=hunks))
    return tuple(changes)


def _safe_path(name: str, raw: str, prefix: str) -> str:
    """A repository-relative path from a diff header, or BadInput if it leaves the tree."""
    path = raw[len(prefix):] if raw.startswith(prefix) else raw
    pure = PurePosixPath(path)
    if raw.startswith("/") or path.startswith("/") or pure.is_absolute() or ".." in pure.parts or not path:
        raise BadInput(f"{name}: path {raw!r} points outside the tree; refusing")
    if ".git" in pure.parts:
        raise BadInput(f"{name}: path {raw!r} writes into .git; refusing")
    return path


def _load_waiver_intent(root: Path, target: str) -> WaiverIntent | None:
    path = root / "waivers" / f"{target}.yaml"
    if not path.is_file():
        return None
    data = _yaml(path)
    where = str(path.relative_to(root))
    must_run = data.get("must_run")
    if not isinstance(must_run, list) or not all(isinstance(t, str) for t in must_run):
        raise BadInput(f"{where}: 'must_run' must be a list of test paths")
    return WaiverIntent(
        waives_file=_str(data, "waives_file", where),
        must_run=tuple(must_run),
        reason=_str(data, "reason", where),
        test_db=str(data.get("test_db", "tests/integration/test_lists/test-db")),
    )


def _yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        at = f" line {line + 1}" if line is not None else ""
        raise BadInput(f"{path.name}{at}: not valid YAML") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path.name}: must be a YAML mapping")
    return data


def _mapping(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise BadInput(f"{where}: '{key}' must be a mapping")
    return value


def _str(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise BadInput(f"{where}: '{key}' must be a non-empty string")
    return value

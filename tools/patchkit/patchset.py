"""Load and validate a target's patch set: the one place that parses patches/ and waivers/."""
from __future__ import annotations

import email
import email.errors
import email.policy
import email.utils
import re
from pathlib import Path, PurePosixPath
from typing import Any

import unidiff

from . import patchcheck, provenance, schema as S
from .errors import BadInput, NotFound
from .model import (FIX_KINDS, OURS, TEST_DB, ChecklistAnswer, Container, FileChange, Fix, Hunk, Patch, PatchSet, PrIntent,
                    Status, Tests, Upstream, Variant, WaiverIntent, is_test_path)
from .names import ref_format_ok
from .provenance import trailers  # noqa: F401  (patchset.trailers: the one parse of a message's trailers)
from .text.words import control

METADATA = "patchset.yaml"
_SUBJECT_PREFIX = re.compile(r"^\[PATCH[^\]]*\]\s*")
TARGET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def targets(root: Path) -> list[str]:
    """Every target with a patch set under root/patches."""
    base = root / "patches"
    return sorted(p.name for p in base.iterdir() if (p / METADATA).is_file()) if base.is_dir() else []


_OUTCOMES = ("passed", "failed", "error", "skipped", "not_run")
_COUNTS = S.record({k: S.optional(S.count(), 0) for k in _OUTCOMES})
# not_measured: why nothing is declared (make backport runs a pull request's tests fenced, or not at all)
_EXPECTATION = S.record({"unpatched": S.optional(_COUNTS), "patched": S.optional(_COUNTS),
                         "not_run": S.optional(S.boolean(), False), "not_measured": S.optional(S.string())})
# tests_only is what the file's paths say (model.is_test_path); the key is still read, and
# must agree with them.
_SERIES_ENTRY = S.one_of(S.string(), S.record({"file": S.string(), "tests_only": S.optional(S.boolean())}))
FIX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_VARIANT_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_SENTENCE_LIMIT = 600  # a sentence a reviewer reads in the PR body, not a narrative
# What one fix declares (in a stack's fixes: list; or, for a one-fix set, at the top level).
_FIX_FIELDS = {
    "title": S.string(),
    "bug": S.string(),
    "variant": S.optional(S.record({"name": S.string(), "differs": S.optional(S.string())})),
    "series": S.list_of(_SERIES_ENTRY, nonempty=True, limit=1000),
    "status": S.optional(S.record({"forwarded": S.optional(S.scalar(), "no"),
                                    "applied_upstream": S.optional(S.scalar())}), {}),
    "verified_on": S.optional(S.list_of(S.mapping_of(S.string(), S.scalar())), []),
    "tests": S.record({"regression": S.list_of(S.rel_path()), "neighbours": S.optional(S.list_of(S.rel_path()), [])}),
    "expected": S.optional(S.mapping_of(S.string(), S.mapping_of(S.rel_path(), _EXPECTATION)), {}),
    "pr": S.optional(S.record({
        "checklist": S.optional(S.list_of(S.record({"item": S.string(), "answer": S.string(), "why": S.string()}))),
        "docs": S.optional(S.list_of(S.string()))}), {}),
}
FIX_SCHEMA = S.record({
    "id": S.one_of(S.string(), S.count()),
    "kind": S.string(),
    "origin": S.optional(S.string()),
    "upstream_commits": S.optional(S.list_of(S.string()), []),
    "upstream_base": S.optional(S.string(), ""),
    **_FIX_FIELDS,
})
_TARGET_FIELDS = {
    "upstream": S.record({"url": S.string(), "ref": S.string(), "base": S.optional(S.string(), "")}),
    "branch": S.optional(S.string()),
    "container": S.record({"base": S.string(), "site_packages": S.string(), "package": S.optional(S.string(), "tensorrt_llm"),
                           "devel": S.optional(S.string(), ""), "cuda_archs": S.optional(S.string(), "")}),
    "extra_paths": S.optional(S.list_of(S.rel_path()), []),
    # Fixes the set from which make new-set made this one carried, and this one's ref has:
    # where upstream has them (DEP-3 Applied-Upstream), as radar found it.
    "retired": S.optional(S.list_of(S.record({"id": S.one_of(S.string(), S.count()), "title": S.optional(S.string()),
                                              "applied_upstream": S.string()})), []),
}
# A stack: the target's fields and its fixes, in the order they apply.
STACK_SCHEMA = S.record({**_TARGET_FIELDS, "fixes": S.list_of(FIX_SCHEMA, nonempty=True, limit=200)})
# The one-fix form (every set before stacks): the fix's fields beside the target's; it is a
# stack of one fix of ours, whose id is the bug's number.
PATCHSET_SCHEMA = S.record({k: {**_TARGET_FIELDS, **_FIX_FIELDS}[k] for k in (
    "title", "bug", "variant", "upstream", "branch", "series", "status", "verified_on", "tests", "expected", "container",
    "extra_paths", "pr", "retired")})
WAIVERS_SCHEMA = S.record({
    "waives_file": S.rel_path(),
    "must_run": S.list_of(S.rel_path()),
    "reason": S.string(),
    "test_db": S.optional(S.rel_path(), TEST_DB),
})


def load(root: Path, target: str, *, filing: bool = True) -> PatchSet:
    """Load patches/<target> and waivers/<target>.yaml; BadInput on anything malformed, and on a
    patch whose Origin names another fix than the one it is filed under (filing=False: make
    export, which files a branch's commits by their Origin anew, reads such a set)."""
    if not TARGET_NAME.match(target or "") or len(target) > 100:
        raise BadInput(f"invalid patch set name {target[:100]!r}")
    set_dir = root / "patches" / target
    meta_file = set_dir / METADATA
    if not meta_file.is_file():
        known = ", ".join(targets(root)) or "none"
        raise NotFound(f"unknown patch set {target!r} (known: {known})")
    where = str(meta_file.relative_to(root))
    raw = _yaml(meta_file, where)
    stacked = "fixes" in raw
    meta = S.validate(raw, STACK_SCHEMA if stacked else PATCHSET_SCHEMA, where)
    branch = meta.get("branch") or f"overlay/{target}"
    check_branch_name(branch, f"{where}: branch")
    ref = meta["upstream"]["ref"]
    if ref.startswith("-") or not ref_format_ok(ref if ref.startswith("refs/") else f"refs/tags/{ref}"):
        raise BadInput(f"{where}: upstream.ref: {ref[:100]!r} is not a valid ref name")
    if stacked:
        fixes = tuple(_fix(set_dir, f, where, f"fixes[{i}]") for i, f in enumerate(meta["fixes"]))
    else:
        fixes = (_fix(set_dir, dict(meta, id=_bug_number(meta["bug"]) or target, kind=OURS), where, ""),)
    seen: dict[str, str] = {}
    for f in fixes:
        if f.id in seen:
            raise BadInput(f"{where}: fix {f.id!r} is in the stack twice")
        seen[f.id] = f.id
        for p in f.patches:
            if p.name in seen and seen[p.name] != f.id:
                raise BadInput(f"{where}: {p.name} is in the series of fixes {seen[p.name]} and {f.id}")
            seen[p.name] = f.id
    if filing:
        wrong = provenance.misfiled(target, fixes)
        if wrong:
            more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
            raise BadInput(f"{wrong[0]}{more}; each patch's Origin names the fix it belongs to (make export files "
                           "a branch's commits by it)")
    container = meta["container"]
    return PatchSet(
        target=target,
        root=set_dir,
        upstream=Upstream(url=meta["upstream"]["url"], ref=meta["upstream"]["ref"], base=meta["upstream"]["base"]),
        branch=branch,
        fixes=fixes,
        container=Container(base=container["base"], site_packages=container["site_packages"],
                            package=container["package"], devel=container["devel"],
                            cuda_archs=container["cuda_archs"]),
        waivers=_load_waiver_intent(root, target),
        extra_paths=tuple(meta["extra_paths"]),
    )


_BUG_NUMBER = re.compile(r"/(?:issues|pull)/(\d+)/?$|^#?(\d+)$")


def _bug_number(url: str) -> str:
    m = _BUG_NUMBER.search(url.strip())
    return (m[1] or m[2]) if m else ""


def _fix(set_dir: Path, meta: dict, where: str, at: str) -> Fix:
    """One fix of the stack, its patches parsed; at: its key path in the file ('' at the top)."""
    key = (lambda k: f"{at}.{k}" if at else k)  # noqa: E731
    fix_id = str(meta["id"])
    if not FIX_ID.match(fix_id):
        raise BadInput(f"{where}: {key('id')}: {fix_id[:70]!r} must be letters, digits, '.', '_' or '-' (e.g. 19514)")
    if meta["kind"] not in FIX_KINDS:
        raise BadInput(f"{where}: {key('kind')}: must be one of {', '.join(FIX_KINDS)}, not {meta['kind'][:40]!r}")
    patches = []
    for i, entry in enumerate(meta["series"]):
        if isinstance(entry, str):
            entry = {"file": entry}
        name = entry["file"]
        if "/" in name or "\\" in name or name.startswith("."):
            raise BadInput(f"{where}: {key('series')}[{i}]: {name!r} must be a file name inside {set_dir.name}/")
        path = set_dir / name
        if not path.is_file():
            raise BadInput(f"{where}: {key('series')}[{i}]: {name} does not exist")
        patch = parse_patch(path)
        if entry.get("tests_only") is not None and entry["tests_only"] != patch.tests_only:
            said = (f"changes {next(p for p in patch.paths if not is_test_path(p))}, which is not a test file"
                    if entry["tests_only"] else "changes only test files")
            raise BadInput(f"{where}: {key('series')}[{i}]: tests_only: {str(entry['tests_only']).lower()}, but {name} "
                           f"{said}; remove the key (the files decide)")
        patches.append(patch)
    status = meta["status"]
    applied = status.get("applied_upstream")
    tests = meta["tests"]
    return Fix(
        id=fix_id,
        kind=meta["kind"],
        title=meta["title"],
        bug=meta["bug"],
        origin=meta.get("origin") or meta["bug"],
        patches=tuple(patches),
        status=Status(forwarded=str(status.get("forwarded") or "no"),
                      applied_upstream=None if applied is None else str(applied)),
        tests=Tests(regression=tuple(tests["regression"]), neighbours=tuple(tests["neighbours"])),
        expected=meta["expected"],
        verified_on=tuple(meta["verified_on"]),
        pr=_load_pr(meta.get("pr") or {}, where),
        variant=_load_variant(meta.get("variant"), where, key("variant")),
        upstream_commits=tuple(meta.get("upstream_commits") or ()),
        upstream_base=meta.get("upstream_base") or "",
    )


def _load_variant(data: Any, where: str, key: str) -> Variant | None:
    """The optional variant: block (#25): a name of lower-case words joined by '-', and at most
    one sentence saying how the form differs from the verified one; BadInput when malformed."""
    if data is None:
        return None
    name, differs = data["name"], (data.get("differs") or "").strip()
    if not _VARIANT_NAME.match(name) or len(name) > 40:
        raise BadInput(f"{where}: {key}.name: {name[:60]!r} must be lower-case words joined by '-' "
                       "(at most 40 characters), e.g. as-verified")
    if differs and (len(differs) > _SENTENCE_LIMIT or not differs.endswith(".")
                    or re.search(r"[.!?] +[A-Z]", differs)):
        raise BadInput(f"{where}: {key}.differs: must be one sentence ending in '.', at most "
                       f"{_SENTENCE_LIMIT} characters (make pr puts it in the PR's description as it is)")
    return Variant(name=name, differs=differs)


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


def check_branch_name(branch: str, where: str) -> None:
    """A branch name git accepts, that can never be read as an option.

    `git check-ref-format --branch` semantics: a full-ref check of refs/heads/<name>, plus
    the two names git's own branch check refuses on top (strbuf_check_branch_ref): a leading
    '-' and HEAD (issue #17 item 12: `branch: HEAD` made refs/heads/HEAD).
    """
    if branch.startswith("-") or branch == "HEAD" or not ref_format_ok(f"refs/heads/{branch}"):
        raise BadInput(f"{where}: {branch[:100]!r} is not a valid branch name")


def parse_patch(path: Path) -> Patch:
    """Parse one git format-patch file; BadInput names the file and what is wrong (patchcheck:
    what no patch may carry)."""
    raw = S.read_text(path, path.name)
    head, sep, rest = raw.partition("\n\n")
    if not sep:
        raise BadInput(f"{path.name}: not a git format-patch file (no blank line after the headers)")
    try:
        msg = email.message_from_string(head + "\n\n", policy=email.policy.default)
        author, subject, date = msg.get("From"), msg.get("Subject"), msg.get("Date")
        if not author or not subject or not date:
            raise BadInput(f"{path.name}: not a git format-patch file (needs From, Date and Subject headers)")
        addresses = author.addresses
        date_text = str(date)
    except (ValueError, IndexError, TypeError, AttributeError, LookupError, email.errors.MessageError):
        raise BadInput(f"{path.name}: unreadable mail headers") from None
    if len(addresses) != 1 or not addresses[0].display_name or "@" not in addresses[0].addr_spec:
        raise BadInput(f"{path.name}: From: must be one 'Name <email>', not {str(author)[:80]!r}")
    addr = addresses[0]
    name, mail = addr.display_name, addr.addr_spec
    subject_text = " ".join(str(subject).split())
    for label, value in (("From", name + mail), ("Date", date_text), ("Subject", subject_text)):
        if found := control(value):
            raise BadInput(f"{path.name}: {label}: contains a control character ({found})")
    if not _valid_date(date_text):
        raise BadInput(f"{path.name}: Date: {date_text[:60]!r} is not an RFC 2822 date")
    diff_at = re.search(r"^diff --git ", rest, re.M)
    if not diff_at:
        raise BadInput(f"{path.name}: contains no diff")
    diff = rest[diff_at.start():]
    subject_text = _SUBJECT_PREFIX.sub("", subject_text)
    # The checks every patch passes, ours and a backport's (patchcheck.py): the message as git
    # am reads it, then what each file of the diff is.
    body, wrong = patchcheck.file_message(subject_text, rest[: diff_at.start()])
    diff = re.sub(r"\n-- \n[^\n]*\n*$", "\n", diff)  # the format-patch signature, if any
    wrong = wrong or patchcheck.diff(diff)
    if wrong:
        raise BadInput(f"{path.name}: {wrong}; refusing")
    text = body.strip("\n") + "\n" if body.strip() else ""
    return Patch(
        file=path,
        author_name=name,
        author_email=mail,
        date=date_text,
        subject=subject_text,
        body=text,
        diff=diff,
        files=_parse_diff(path.name, diff),
        trailers=trailers(text),
    )


def _valid_date(text: str) -> bool:
    """An RFC 2822 date with a zone, in a year git can store."""
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return False
    return when.tzinfo is not None and 1970 <= when.year < 10000


def _parse_diff(name: str, diff: str) -> tuple[FileChange, ...]:
    try:
        parsed = unidiff.PatchSet(diff)
    except unidiff.UnidiffParseError as exc:
        raise BadInput(f"{name}: malformed diff: {' '.join(str(exc).split())[:200]}") from None
    except (ValueError, IndexError, TypeError, AttributeError, KeyError):
        raise BadInput(f"{name}: malformed diff") from None
    if not len(parsed):
        raise BadInput(f"{name}: contains no file changes")
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
        changes.append(FileChange(path=new, old_path=old, added=pf.is_added_file, hunks=hunks))
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
    where = str(path.relative_to(root))
    data = S.validate(_yaml(path, where), WAIVERS_SCHEMA, where)
    return WaiverIntent(waives_file=data["waives_file"], must_run=tuple(data["must_run"]), reason=data["reason"],
                        test_db=data["test_db"])


def _yaml(path: Path, where: str) -> dict[str, Any]:
    data = S.load_yaml(S.read_text(path, where), where, max_aliases=0)
    if not isinstance(data, dict):
        raise BadInput(f"{where}: must be a YAML mapping")
    return data

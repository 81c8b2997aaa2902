"""make summary: many delta, lint and radar reports (a workflow's artifacts) as one table.

One row per target, check, upstream commit and, for a delta, fix of the target's stack (a
delta report of schema 2 has a section per fix; one of schema 1, before stacks, reads as the
report of a stack of one fix, the set's own): reports measured at different upstream
commits are never merged into one row, and a target measured at more than one commit, or a
report made for another version of its patch set, is flagged. A file that looks like a report
and is not a sound one (bad or truncated JSON, a report's keys with wrong values) is one line
and exit 2: a summary that skipped it would say less than it seems to. What is no report at all
is skipped and named, in the output and the table (#27 item 6): a git checkout or repository
under the folders (`make summary REPORTS=build` after `make demo` met build/demo/trtllm-main's
.git/patchkit/main.json), JSON of another kind, and this command's own summary.json.
"""
from __future__ import annotations

import importlib.resources
import json
import os
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import jinja2

from .. import atomic, patchset, schema as S
from ..errors import BadInput, NotFound

GOOD = ("matches", "fixed upstream", "clean", "unchanged", "nothing to do")


@dataclass(frozen=True)
class Row:
    target: str
    check: str  # "delta source", "delta container", "lint", "radar"
    upstream_commit: str
    counts: str
    verdict: str
    flags: tuple[str, ...]
    reports: tuple[str, ...]  # the files, relative to REPORTS
    ok: bool = False  # the verdict is a good one and nothing is flagged
    fix: str = ""  # the fix of the stack a delta or radar row reports ("" : a check of the whole stack, lint)


def _row(target: str, fix: str, check: str, commit: str, counts: str, verdict: str, flags: list[str],
         reports: list[str]) -> Row:
    return Row(target, check, commit, counts, verdict, tuple(flags), tuple(reports), verdict in GOOD and not flags, fix)


@dataclass
class SummaryResult:
    reports_dir: str  # the folders read, separated by ", "
    rows: list[Row]
    ok: bool
    markdown: str = ""
    written: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # what is no report: "path (why)"


# -- the report kinds: how each is recognised, checked and read into a row ------------------
_TREE = S.record({k: S.optional(S.count(), 0) for k in ("passed", "failed", "error", "skipped", "not_run")},
                 unknown=True)
# What a delta report says of one fix (schema 1: at its top level; schema 2: each of `fixes`).
_FIX_DELTA = {
    "matches_expected": S.boolean(), "valid": S.boolean(), "unpatched": _TREE, "patched": S.optional(_TREE),
    "expected": S.optional(S.mapping_of(S.string(), S.record({}, unknown=True))),
    "tests": S.optional(S.list_of(S.string())),
    "fixed_upstream": S.optional(S.record({}, unknown=True)),
}
_DELTA_TARGET = {"target": S.string(), "mode": S.string(), "upstream_commit": S.string(), "upstream_ref": S.string(),
                 "matches_expected": S.boolean()}
_DELTA_1 = S.record({**_DELTA_TARGET, **_FIX_DELTA}, unknown=True)
_DELTA_2 = S.record({**_DELTA_TARGET, "schema": S.count(), "valid": S.boolean(),
                     "fixes": S.list_of(S.record({"id": S.string(), "kind": S.string(), **_FIX_DELTA}, unknown=True))},
                    unknown=True)
DELTA_SCHEMAS = {1: _DELTA_1, 2: _DELTA_2}


def _delta_check(value: Any, key: str, where: str = "") -> Any:
    """A delta report of a schema this patchkit reads (1, before stacks, has no `schema` key)."""
    schema = value.get("schema", 1) if isinstance(value, dict) else 1
    if schema not in DELTA_SCHEMAS:
        raise S.fail(where, "schema", f"{schema!r} is not a delta report schema this patchkit reads "
                                      f"({', '.join(map(str, DELTA_SCHEMAS))})")
    return DELTA_SCHEMAS[schema](value, key, where)


@dataclass(frozen=True)
class Reading:
    """One row's worth of a report: which fix (delta), check, commit, counts, verdict, and why stale."""

    fix: str
    check: str
    commit: str
    counts: str
    verdict: str
    stale: str | None = None


@dataclass(frozen=True)
class Kind:
    name: str
    keys: frozenset[str]  # a report of this kind has all of these
    check: Callable[[Any, str, str], Any]
    read: Callable[[dict, Any], list[Reading]]  # (the report, the target's set on disk or None) -> its rows


def _counts(tree: dict) -> str:
    return ", ".join(f"{tree[k]} {k.replace('_', ' ')}" for k in ("passed", "failed", "error", "skipped", "not_run")
                     if tree.get(k)) or "no tests"


def _delta_rows(d: dict, ps) -> list[Reading]:
    """A row per fix the report grades; a schema 1 report grades the set's own fix (the only own
    fix of the set on disk, whose expectations it was graded against)."""
    if "fixes" in d:
        return [Reading(s["id"], f"delta {d['mode']}", d["upstream_commit"], *_delta_said(s),
                        _delta_stale(d["mode"], s, ps) if ps is not None else None) for s in d["fixes"]]
    own = ([f for f in ps.fixes if f.ours] or list(ps.fixes)) if ps is not None else []
    s = dict(d, id=own[0].id if len(own) == 1 else "")
    stale = (_before_stack(ps) or _delta_stale(d["mode"], s, ps)) if ps is not None else None
    return [Reading(s["id"], f"delta {d['mode']}", d["upstream_commit"], *_delta_said(s), stale)]


def _delta_said(s: dict) -> tuple[str, str]:
    counts = f"unpatched {_counts(s['unpatched'])}"
    if s.get("patched"):
        counts += f" → patched {_counts(s['patched'])}"
    if s.get("fixed_upstream"):
        verdict = "fixed upstream"
    elif not s["valid"]:
        verdict = "invalid"
    else:
        verdict = "matches" if s["matches_expected"] else "mismatch"
    return counts, verdict


def _delta_stale(mode: str, s: dict, ps) -> str | None:
    """A section graded against expectations, or for tests, that its fix no longer declares."""
    fix = next((f for f in ps.fixes if f.id == s["id"]), None)
    if fix is None:
        return _gone(ps, s["id"]) if s["id"] else f"stale: the {ps.target} set carries {len(ps.fixes)} fixes now"
    who = f"fix {fix.id}'s" if ps.stacked else "the set's"
    if "expected" in s and s["expected"] != (fix.expected or {}).get(mode, {}):
        return f"stale: {who} expected delta changed since"
    if "tests" in s and list(s["tests"]) != list(fix.tests.all):
        return f"stale: {who} tests changed since"
    return None


_COMMIT = S.record({"commit": S.string()}, unknown=True)
_RADAR_FIX = S.record({"id": S.string(), "changed": S.boolean(), "action": S.string()}, unknown=True)
_RADAR = S.record({"target": S.string(), "since": _COMMIT, "until": _COMMIT, "changed": S.boolean(),
                   "action": S.string(), "verdict": S.string(), "commits_in_range": S.count(),
                   "fixes": S.optional(S.list_of(_RADAR_FIX))}, unknown=True)


def _radar_row(d: dict, ps) -> list[Reading]:
    """make radar: measured up to its UNTIL commit; changed means a status moved since SINCE; one
    that needed work already at SINCE (and radar exited 1 for it) is not "unchanged"; one that
    moved for the better (a set made anew after SINCE: radar exits 0) has "nothing to do" (#33
    item 5: radar's exit and the summary agree). A row per fix where the report has a section
    per fix (schema 2), else one for the set."""
    counts = f"{d['commits_in_range']} commits since {d['since']['commit'][:12]}"
    return [Reading(s.get("id", ""), "radar", d["until"]["commit"], counts,
                    ("nothing to do" if s["changed"] else "unchanged") if s["action"] == "nothing" else
                    f"changed: {s['action']}" if s["changed"] else f"already at SINCE: {s['action']}",
                    _radar_stale(s, ps, "fixes" in d) if ps is not None else None)
            for s in (d.get("fixes") or [d])]


def _radar_stale(s: dict, ps, per_fix: bool) -> str | None:
    """A fix's section for a fix the set no longer carries (retired as radar said, since), or a
    report of the whole set from before it was a stack."""
    if per_fix:
        return _gone(ps, s["id"]) if s["id"] not in {f.id for f in ps.fixes} else None
    return _before_stack(ps)


def _gone(ps, fix_id: str) -> str:
    """A report's section for a fix the set no longer carries."""
    return f"stale: {ps.target} carries no fix {fix_id} now"


def _before_stack(ps) -> str | None:
    """A report of the whole set from before it was a stack (schema 1), read now that it is one."""
    return f"stale: measured before the stack ({len(ps.fixes)} fixes now), as a set of one fix" if ps.stacked \
        else None


_LINT = S.record({"target": S.string(), "upstream_commit": S.string(), "patch_set": S.string(),
                  "ran": S.list_of(S.string()),
                  "failures": S.list_of(S.record({"file": S.string(), "hook": S.string()}, unknown=True)),
                  "config_found": S.optional(S.boolean(), True)}, unknown=True)


def _lint_row(d: dict, ps) -> list[Reading]:
    """make lint: upstream's own hooks on the series' files: the whole stack's (make lint), or one
    own fix's alone (make pr lints the PR's series: <out>/lint.json), which is that fix's row."""
    counts = f"{len(d['ran'])} hooks ran, {len(d['failures'])} failing"
    verdict = "clean" if d["config_found"] and not d["failures"] else \
        ("no pre-commit config" if not d["config_found"] else "hooks fail")
    if d.get("error") or d.get("tool_missing"):  # pre-commit or a pinned tool could not run: no verdict
        verdict = "not checked"
    fix, stale = "", None
    if ps is not None and d["patch_set"] != ps.content_hash:
        fix = next((f.id for f in ps.fixes if ps.stacked and ps.only(f).content_hash == d["patch_set"]), "")
        stale = None if fix else "stale: made for another version of the set"
    return [Reading(fix, "lint", d["upstream_commit"], counts, verdict, stale)]


KINDS: list[Kind] = [
    Kind("delta", frozenset({"target", "mode", "upstream_commit", "matches_expected"}), _delta_check, _delta_rows),
    Kind("lint", frozenset({"target", "upstream_commit", "patch_set", "ran", "failures"}), _LINT, _lint_row),
    Kind("radar", frozenset({"target", "since", "until", "changed", "action", "timeline"}), _RADAR, _radar_row),
]


def _load(path: Path, where: str) -> Any:
    text = S.read_text(path, where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # cut at the end, or inside a string (the decoder names where that string began)
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            raise BadInput(f"{where}: truncated: the JSON ends at line {exc.lineno} before it is complete") from None
        raise BadInput(f"{where}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise BadInput(f"{where}: too deeply nested") from None


def _kind(data: Any) -> Kind | str:
    """The kind of report data is, or why it is none."""
    if isinstance(data, dict):
        for kind in KINDS:
            if kind.keys <= data.keys():
                return kind
        what = f"its keys are {', '.join(sorted(map(str, data))[:8]) or 'none'}"
    else:
        what = f"it is a JSON {type(data).__name__.replace('dict', 'object').replace('NoneType', 'null')}"
    names = [k.name for k in KINDS]
    names = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
    return f"not a {names} report: {what}"


def _files(folders: list[Path], out: Path | None) -> tuple[list[tuple[Path, str]], list[str]]:
    """Every *.json under the folders (path, name in the table), and what was skipped as no report:
    a git repository's own folder and a checkout's files (upstream's, or git's), our own output."""
    found, skipped = [], []
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            here = Path(dirpath)
            if here != folder and (here / ".git").exists():
                skipped.append(f"{here}/ (a git checkout)")
                dirnames[:] = []
                continue
            if ".git" in dirnames:
                skipped.append(f"{here / '.git'}/ (git's own folder)")
            dirnames[:] = sorted(n for n in dirnames if n != ".git")
            for name in sorted(f for f in filenames if f.endswith(".json")):
                path = here / name
                if out is not None and here.resolve() == out:
                    skipped.append(f"{path} (this command's own output)")
                elif path.is_file():
                    rel = path.relative_to(folder).as_posix()
                    found.append((path, rel if len(folders) == 1 else f"{folder}/{rel}"))
    return found, skipped


def folders(values: list[Path]) -> list[Path]:
    """REPORTS="build reports", or --reports given more than once: the folders. A value that is
    no folder is split at spaces, make's own way of listing (a folder's name may have spaces)."""
    return [f for v in values for f in ([v] if v.is_dir() else [Path(w) for w in str(v).split()] or [v])]


def summarize(root: Path, reports: Path | list[Path], out: Path | None = None,
              step_summary: Path | None = None) -> SummaryResult:
    """Read every report under the folders, one row per target, check and upstream commit; write
    summary.md and summary.json to out, and append the Markdown to step_summary (GitHub's)."""
    folders = [reports] if isinstance(reports, Path) else list(reports)
    for folder in folders:
        if not folder.is_dir():
            raise NotFound(f"no folder {folder}", setting="reports")
    files, skipped = _files(folders, out.resolve() if out is not None else None)
    if not files:
        raise NotFound(f"no reports (*.json) under {', '.join(map(str, folders))}", setting="reports")
    sets = {t: None for t in patchset.targets(root)}
    # (target, check, fix, commit) -> [((counts, verdict), report, stale)]
    grouped: dict[tuple[str, str, str, str], list[tuple[tuple[str, str], str, str | None]]] = defaultdict(list)
    fix_order: dict[tuple[str, str], int] = {}  # (target, fix) -> where the fix is in its stack
    read = []
    for path, rel in files:
        data = _load(path, str(path))
        kind = _kind(data)
        if isinstance(kind, str):
            skipped.append(f"{path} ({kind})")
            continue
        read.append(path)
        data = S.validate(data, kind.check, str(path))
        target = data["target"]
        if target in sets and sets[target] is None:
            sets[target] = patchset.load(root, target)
        ps = sets.get(target)
        order = [f.id for f in ps.fixes] if ps is not None else []
        for i, r in enumerate(kind.read(data, ps)):
            stale = f"no patch set {target} under patches/" if target not in sets else r.stale
            fix_order.setdefault((target, r.fix), order.index(r.fix) if r.fix in order else len(order) + i)
            grouped[(target, r.check, r.fix, r.commit)].append(((r.counts, r.verdict), rel, stale))
    if not grouped:
        raise NotFound(f"no delta, lint or radar report under {', '.join(map(str, folders))} "
                       f"({len(skipped)} skipped: {skipped[0]}{', ...' if len(skipped) > 1 else ''})", setting="reports")
    commits: dict[str, set[str]] = defaultdict(set)
    for target, _check, _fix, commit in grouped:
        commits[target].add(commit)
    rows = []
    for (target, check, fix, commit), found in sorted(grouped.items(), key=lambda kv: (
            kv[0][0], _order(kv[0][1]), fix_order[(kv[0][0], kv[0][2])], kv[0][3])):
        by_result: dict[tuple[str, str], list] = defaultdict(list)
        for result, rel, stale in found:
            by_result[result].append((rel, stale))
        for (counts, verdict), same in by_result.items():
            flags = sorted({s for _, s in same if s})
            others = sorted(c[:12] for c in commits[target] - {commit})
            if others:  # whatever this row's verdict: the target's rows are not one measurement
                flags.append(f"{target} also measured at {', '.join(others)}: rows of different upstream commits")
            if len(by_result) > 1:
                of = f"{target} fix {fix}" if fix else target
                flags.append(f"reports disagree: another {check} report of {of} at this commit says otherwise")
            rows.append(_row(target, fix, check, commit, counts, verdict, flags, [rel for rel, _ in same]))
    res = SummaryResult(", ".join(map(str, folders)), rows, all(r.ok for r in rows), skipped=skipped)
    res.markdown = _render(res)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in (("summary.md", res.markdown), ("summary.json", as_json(res))):
            atomic.write_text(out / name, text)  # beside it, fsynced, renamed: a failed run leaves the old file whole
            res.written.append(str(out / name))
    if step_summary is not None:
        extra = [p.with_suffix(".md") for p in read if p.with_suffix(".md").is_file()]  # the radar's own Markdown
        with step_summary.open("a", encoding="utf-8") as fh:  # an OSError is one line, naming the file (cli)
            fh.write(res.markdown)
            for md in extra:
                fh.write("\n" + S.read_text(md))
    return res


def _order(check: str) -> tuple[int, str]:
    first = ("delta source", "delta container", "lint", "radar")
    return (first.index(check), check) if check in first else (len(first), check)


def as_json(res: SummaryResult) -> str:
    """summary.json: the rows as --json prints them, without the Markdown."""
    return json.dumps({"reports_dir": res.reports_dir, "ok": res.ok, "rows": [asdict(r) for r in res.rows],
                       "skipped": res.skipped}, indent=2, sort_keys=True) + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _render(res: SummaryResult) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True,
                             loader=jinja2.FunctionLoader(
                                 lambda name: importlib.resources.files("patchkit").joinpath("templates", name)
                                 .read_text(encoding="utf-8")))
    env.filters["cell"] = _cell
    return env.get_template("summary.md.j2").render(rows=res.rows, ok=res.ok, reports=len({f for r in res.rows for f in r.reports}),
                                                    skipped=len(res.skipped))

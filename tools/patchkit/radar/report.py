"""make radar's result as people read it: the timeline and each fix's verdict as text, and the
same as Markdown (build/radar/<target>.md, for an issue or $GITHUB_STEP_SUMMARY)."""
from __future__ import annotations

from collections.abc import Sequence

from ..text.table import table


def _radar_rows(r) -> tuple[list[list[str]], list[list[str]]]:
    """The timeline's header rows and rows, its columns grouped by fix: each fix's patches
    (by number), then its tests' verdict where they were probed. A stack of one fix has the one
    header row it had before stacks; a stack of several has the fixes' ids above their columns."""
    def probed(f) -> bool:
        return not f.tests.get("skipped")
    groups = [(f, [p.name.split("-")[0] for p in f.patches] + (["tests"] if probed(f) else [])) for f in r.fixes]
    head = ["commit", "date", "subject", *[c for _f, cols in groups for c in cols]]
    top = ["", "", "", *[f"fix {f.id}" if i == 0 else "" for f, cols in groups for i in range(len(cols))]]
    rows = [[row.short, row.date, row.subject,
             *[cell for f in r.fixes for cell in [*(row.fixes[f.id]["patches"][p.name] for p in f.patches),
                                                  *([row.fixes[f.id]["tests"] or "-"] if probed(f) else [])]]]
            for row in r.timeline]
    return ([head] if _radar_plain(r) else [top, head]), rows


def _radar_plain(r) -> bool:
    """A stack of one own fix (every set before stacks) reads as it did: no fix named."""
    return len(r.stack) == 1 and len(r.fixes) == 1 and r.fixes[0].kind == "ours"


def _radar_tests(t: dict) -> str:
    if t.get("skipped"):
        return f"tests: not run: {t['skipped']}"
    return (f"tests: {t['probes']} probe(s) of at most {t['budget']}; "
            f"at SINCE {'fixed' if t['since']['fixed'] else 'not fixed'} ({t['since']['counts']}), "
            f"at UNTIL {'fixed' if t['until']['fixed'] else 'not fixed'} ({t['until']['counts']})")


def _radar_fix_lines(f) -> list[str]:
    t = f.tests
    said = [f"verdict: {f.verdict}", f"to do: {f.todo}", _radar_tests(t)]
    if not t["monotone"]:
        said.append("tests: the verdict is not monotone; changes found: " + "; ".join(
            f"{'fixed' if c['fixed'] else 'broken again'} at {c['commit'][:12]}"
            + ("" if c["exact"] else f" or earlier, after {c['after'][:12]}") for c in t["changes"]))
    return said


def _radar_fix_title(f) -> str:
    return f"fix {f.id} ({'our own fix of ' if f.kind == 'ours' else 'a backport of '}{f.origin})"


def _radar_sections(r) -> list[tuple[str, list[str]]]:
    """(a fix's title, its lines) per fix; a stack of one own fix says its lines as before stacks, untitled."""
    if _radar_plain(r):
        return [("", _radar_fix_lines(r.fixes[0]))]
    return [(_radar_fix_title(f), _radar_fix_lines(f)) for f in r.fixes]


def _radar_legend(r) -> list[str]:
    def names(f) -> str:
        return "  ".join(f"{p.name.split('-')[0]}={p.name}" for p in f.patches)
    if _radar_plain(r):
        return [names(r.fixes[0])]
    return [f"fix {f.id}: {names(f)}" for f in r.fixes]


def text(r) -> str:
    """The timeline, then each fix's verdict, to do and tests (a stack of one own fix: untitled, as before stacks)."""
    heads, rows = _radar_rows(r)
    top = (f"radar {r.target}: {r.since['commit'][:12]} ({r.since['how']}) .. {r.until['rev']} "
           f"{r.until['commit'][:12]}: {r.commits_in_range} commit(s), {r.candidates} touch the set's paths")
    body = table([*heads, *rows]) if rows else "no commit in the range changes the set's status"
    lines = [top, *([f"upstream: {r.view.said()}"] if r.view else []), body, *_radar_legend(r)]
    for title, said in _radar_sections(r):
        lines += [title, *(f"  {s}" for s in said)] if title else said
    return "\n".join(lines + ([f"report: {', '.join(r.files)}"] if r.files else []))


def markdown(r, hints: Sequence[str] = ()) -> str:
    """The same as Markdown, ready to paste into an issue (and for $GITHUB_STEP_SUMMARY)."""
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")
    heads, rows = _radar_rows(r)
    out = [f"### radar `{r.target}`: {r.until['rev']} since `{r.since['commit'][:12]}`", "",
           f"{r.commits_in_range} commit(s) in `{r.since['commit'][:12]}..{r.until['commit'][:12]}` "
           f"({r.since['how']}); {r.candidates} touch the set's paths.", "",
           *([f"Upstream: {r.view.said()}.", ""] if r.view else [])]
    if rows:
        # Markdown has one header row: each column of a fix says its id.
        owner = [next((t for t in heads[0][:i + 1][::-1] if t), "") for i in range(len(heads[0]))]
        head = [f"{o.removeprefix('fix ')}: {h}" if o else h for o, h in zip(owner, heads[-1])] if len(heads) > 1 \
            else heads[0]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join([f"`{row[0]}`", *map(cell, row[1:])]) + " |" for row in rows]
        out.append("")
    for title, said in _radar_sections(r):
        out += ([f"- **{cell(title)}**"] + [f"  - {cell(s)}" for s in said]) if title else [f"- {cell(s)}" for s in said]
    out += [f"- `{h}`" for h in hints]
    return "\n".join(out)

"""make delta's text: a one-fix set reads as a set always did; a stack of several fixes has a
section per fix (its tests without it, unpatched, and with the whole stack, patched)."""
from __future__ import annotations

from ..text.table import table


def delta_result(r) -> str:
    """The result of delta.command.delta() for people (--json prints its fields)."""
    head = f"delta {r.target} ({r.mode} mode) on {r.upstream_ref} {r.upstream_commit[:12]}"
    if r.view is not None:
        head += f"\nupstream: {r.view.said()}"
    if r.tests_ran and r.mode == "source":  # a stack's tests are pull requests' code: where they ran
        head += f"\ntests ran {r.tests_ran}"
    if r.stack == 1 and len(r.fixes) == 1:
        f = r.fixes[0]
        if f.fixed_upstream is not None:
            return "\n".join([f"{head}: the series does not apply",
                              *_fixed_upstream_lines(f, "the set declares", "verdict: ", f"; report: {r.report}")])
        return "\n".join([head, *_images(r), *_graded_lines(f),
                          f"verdict: {'matches the declared delta' if f.ok else 'does not match'}; report: {r.report}"])
    lines = [head, *_images(r)]
    for f in r.fixes:
        if f.fixed_upstream is not None:
            lines += ["", f"fix {f.id} ({f.kind}): its patches do not apply", *_fixed_upstream_lines(f, "it declares")]
        else:
            lines += ["", f"fix {f.id} ({f.kind}): its tests without it (unpatched) and with the whole stack (patched)",
                      *_graded_lines(f)]
    lines += [f"fix {i}: not graded: {why}" for i, why in r.not_graded.items()]
    words = [f"fix {f.id} " + ("fixed upstream" if f.fixed_upstream is not None else "invalid" if not f.valid
                               else "matches the declared delta" if f.matches_expected else "does not match")
             for f in r.fixes]
    said = ("every fix matches the declared delta" if r.ok and all(f.fixed_upstream is None for f in r.fixes)
            else "; ".join(words))
    return "\n".join(lines + ["", f"verdict: {said}; report: {r.report}"])


def _images(r) -> list[str]:
    return [f"{name} image: {i['name']}" + (f" ({i['id'][:12]}, {r.builder})" if i.get("id") else "")
            for name, i in r.images.items()]


def _fixed_upstream_lines(f, declares: str, before: str = "", after: str = "") -> list[str]:
    """The tree without the fix, what upstream's own fix gives (a line between before and
    after), and what to do."""
    fx = f.fixed_upstream
    return [_trees((("unpatched", f.unpatched),)),
            f"{before}{fx['summary']} ({fx['probe_mode']} mode, against what {declares} with it){after}",
            f"to do: {fx['advice']}"]


def _trees(summaries) -> str:
    """The outcome counts of each (name, tree summary)."""
    return table([(name, s["passed"], s["failed"], s["error"], s["skipped"], s["not_run"]) for name, s in summaries],
                 ("tree", "passed", "failed", "error", "skipped", "not run"))


def _graded_lines(f) -> list[str]:
    lines = [_trees((("unpatched", f.unpatched), ("patched", f.patched))), "",
             table([("fail->pass", len(f.fail_to_pass)), ("pass->pass", len(f.pass_to_pass)),
                    ("pass->fail", len(f.pass_to_fail)), ("fail->fail", len(f.fail_to_fail)),
                    ("other", len(f.other))])]
    lines += [f"not run here: {file} ({reason})" for file, reason in not_run_files(f).items()]
    lines += [f"not run by make delta: {file} (pytest collects test_*.py and *_test.py files)"
              for file in f.not_collected]
    lines += [f"nothing declared for {file} ({e['not_measured']}): the counts above are its measure"
              for file, e in sorted(f.expected.items()) if isinstance(e, dict) and e.get("not_measured")]
    lines += [f"unpatched also lacks fix {i}'s changes: they do not apply without fix {f.id}" for i in f.left_out]
    lines += [f"INVALID: {why}" for why in f.invalid]
    lines += [f"MISMATCH: {m}" for m in f.mismatches]
    return lines


def not_run_files(f) -> dict[str, str]:
    """Each test file of a fix's section with tests that could not run here, and the first reason
    one of them gives, by file."""
    files: dict[str, str] = {}
    for tid, reason in f.not_run.items():
        files.setdefault(tid.split("::")[0], reason)
    return dict(sorted(files.items()))

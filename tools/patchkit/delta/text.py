"""make delta's text: a one-fix set reads as a set always did; a stack of several fixes has a
section per fix (its tests without it, unpatched, and with the whole stack, patched)."""
from __future__ import annotations

from ..text.table import table
from .result import cpp_failed


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
        return "\n".join([head, *_images(r), *_graded_lines(f, r.cpp.get(f.id), r.mode), *cpp_lines(r.cpp.get(f.id)),
                          f"verdict: {'matches the declared delta' if r.ok else 'does not match'}; report: {r.report}"])
    lines = [head, *_images(r)]
    for f in r.fixes:
        if f.fixed_upstream is not None:
            lines += ["", f"fix {f.id} ({f.kind}): its patches do not apply", *_fixed_upstream_lines(f, "it declares")]
        else:
            lines += ["", f"fix {f.id} ({f.kind}): its tests without it (unpatched) and with the whole stack (patched)",
                      *_graded_lines(f, r.cpp.get(f.id), r.mode), *cpp_lines(r.cpp.get(f.id))]
    graded = {f.id for f in r.fixes}
    for i, why in r.not_graded.items():
        entry = r.cpp.get(i)
        if entry and entry["targets"]:  # no test of its own, but the unit tests of what it compiles
            lines += ["", f"fix {i}: {why}; the C++ unit tests of the files it compiles, without it (unpatched) "
                          "and with the whole stack (patched)", *cpp_lines(entry)]
        else:
            lines += [f"fix {i}: not graded: {why}", *cpp_lines(entry)]
    words = [f"fix {f.id} " + ("fixed upstream" if f.fixed_upstream is not None else "invalid" if not f.valid
                               else "matches the declared delta" if f.matches_expected and not cpp_failed(r.cpp.get(f.id))
                               else "does not match")
             for f in r.fixes]
    words += [f"fix {i}'s C++ unit tests fail with the whole stack" for i, e in r.cpp.items()
              if i not in graded and cpp_failed(e)]
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


def cpp_lines(entry: dict | None) -> list[str]:
    """A fix's C++ unit tests (delta/cppunit.py): each target without it and with the stack, or
    why they did not run here."""
    if not entry:
        return []
    targets = entry.get("targets", {})
    lines: list[str] = []
    if targets and entry.get("not_run"):
        lines.append(f"C++ unit tests {', '.join(sorted(targets))}: {entry['not_run']}")
    elif targets:
        lines.append(f"C++ unit tests, in {entry['where']}:")
        rows = [(n, v.get("unpatched", "?"), v.get("patched", "?"), v["why"]) for n, v in sorted(targets.items())]
        lines += [f"  {row}" for row in table(rows, ("target", "unpatched", "patched", "why")).splitlines()]
        lines.append(f"their output: {entry['log']}")
    lines += [f"no C++ unit test: {u}" for u in entry.get("untested", [])]
    return lines


def _graded_lines(f, cpp: dict | None = None, mode: str = "") -> list[str]:
    lines = [_trees((("unpatched", f.unpatched), ("patched", f.patched))), "",
             table([("fail->pass", len(f.fail_to_pass)), ("pass->pass", len(f.pass_to_pass)),
                    ("pass->fail", len(f.pass_to_fail)), ("fail->fail", len(f.fail_to_fail)),
                    ("other", len(f.other))])]
    lines += [f"not run here: {file} ({reason})" for file, reason in not_run_files(f).items()]
    run_as_cpp = {file for v in (cpp or {}).get("targets", {}).values() for file in v.get("files", [])}
    lines += [f"not run by make delta: {file} ({_not_collected(file, mode)})"
              for file in f.not_collected if file not in run_as_cpp]
    lines += [f"nothing declared for {file} ({e['not_measured']}): the counts above are its measure"
              for file, e in sorted(f.expected.items()) if isinstance(e, dict) and e.get("not_measured")]
    lines += [f"unpatched also lacks fix {i}'s changes: they do not apply without fix {f.id}" for i in f.left_out]
    lines += [f"INVALID: {why}" for why in f.invalid]
    lines += [f"MISMATCH: {m}" for m in f.mismatches]
    return lines


def _not_collected(file: str, mode: str) -> str:
    """Why make delta's pytest did not run a test file of the fix."""
    if file.startswith("cpp/") and mode != "container":  # container mode runs it in the build tree (cppunit.py)
        return "a C++ unit test: MODE=container runs it in make wheel's build tree"
    return "pytest collects test_*.py and *_test.py files"


def not_run_files(f) -> dict[str, str]:
    """Each test file of a fix's section with tests that could not run here, and the first reason
    one of them gives, by file."""
    files: dict[str, str] = {}
    for tid, reason in f.not_run.items():
        files.setdefault(tid.split("::")[0], reason)
    return dict(sorted(files.items()))

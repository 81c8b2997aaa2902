"""make targets' text: the sets as a table, then what each carries."""
from __future__ import annotations

from .text.table import table

def _expected(fix) -> list[str]:
    """A fix's declared delta, per test file, the modes that declare the same said once; a file
    make backport could not measure says so, and a fix without tests has nothing to measure
    (#31 item 10: it read "expected delta (source): ", empty)."""
    def counts(tree: dict) -> str:
        return ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in tree.items() if n) or "no tests"

    def one(f: str, e: dict) -> str:
        if e.get("not_measured"):
            return f"{f}: not measured ({e['not_measured']})"
        if e.get("not_run"):
            return f"{f}: not run in this mode"
        return f"{f}: {counts(e.get('unpatched', {}))} -> {counts(e.get('patched', {}))}"
    if not fix.tests.all:
        return ["expected delta: nothing to measure (it changes no test file)"]
    modes: dict[str, list[str]] = {}
    for mode, files in fix.expected.items():
        if files:
            modes.setdefault("; ".join(one(f, e) for f, e in sorted(files.items())), []).append(mode)
    return [f"expected delta ({', '.join(m)}): {said}" for said, m in modes.items()] or ["expected delta: none declared"]


def _wheel(ps, fix) -> list[str]:
    """A fix that changes what the wheel is built from (cpp/, CMake, ...) needs a wheel build."""
    from .stack import wheel_files
    files = [f for _p, fs in wheel_files(ps, fix) for f in fs]
    return [f"needs a wheel build: it changes {', '.join(files)} (make wheel, then make container)"] if files else []


def targets(sets) -> str:
    """The sets as a table, then what each carries: each fix's title, bug and expected delta (#27 item 4)."""
    out = [table([(s.target, s.upstream.ref, len(s.patches), s.branch) for s in sets],
                 ("target", "ref", "patches", "branch"))]
    out += [""] if sets else []
    for s in sets:
        for f in s.fixes:
            pad = " " * (len(s.target) + 2)
            out += [f"{s.target}  fix {f.id}: {f.title}", f"{pad}bug: {f.bug}",
                    *(pad + line for line in _expected(f)), *(pad + line for line in _wheel(s, f))]
    return "\n".join(out)

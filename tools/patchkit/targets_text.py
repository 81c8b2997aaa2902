"""make targets' text: the sets as a table, then what each carries."""
from __future__ import annotations

from .text.table import table

def _expected(expected: dict) -> list[str]:
    """A fix's declared delta, per test file, the modes that declare the same said once."""
    def counts(tree: dict) -> str:
        return ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in tree.items() if n) or "no tests"
    modes: dict[str, list[str]] = {}
    for mode, files in expected.items():
        said = "; ".join(f"{f}: {counts(e.get('unpatched', {}))} -> {counts(e.get('patched', {}))}"
                         for f, e in sorted(files.items()))
        modes.setdefault(said, []).append(mode)
    return [f"expected delta ({', '.join(m)}): {said}" for said, m in modes.items()] or ["expected delta: none declared"]


def targets(sets) -> str:
    """The sets as a table, then what each carries: each fix's title, bug and expected delta (#27 item 4)."""
    out = [table([(s.target, s.upstream.ref, len(s.patches), s.branch) for s in sets],
                 ("target", "ref", "patches", "branch"))]
    out += [""] if sets else []
    for s in sets:
        for f in s.fixes:
            pad = " " * (len(s.target) + 2)
            out += [f"{s.target}  fix {f.id}: {f.title}", f"{pad}bug: {f.bug}",
                    *(pad + line for line in _expected(f.expected))]
    return "\n".join(out)

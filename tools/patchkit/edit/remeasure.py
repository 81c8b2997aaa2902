"""A fix's declared expectations after its stack changed under it (make drop, make new-set):
measured again in source mode as make backport measures a fix (delta/measure.py), and the
modes this machine cannot measure (an image's) marked stale in patchset.yaml and said so;
never kept silently (#33 item 2)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..delta import measure as delta_measure
from ..delta.run import Runner
from ..git import Repo, Sha
from ..model import PatchSet
from .metadata import Meta

SOURCE = "source"


@dataclass
class Remeasured:
    """One fix's expectations, measured again: what changed, and the modes left stale."""

    fix: str
    changed: dict[str, tuple[dict, dict]] = field(default_factory=dict)  # test file -> (declared, measured)
    stale: list[str] = field(default_factory=list)  # modes not measured here, marked stale
    unfenced: str = ""  # why source mode was not measured either (no sandbox here)

    def one_line(self) -> str:
        said = (f"source mode not measured ({self.unfenced})" if self.unfenced else
                f"source mode measured again: {len(self.changed)} test file(s) changed" if self.changed else
                "source mode measured again: as declared")
        return f"fix {self.fix}: {said}" + (f"; stale, not measurable here: {', '.join(self.stale)}" if self.stale else "")


def _plain(e: dict) -> dict:
    """An expectation without its zero counts and false flags (how the set writes it)."""
    out = {}
    for k, v in e.items():
        if isinstance(v, dict):
            v = {kk: vv for kk, vv in v.items() if vv}
        if v:
            out[k] = v
    return out


def remeasure(staged: PatchSet, meta: Meta, repo: Repo, base: Sha, ref: str, runner: Runner, why: str,
              fixes: list[str]) -> list[Remeasured]:
    """The fixes' expectations on the staged stack: source mode measured and written into meta
    where it differs; every other declared mode (and source, where no sandbox lets the tests
    run) marked stale with a comment saying why. why: where they were measured ('on a stack where
    fix 19450 was still carried')."""
    out = []
    for fix_id in fixes:
        fix = staged.fix(fix_id)
        if not fix.tests.all:
            continue
        r = Remeasured(fix_id)
        modes = [m for m in fix.expected if m != SOURCE]
        if getattr(runner, "unfenced", ""):
            r.unfenced = runner.unfenced
            modes = list(fix.expected)
        else:
            measured = delta_measure.expectations(staged, fix, repo=repo, base=base, ref=ref, runner=runner)
            declared = {t: _plain(e) for t, e in fix.expected.get(SOURCE, {}).items()}
            r.changed = {t: (declared.get(t, {}), e) for t, e in measured.items() if _plain(e) != declared.get(t, {})}
            if r.changed or set(declared) != set(measured):
                meta.set_fix_value(fix_id, ("expected", SOURCE), measured)
        for mode in modes:
            meta.comment_before(fix_id, ("expected", mode), f"stale: measured {why}; make delta MODE={mode} "
                                                            f"FIXID={fix_id} measures it again")
        r.stale = modes
        out.append(r)
    return out

"""The one way a set changes on disk (DESIGN: the stack is edited through verbs, never by hand).

Every verb that changes patches/<set>/ (export, backport, new-fix, drop, move, new-set) goes
through a SetEdit: the folder as the run found it is remembered; the new set is written to a
staged copy (its patch files, patchset.yaml and waiver intent), loaded as patchset.load loads
any set (an Origin that names another fix is refused there), and refused as make check would
refuse it (a patch without its provenance or with a DEP-3 field twice; a stack that does not
apply plainly on the commit it was made on); only then does patches/<set>/ change, in one step
(the staged folder takes its place), and only if nobody changed it meanwhile.
"""
from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import atomic, patchset, provenance, series, stack
from ..errors import BadInput, Conflict, Hint
from ..git import Repo, Sha
from ..model import PatchSet
from .patchfiles import PatchFile


@dataclass
class Written:
    """What changed in patches/<set>/: file names written (new or changed) and removed."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.written or self.removed)


def files(folder: Path) -> dict[str, bytes]:
    """The folder's files and their bytes ({} when it does not exist)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()} if folder.is_dir() else {}


class SetEdit:
    """One change of patches/<target>/, from the folder as the run found it (see the module)."""

    def __init__(self, root: Path, target: str, command: str) -> None:
        self.root, self.target, self.command = root, target, command
        self.folder = root / "patches" / target
        self.on_disk = files(self.folder)  # what the run starts from: refused at the end if it moved
        self.waivers = root / "waivers" / f"{target}.yaml"

    def meta(self) -> str:
        """patchset.yaml as the run found it (a run that waited for another's lock must not mix
        the set it began with and the one the other left: commit() refuses the latter)."""
        return self.on_disk[patchset.METADATA].decode("utf-8")

    def stage(self, work: Path, patches: Sequence[PatchFile], meta: str, waivers: bytes | None = None) -> PatchSet:
        """The new set in a copy under work (exactly these patch files, this patchset.yaml, the
        set's waiver intent or waivers when given; any other file of the folder kept), loaded."""
        stage = work / "stage"
        if stage.exists():
            shutil.rmtree(stage)
        folder = stage / "patches" / self.target
        folder.mkdir(parents=True)
        for name, data in self.on_disk.items():
            if not name.endswith(".patch") and name != patchset.METADATA:
                (folder / name).write_bytes(data)
        for p in patches:
            (folder / p.name).write_bytes(p.data)
        (folder / patchset.METADATA).write_text(meta)
        intent = waivers if waivers is not None else (self.waivers.read_bytes() if self.waivers.is_file() else None)
        if intent is not None:
            (stage / "waivers").mkdir()
            (stage / "waivers" / self.waivers.name).write_bytes(intent)
        return patchset.load(stage, self.target)

    def verify(self, staged: PatchSet, repo: Repo, base: Sha, where: str) -> None:
        """Refuse what make check would refuse: a patch without its provenance or with a DEP-3
        field twice, a stack that does not apply plainly on base (where: how base is said)."""
        lacking = provenance.missing(staged)
        if lacking:
            raise BadInput(f"{lacking[0].one_line()}; nothing written")
        twice = provenance.twice(staged)
        if twice:
            raise BadInput(f"{twice[0]}; nothing written")
        probe = series.apply_series(repo, base, staged.patches, record=False)
        for o in probe.outcomes:
            fix = stack.owner(staged, o.patch)
            if o.status == series.CONFLICT:
                raise Conflict(f"the new stack of {self.target} does not apply on {where}: fix {fix.id}: "
                               f"{o.patch.name}: {o.drift.one_line()}; nothing written",
                               details=series.drift_report(probe.outcomes), hint=Hint.radar(self.target))
            if o.status == series.UPSTREAM:
                raise Conflict(f"fix {fix.id}: {o.patch.name} is already in {where}; nothing written",
                               hint=Hint.radar(self.target))

    def changes(self, staged: PatchSet) -> Written:
        """What writing the staged set would change in patches/<target>/."""
        now, then = self.on_disk, files(staged.root)
        return Written(sorted(n for n, data in then.items() if now.get(n) != data),
                       sorted(n for n in now if n not in then))

    def commit(self, staged: PatchSet, waivers: bytes | None = None) -> Written:
        """patches/<target>/ becomes the staged folder in one step, unless it changed since the
        run began (Conflict: nothing written). waivers: the waiver intent of a new set, written
        first unless waivers/<target>.yaml is there (and removed again if the folder fails)."""
        done = self.changes(staged)
        if not done.changed and waivers is None:
            return done
        if files(self.folder) != self.on_disk:
            raise Conflict(f"patches/{self.target} changed while {self.command} ran; nothing written; run again")
        made = waivers is not None and not self.waivers.exists()
        if made:
            atomic.write_bytes(self.waivers, waivers)
        try:
            with atomic.replace_dir(self.folder) as fresh:
                atomic.fill(fresh, files(staged.root))
        except BaseException:
            if made:
                self.waivers.unlink(missing_ok=True)
            raise
        return done

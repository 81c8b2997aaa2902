"""Each patch's status at each candidate commit, through series.py's own probes.

A patch's status depends only on the files the series touches, so each distinct state of
those files is probed once, on a slim commit holding just them (the blobs fetched in one
batch for all states): applies, applies at an offset, already upstream (reverse-applies),
merges 3-way from SINCE, or conflicts.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import progress, series
from ..git import Identity, Repo, Sha
from ..model import PatchSet
from .history import Range, states

WHO = Identity("patchkit radar", "radar@patchkit.invalid")
APPLIES, OFFSET = "applies", "offset"


@dataclass(frozen=True)
class Status:
    """One patch at one commit: applies / offset / 3-way / already upstream / conflict."""

    kind: str
    detail: str = ""  # the offset's lines, the conflict's file and hunk

    def __str__(self) -> str:
        return f"{self.kind} {self.detail}" if self.kind == OFFSET else self.kind


def status_of(o: series.Outcome) -> Status:
    if o.status == series.APPLIED:
        if o.offsets:
            return Status(OFFSET, ", ".join(f"{off.at - off.header_line:+d}" for off in o.offsets))
        return Status(APPLIES)
    if o.status == series.CONFLICT and o.drift is not None:
        return Status(o.status, o.drift.one_line())
    return Status(o.status)


def scan(ps: PatchSet, repo: Repo, rng: Range) -> tuple[list[Status], list[list[Status]], list[list[series.Outcome]]]:
    """Statuses at SINCE, and at each candidate (one list per candidate, in series order),
    with the outcomes at each candidate (the test probe wants them)."""
    paths = _series_paths(ps)
    files_at = [{p: v for p, v in rng.at_since.items() if p in paths}] + states(rng, paths)
    repo.prefetch({sha for files in files_at for _m, sha in files.values()})
    slim: dict[tuple, Sha] = {}
    seen: dict[tuple, list[series.Outcome]] = {}

    def commit_for(files: dict[str, tuple[str, str]]) -> Sha:
        key = tuple(sorted(files.items()))
        if key not in slim:
            slim[key] = slim_commit(repo, files)
        return slim[key]

    base = commit_for(files_at[0])
    results: list[list[series.Outcome]] = []
    distinct = len({tuple(sorted(f.items())) for f in files_at})
    for files in files_at:
        key = tuple(sorted(files.items()))
        if key not in seen:
            with progress.step(f"probing the series on state {len(seen) + 1} of {distinct} of the set's files"):
                seen[key] = series.apply_series(repo, commit_for(files), ps.patches, threeway=True,
                                                stop_on_conflict=False, committer_date=series.THROWAWAY_DATE,
                                                merge_bases=[base], search_history=False, record=False).outcomes
        results.append(seen[key])
    statuses = [[status_of(o) for o in outs] for outs in results]
    return statuses[0], statuses[1:], results[1:]


def slim_commit(repo: Repo, files: dict[str, tuple[str, str]]) -> Sha:
    """A parentless commit of just these files ({path: (mode, blob id)}), to probe on."""
    return repo.commit_of_files(files, "patchkit radar: the set's files", WHO, series.THROWAWAY_DATE)


def _series_paths(ps: PatchSet) -> set[str]:
    return {p for patch in ps.patches for fc in patch.files for p in (fc.path, fc.old_path) if p}


def first(statuses: Sequence[Sequence[Status]], i: int, kinds: Sequence[str]) -> int | None:
    """The first candidate where patch i has one of kinds."""
    return next((n for n, row in enumerate(statuses) if row[i].kind in kinds), None)

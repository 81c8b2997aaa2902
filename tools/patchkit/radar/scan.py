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
    groups = _groups(ps)
    files_at = [{p: v for p, v in rng.at_since.items() if p in _series_paths(ps)}] + states(rng, _series_paths(ps))
    repo.prefetch({sha for files in files_at for _m, sha in files.values()})
    slim: dict[tuple, Sha] = {}
    seen: dict[tuple, list[series.Outcome]] = {}
    merges: dict = {}  # each 3-way merge's other side, read once (series.apply_series)

    def commit_for(key: tuple) -> Sha:
        if key not in slim:
            slim[key] = slim_commit(repo, dict(key))
        return slim[key]

    def key_of(files: dict[str, tuple[str, str]], paths: set[str]) -> tuple:
        return tuple(sorted((p, v) for p, v in files.items() if p in paths))

    distinct = sum(len({key_of(f, paths) for f in files_at}) for paths, _ in groups)
    results: list[list[series.Outcome]] = []
    for files in files_at:
        outcomes: dict[int, series.Outcome] = {}
        for n, (paths, members) in enumerate(groups):
            key = (n, key_of(files, paths))
            if key not in seen:
                with progress.step(f"probing the series on state {len(seen) + 1} of {distinct} of the set's files"):
                    seen[key] = series.apply_series(
                        repo, commit_for(key[1]), [ps.patches[i] for i in members], threeway=True,
                        stop_on_conflict=False, committer_date=series.THROWAWAY_DATE,
                        merge_bases=[commit_for(key_of(files_at[0], paths))], search_history=False,
                        record=False, merge_cache=merges).outcomes
            outcomes.update(zip(members, seen[key]))
        results.append([outcomes[i] for i in range(len(ps.patches))])
    statuses = [[status_of(o) for o in outs] for outs in results]
    return statuses[0], statuses[1:], results[1:]


def _groups(ps: PatchSet) -> list[tuple[set[str], list[int]]]:
    """The series cut into groups that share no file: (their files, their patches in series
    order). git apply reads and writes only a patch's own files, so each group's outcomes
    depend only on the state of its files, and it is probed once per state of those (the
    bench's test-only patch once, not once for each of 205 states of the patched module)."""
    groups: list[tuple[set[str], list[int]]] = []
    for i, patch in enumerate(ps.patches):
        files = {p for fc in patch.files for p in (fc.path, fc.old_path) if p}
        joined = [g for g in groups if g[0] & files]
        groups = [g for g in groups if not g[0] & files]
        groups.append((files.union(*(g[0] for g in joined)), sorted([i, *(m for g in joined for m in g[1])])))
    return groups


def slim_commit(repo: Repo, files: dict[str, tuple[str, str]]) -> Sha:
    """A parentless commit of just these files ({path: (mode, blob id)}), to probe on."""
    return repo.commit_of_files(files, "patchkit radar: the set's files", WHO, series.THROWAWAY_DATE)


def _series_paths(ps: PatchSet) -> set[str]:
    return {p for patch in ps.patches for fc in patch.files for p in (fc.path, fc.old_path) if p}


def first(statuses: Sequence[Sequence[Status]], i: int, kinds: Sequence[str]) -> int | None:
    """The first candidate where patch i has one of kinds."""
    return next((n for n, row in enumerate(statuses) if row[i].kind in kinds), None)

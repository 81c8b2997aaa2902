"""The one way to apply a series: probe, apply, 3-way, report; into a temporary index.

Everything here works on git objects through a private index file (GIT_INDEX_FILE), never
on a work tree: so it needs no checkout, it is safe in a sparse or blobless clone (only the
blobs a patch touches are read), and the user's checkout cannot be changed by it. apply,
check, the delta's two trees, the PR branch and the container overlay all come through
apply_series() (the miniature is built from our own files, not by applying patches).
"""
from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from . import progress
from .errors import Conflict, Hint
from .git import Identity, Index, Repo, Sha, diff_paths
from .model import Patch

APPLIED, UPSTREAM, THREEWAY, CONFLICT = "applied", "already upstream", "3-way", "conflict"
# Committer date of commits nobody keeps (the delta's trees, the container's overlay), so
# that the same inputs make the same objects.
THROWAWAY_DATE = "2026-01-01T00:00:00+00:00"
REPORT_CONTEXT = 2  # unchanged lines shown around each differing one in a drift report
HISTORY_LIMIT = 300  # commits searched for a base where a drifted patch still applies


@dataclass(frozen=True)
class Drift:
    """Where a patch stopped applying: the file, the hunk, the lines it expected and, when
    the file is there, the lines found at the place that matches them best (from line at)."""

    path: str
    hunk: str
    expected: tuple[str, ...]
    reason: str
    at: int = 0
    found: tuple[str, ...] = ()

    def rows(self) -> list[tuple[str, int | None, str]]:
        """Expected beside found: (' ' same, '-' expected only, '+' found only; found line number, text)."""
        out: list[tuple[str, int | None, str]] = []
        import difflib  # here: only a conflict's report needs it

        sm = difflib.SequenceMatcher(None, self.expected, self.found, autojunk=False)
        for op, i1, i2, j1, j2 in sm.get_opcodes():
            if op == "equal":
                out += [(" ", self.at + j, self.expected[i]) for i, j in zip(range(i1, i2), range(j1, j2))]
                continue
            out += [("-", None, self.expected[i]) for i in range(i1, i2)]
            out += [("+", self.at + j, self.found[j]) for j in range(j1, j2)]
        return out

    def one_line(self) -> str:
        where = f"{self.path} hunk {self.hunk}" if self.hunk else self.path
        rows = self.rows() if self.found else []
        want = next((t for m, _n, t in rows if m == "-"), None)
        got = next(((n, t) for m, n, t in rows if m == "+"), None)
        if got is not None:
            said = f"{where}: {self.reason} at line {got[0]}"
            said += f": expected {want.strip()!r}" if want is not None else ": an extra line"
            return said + f", found {got[1].strip()!r}"
        if want is not None:
            return f"{where}: {self.reason}: {want.strip()!r} is missing near line {self.at}"
        first = next((line.rstrip("\n") for line in self.expected if line.strip()), "")
        return f"{where}: {self.reason}" + (f"; expected {first.strip()!r}" if first else "")


@dataclass(frozen=True)
class Offset:
    """A hunk that applies, but not at the line its header names."""

    path: str
    hunk: int
    header_line: int
    at: int

    def one_line(self) -> str:
        by = abs(self.at - self.header_line)
        return (f"{self.path} hunk #{self.hunk} applies at line {self.at}, "
                f"{by:,} line{'s' if by != 1 else ''} from its header")


@dataclass(frozen=True)
class Outcome:
    patch: Patch
    status: str
    commit: Sha | None = None
    drift: Drift | None = None
    offsets: tuple[Offset, ...] = ()


@dataclass
class SeriesResult:
    base: Sha
    tip: Sha
    outcomes: list[Outcome] = field(default_factory=list)
    extra: Any = None  # what the extra step returned (the waiver narrowing)

    @property
    def ok(self) -> bool:
        return all(o.status != CONFLICT for o in self.outcomes)

    def raise_on_conflict(self, where: str = "", hint: Hint | None = None, note: str = "") -> None:
        """Conflict naming the first patch that does not apply, with the full drift report."""
        bad = next((o for o in self.outcomes if o.status == CONFLICT), None)
        if bad is not None:
            raise Conflict(f"{bad.patch.name} does not apply{where}: {bad.drift.one_line()}"
                           + (f"; {note}" if note else ""), details=drift_report(self.outcomes), hint=hint)

    def named(self, status: str) -> list[str]:
        return [o.patch.name for o in self.outcomes if o.status == status]


class TreeBuilder:
    """Commits on top of a base, built in a private index. Use as a context manager."""

    def __init__(self, repo: Repo, base: Sha, committer: Identity | None = None,
                 committer_date: str | None = None,
                 message_filter: Callable[[str], str] | None = None) -> None:
        self.repo = repo
        self.tip = base
        self.committer = committer
        self.committer_date = committer_date
        self.message_filter = message_filter  # e.g. adds a DCO sign-off to every commit
        self._stack = contextlib.ExitStack()
        self.index: Index | None = None

    def __enter__(self) -> "TreeBuilder":
        self.index = self._stack.enter_context(self.repo.temp_index(self.tip))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def probe(self, patch: Patch, reverse: bool = False) -> tuple[bool, str]:
        """Would the patch apply here? (-v: git then also names hunks that apply at an offset)"""
        return self.index.apply(patch.diff, check=True, reverse=reverse, verbose=True)

    def apply(self, patch: Patch) -> None:
        self.index.apply(patch.diff)

    def try_apply(self, patch: Patch) -> tuple[bool, str]:
        """Apply the patch if it applies cleanly (one git process: git apply is all or nothing,
        so on failure the index is as it was); (applied, git's -v output or complaint)."""
        return self.index.apply(patch.diff, verbose=True, atomic=True)

    def read_file(self, path: str) -> bytes | None:
        """The file as the tree being built has it (through the one object reader)."""
        return self.index.read(path)

    def file_mode(self, path: str) -> str | None:
        """The mode the tree being built has for path; None when it has no such file."""
        return self.index.mode(path)

    def write_file(self, path: str, content: bytes, mode: str = "100644") -> None:
        self.index.add(path, content, mode)

    def remove_file(self, path: str) -> None:
        self.index.remove(path)

    def commit(self, message: str, author: Identity, author_date: str, only: Iterable[str] | None = None) -> Sha:
        """A commit of what the index holds (of the paths only, when given) on the tip."""
        tree = self.index.write_tree(only)
        if self.message_filter:
            message = self.message_filter(message)
        self.tip = self.repo.commit_tree(tree, [self.tip], message, author=author,
                                         committer=self.committer or author, author_date=author_date,
                                         committer_date=self.committer_date)
        return self.tip


def apply_series(repo: Repo, base: Sha, patches: Sequence[Patch], *, threeway: bool = False,
                 committer: Identity | None = None, committer_date: str | None = None,
                 stop_on_conflict: bool = True,
                 extra: Callable[[TreeBuilder], Any] | None = None,
                 message_filter: Callable[[str], str] | None = None,
                 merge_bases: Sequence[str] = (), announce: str = "",
                 search_history: bool = True, record: bool = True,
                 after_each: Callable[[Patch, TreeBuilder], None] | None = None,
                 merge_cache: dict | None = None) -> SeriesResult:
    """Apply patches on base as commits; report each as applied, already upstream, 3-way or conflict.

    Nothing outside the object store changes (a 3-way merge may fetch the objects it needs).
    With stop_on_conflict=False every patch is probed (make check); otherwise the first
    conflict ends the run. extra, if given, may add commits of its own after the series (the
    waiver edit); its return value is kept as result.extra. merge_bases: where the series
    was made (the set's recorded base), tried first as a drifted patch's merge base.
    announce: say each patch as a progress step ('applying': apply's own series; the delta's
    trees, the PR branch and the image say their steps as a whole). search_history=False: the
    merge bases only, never history (make radar probes slim trees that have none).
    after_each: may change the tree after a patch applied, before its commit (make lint FIX=1
    puts the formatters' version of the patch's files there).
    record=False: only the outcomes, no commit objects (make radar probes hundreds of states).
    merge_cache: kept by the caller across calls, it holds each 3-way merge's other side (the
    patch's files at a merge base, before and after it), read once for all of them.
    """
    result = SeriesResult(base=base, tip=base)
    with TreeBuilder(repo, base, committer, committer_date, message_filter) as tb:
        tb.index.expect(p.diff for p in patches)
        at_once = not record and not threeway
        if after_each is None and len(patches) > 1 and (at_once or _apart(patches)):
            # The whole series in one git apply when it applies (a stack of 30 patches is one
            # process, not 30); patch by patch only when it does not. A probe keeps nothing; a
            # series whose patches share no file is committed patch by patch from it, each
            # commit of its own patch's files (all a patch changes: git apply reads and writes
            # only the files its headers name, index.diff_paths), one git process a patch
            # fewer (#34 item 5). A clean series needs no 3-way, whatever threeway says.
            clean, said = tb.index.apply("".join(p.diff for p in patches), verbose=True, atomic=True)
            if clean:
                for i, (patch, part) in enumerate(zip(patches, _per_patch(patches, said)), 1):
                    commit = None
                    if record:
                        with (progress.step(f"{announce} patch {i}/{len(patches)}: {patch.name}") if announce
                              else contextlib.nullcontext()):
                            commit = tb.commit(patch.message, Identity(patch.author_name, patch.author_email),
                                               patch.date, only=diff_paths(patch.diff))
                    result.outcomes.append(Outcome(patch, APPLIED, commit, offsets=_offsets(patch, part)))
                if extra is not None:
                    result.extra = extra(tb)
                result.tip = tb.tip
                return result
        for i, patch in enumerate(patches, 1):
            with (progress.step(f"{announce} patch {i}/{len(patches)}: {patch.name}") if announce
                  else contextlib.nullcontext()):
                outcome = _apply_one(tb, patch, threeway, merge_bases, search_history, after_each, record,
                                     merge_cache)
            result.outcomes.append(outcome)
            if outcome.status == CONFLICT and stop_on_conflict:
                break
        if result.ok and extra is not None:
            result.extra = extra(tb)
        result.tip = tb.tip
    return result


def _apart(patches: Sequence[Patch]) -> bool:
    """Whether no two patches touch the same file, nor one a file where another has a folder
    (a file of one above a path of another): each patch's commit is then its own files as
    the whole series leaves them. Every patch must name a file."""
    seen: dict[str, int] = {}  # each path a patch names -> that patch
    above: dict[str, int] = {}  # each folder above such a path -> that patch
    for i, patch in enumerate(patches):
        paths = diff_paths(patch.diff)
        if not paths:
            return False
        folders = {str(f) for p in paths for f in PurePosixPath(p).parents if str(f) != "."}
        if any(seen.get(p, i) != i or above.get(p, i) != i for p in paths) or any(seen.get(f, i) != i for f in folders):
            return False
        seen.update(dict.fromkeys(paths, i))
        above.update(dict.fromkeys(folders, i))
    return True


def _apply_one(tb: TreeBuilder, patch: Patch, threeway: bool, merge_bases: Sequence[str] = (),
               search_history: bool = True,
               after_each: Callable[[Patch, TreeBuilder], None] | None = None, record: bool = True,
               merge_cache: dict | None = None) -> Outcome:
    author = Identity(patch.author_name, patch.author_email)

    def commit() -> Sha | None:
        return tb.commit(patch.message, author, patch.date) if record else None
    clean, err = tb.try_apply(patch)
    if not clean:
        reverse_ok, _ = tb.probe(patch, reverse=True)
        if reverse_ok:
            return Outcome(patch, UPSTREAM)
        drift = _drift(patch, err, tb)
        if not threeway:
            return Outcome(patch, CONFLICT, drift=drift)
        merged = _merge_from_history(tb, patch, merge_bases, search_history, merge_cache)
        if merged is not None:
            return Outcome(patch, CONFLICT, drift=merged)
        return Outcome(patch, THREEWAY, commit())
    if after_each is not None:
        after_each(patch, tb)
    return Outcome(patch, APPLIED, commit(), offsets=_offsets(patch, err))


_CHECKING = re.compile(r"^Checking patch (.+)\.\.\.$")
_SUCCEEDED = re.compile(r"^Hunk #(\d+) succeeded at (\d+) \(offset (-?\d+) lines?\)\.$")


def _offsets(patch: Patch, verbose: str) -> tuple[Offset, ...]:
    """The hunks git apply -v says apply at an offset from their headers."""
    found, path = [], ""
    for line in verbose.splitlines():
        if m := _CHECKING.match(line):
            path = m.group(1)
        elif (m := _SUCCEEDED.match(line)) and path:
            at, by = int(m.group(2)), int(m.group(3))
            found.append(Offset(path, int(m.group(1)), at - by, at))
    return tuple(found)


def _per_patch(patches: Sequence[Patch], verbose: str) -> list[str]:
    """The verbose apply output for a series applied as one input, cut into each patch's part:
    it says 'Checking patch <path>...' once per file section, in the input's order."""
    parts: list[list[str]] = [[] for _ in patches]
    owners = [i for i, p in enumerate(patches) for _ in p.files]
    section = -1
    for line in verbose.splitlines():
        if _CHECKING.match(line):
            section += 1
        if 0 <= section < len(owners):
            parts[owners[section]].append(line)
    return ["\n".join(lines) for lines in parts]


def _drift(patch: Patch, stderr: str, tb: TreeBuilder | None = None) -> Drift:
    """Turn git apply's complaint into the file, the hunk, the expected lines and those found."""
    m = re.search(r"patch failed: (.+):(\d+)", stderr)
    if m:
        path, line = m.group(1), int(m.group(2))
        for fc in patch.files:
            if fc.old_path == path:
                hunk = next((h for h in fc.hunks if h.old_start == line), fc.hunks[0] if fc.hunks else None)
                if hunk:
                    n = fc.hunks.index(hunk) + 1
                    data = tb.read_file(path) if tb is not None else None
                    text = (data or b"").decode("utf-8", "surrogateescape")
                    at, found = _locate(hunk.preimage, text.splitlines(keepends=True), hunk.old_start)
                    return Drift(path, f"#{n} {hunk.header}", hunk.preimage, "context does not match", at, found)
    m = re.search(r"error: (.+?): (does not exist in index|already exists in index)", stderr)
    if m:
        return Drift(m.group(1), "", (), m.group(2))
    line = next((ln for ln in stderr.splitlines() if ln.startswith("error:")), stderr.strip() or "does not apply")
    return Drift(patch.paths[0] if patch.paths else "?", "", (), line.removeprefix("error: "))


def _locate(expected: Sequence[str], lines: Sequence[str], near: int) -> tuple[int, tuple[str, ...]]:
    """The place in lines most like expected (most equal lines, then nearest to line near):
    its first line number and the lines there. (0, ()) when the file is empty."""
    n = len(expected)
    if not lines or not n:
        return 0, ()
    starts = len(lines) - n + 1 if len(lines) >= n else 1
    # A start's score: how many expected lines it finds in place. Counted from where each
    # expected line occurs (not by comparing n lines at every start: a conflict in a long
    # file took seconds), so only starts with a score above 0 are looked at.
    at: dict[str, list[int]] = {}
    for j, line in enumerate(lines):
        at.setdefault(line, []).append(j)
    scores: dict[int, int] = {}
    for k, line in enumerate(expected):
        for j in at.get(line, ()):
            if 0 <= j - k < starts:
                scores[j - k] = scores.get(j - k, 0) + 1
    best = min(scores, key=lambda i: (-scores[i], abs(i + 1 - near), i), default=None)
    if best is None or scores[best] * 2 < n:  # nothing much like it anywhere: show what is where the header says
        best = min(max(near - 1, 0), starts - 1)
    return best + 1, tuple(lines[best:best + n])


def _merge_from_history(tb: TreeBuilder, patch: Patch, merge_bases: Sequence[str] = (),
                        search_history: bool = True, cache: dict | None = None) -> Drift | None:
    """3-way merge: find a commit where the patch applies, merge its change forward.

    The patches carry no blob ids (upstream's full files are not always at hand when a set
    is written), so the merge base is a commit: first the set's recorded base (its tag or
    verified-on commit), fetched on demand as one commit; then history, newest first, which
    a shallow clone deepens step by step only while no candidate has been found.
    Returns None on success (the index holds the merged files) or the Drift that blocks it.
    Files are bytes throughout: a file that is not UTF-8 merges as it is.
    """
    paths = [fc.old_path or fc.path for fc in patch.files]
    for cand in _candidates(tb.repo, tb.tip, paths, merge_bases, search_history, patch.name):
        sides = _sides(tb.repo, cand, patch, cache)
        if sides is not None:
            return _merge_forward(tb, sides, cand)
    if not search_history:
        return Drift(patch.paths[0], "", (), f"3-way: the patch does not apply at {', '.join(b[:12] for b in merge_bases)} either")
    return Drift(patch.paths[0], "", (), f"3-way: no commit in the last {HISTORY_LIMIT} touching it where the patch applies")


def _candidates(repo: Repo, tip: Sha, paths: Sequence[str], merge_bases: Sequence[str], search_history: bool = True,
                what: str = "the series") -> Iterator[Sha]:
    """Where to look for a commit the patches apply to as written: the merge bases (fetched on
    demand, one commit each), then the history of tip that touches paths, newest first,
    deepening a shallow clone step by step while no candidate has been found."""
    tried: set[str] = set()
    for rev in merge_bases:
        with progress.step(f"{what}: looking for the merge base {rev}"):
            sha = repo.fetch_commit(rev)
        if sha and sha not in tried:
            tried.add(sha)
            yield sha
    if not search_history:
        return
    depth = 16
    while True:
        for cand in repo.log_paths(tip, paths, HISTORY_LIMIT):
            if cand not in tried:
                tried.add(cand)
                yield cand
        if not repo.is_shallow() or depth > HISTORY_LIMIT or not repo.deepen(depth):
            return
        depth *= 2


def written_base(repo: Repo, tip: Sha, patches: Sequence[Patch], merge_bases: Sequence[str] = ()) -> Sha | None:
    """The commit where the whole series applies as written, patch by patch without 3-way:
    the merge bases first (the set's recorded base), then tip's history that touches the
    series' paths, newest first; None when there is none within HISTORY_LIMIT commits."""
    paths = sorted({fc.old_path or fc.path for p in patches for fc in p.files})
    for cand in _candidates(repo, tip, paths, merge_bases):
        probe = apply_series(repo, cand, patches, record=False)
        if all(o.status == APPLIED for o in probe.outcomes) and len(probe.outcomes) == len(patches):
            return cand
    return None


def _sides(repo: Repo, cand: Sha, patch: Patch, cache: dict | None) -> dict[str, tuple[bytes, bytes | None]] | None:
    """{path: (its bytes at cand, after the patch there; None: deleted)} of the patch's files,
    None when the patch does not apply at cand. A commit never changes: cached when asked."""
    key = (cand, patch.name, patch.diff)
    if cache is not None and key in cache:
        return cache[key]
    with TreeBuilder(repo, cand) as old:
        found: dict[str, tuple[bytes, bytes | None]] | None = None
        if old.probe(patch)[0]:
            old.apply(patch)
            found = {(fc.path or fc.old_path): ((repo.show_file(cand, fc.old_path) or b"") if fc.old_path else b"",
                                                old.read_file(fc.path) if fc.path else None) for fc in patch.files}
    if cache is not None:
        cache[key] = found
    return found


def _merge_forward(tb: TreeBuilder, sides: dict[str, tuple[bytes, bytes | None]], cand: Sha) -> Drift | None:
    """Merge the patch's change (sides: each file at cand, before and after the patch) into tb's files."""
    for path, (base, theirs) in sides.items():
        ours = tb.read_file(path)
        if theirs is None:  # deletion: only if we still have what they deleted
            if ours not in (None, base):
                return Drift(path, "", (), f"3-way: changed since {cand[:12]} and deleted by the patch")
            tb.remove_file(path)
            continue
        merged, conflicts = tb.repo.merge_file(ours or b"", base, theirs)
        if conflicts:
            return Drift(path, "", (), f"3-way merge from {cand[:12]} left {conflicts} conflict(s)")
        tb.write_file(path, merged, tb.file_mode(path) or "100644")  # the file keeps its mode
    return None


def drift_report(outs: Sequence[Outcome]) -> str:
    """The full drift report: for each conflict, the file and hunk, and the lines the patch
    expects beside those found at that place, the differing ones marked (- expected, + found)."""
    parts = []
    for o in outs:
        d = o.drift
        if not (d and d.expected):
            continue
        if d.found:
            parts.append(f"{o.patch.name}: {d.path} hunk {d.hunk}: expected (-) beside found at line {d.at} (+):")
            rows = d.rows()
            near = {k for i, (mark, _n, _t) in enumerate(rows) if mark != " "
                    for k in range(i - REPORT_CONTEXT, i + REPORT_CONTEXT + 1)}
            for i, (mark, n, text) in enumerate(rows):
                if i in near:
                    parts.append(f"  {mark} {'' if n is None else n:>6} | {text.rstrip(chr(10))}")
                elif i - 1 in near:
                    parts.append("    " + " " * 6 + " | ...")
        else:
            parts.append(f"{o.patch.name}: {d.path} hunk {d.hunk} expected:")
            parts += [f"    | {line.rstrip(chr(10))}" for line in d.expected]
    return "\n".join(parts)

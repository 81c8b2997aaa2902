"""Compute a set's waiver edit against a tree, and commit it in the series' TreeBuilder."""
from __future__ import annotations

import posixpath

from ..git import Identity, Index, Repo
from ..model import PatchSet, WaiverIntent
from ..pr.title import ticket
from .narrow import Narrowing, narrow
from .parse import parse_test_db


def test_files(repo: Repo, rev: str) -> list[str]:
    """Every test_*.py under tests/ at rev, read from trees (a sparse or blobless clone works)."""
    return sorted(p for _m, typ, p in repo.ls_tree(rev, "tests/")
                  if typ == "blob" and posixpath.basename(p).startswith("test_") and p.endswith(".py"))


def load_stages(repo: Repo, rev: str, test_db: str) -> list:
    """Every stage of every test-db yml under test_db at rev."""
    stages = []
    for _m, typ, path in repo.ls_tree(rev, test_db + "/"):
        if typ == "blob" and path.endswith((".yml", ".yaml")):
            stages += parse_test_db(_text(repo.show_file(rev, path) or b""), path)
    return stages


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def read_waives(repo: Repo, rev: str, waives_file: str, index: Index | None = None) -> str | None:
    """waives.txt at rev (or in the private index of a tree being built); None when there is none."""
    data = index.read(waives_file) if index is not None else repo.show_file(rev, waives_file)
    return None if data is None else _text(data)


def compute(repo: Repo, rev: str, intent: WaiverIntent, index: Index | None = None) -> Narrowing:
    """The narrowing of intent.waives_file at rev (or in the private index of a tree being built)."""
    waives = read_waives(repo, rev, intent.waives_file, index)
    return narrowing_of(repo, rev, intent, waives, load_stages(repo, rev, intent.test_db) if waives is not None else [])


def narrowing_of(repo: Repo, rev: str, intent: WaiverIntent, waives: str | None, stages: list) -> Narrowing:
    """compute's narrowing, of a waives.txt and test-db stages already read (make waivers reads
    them for its report too: a 100,000-line blob and the yml files once, not twice)."""
    if waives is None:
        return Narrowing(False, f"{intent.waives_file} does not exist at this ref; nothing to change", "", "")
    return narrow(waives, stages, test_files(repo, rev), list(intent.must_run), name=intent.waives_file)


def commit_message(ps: PatchSet, n: Narrowing) -> str:
    owner = _owner(ps)
    tag = ticket(owner) if owner is not None else "None"
    tests = ", ".join(posixpath.basename(t) for t in ps.waivers.must_run)
    lines = [f"[{tag}][test] Narrow the waiver that skipped {tests}", "",
             ps.waivers.reason, "",
             "Computed against this tree: every test the removed line skipped, other than",
             "the ones above, is still waived, with the same reason.", "", "Removed:"]
    lines += [f"    {t}" for t in n.removed] + ["", f"Added {len(n.added)} line(s)."]
    return "\n".join(lines) + "\n"


def _owner(ps: PatchSet):
    """The fix the waiver edit is made for: the first own fix whose tests CI must run (a stack
    of several own fixes has no one bug: make new-fix's second fix made apply exit 70), else
    the set's one fix; None when neither names one."""
    must = set(ps.waivers.must_run)
    owners = [f for f in ps.fixes if f.ours and must & set(f.tests.all)]
    if owners:
        return owners[0]
    try:
        return ps.primary
    except ValueError:
        return None


def apply_to(tb, ps: PatchSet, author: Identity | None = None) -> Narrowing | None:
    """Add the waiver edit as one commit on the TreeBuilder's tip, when the tree needs one
    (authored as the last patch, or by author: make pr AUTHOR=)."""
    if ps.waivers is None:
        return None
    n = compute(tb.repo, tb.tip, ps.waivers, index=tb.index)
    if n.changed:
        last = ps.patches[-1]
        tb.write_file(ps.waivers.waives_file, n.after.encode("utf-8", "surrogateescape"))
        tb.commit(commit_message(ps, n), author or Identity(last.author_name, last.author_email), last.date)
    return n

"""The domain: a target names a patch set; a patch set is an ordered series plus metadata."""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any


PYTEST_CONFIG = ("conftest.py", "pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def pytest_config_on_the_way(tests: Iterable[str]) -> set[str]:
    """The files pytest may read for these tests: a conftest.py in every directory from the top
    down to each test, and the ini files it looks for in the same directories."""
    out = set()
    for t in tests:
        parts = PurePosixPath(t).parts[:-1]
        out |= {"/".join(parts[:i] + (f,)) for i in range(len(parts) + 1) for f in PYTEST_CONFIG}
    return out


@dataclass(frozen=True)
class FileChange:
    """One file a patch touches."""

    path: str  # the path after the change ('' for a deletion: see old_path)
    old_path: str
    added: bool
    hunks: tuple["Hunk", ...]


@dataclass(frozen=True)
class Hunk:
    header: str  # '@@ -a,b +c,d @@ ...'
    old_start: int
    old_len: int
    preimage: tuple[str, ...]  # context and removed lines, as the file had them
    postimage: tuple[str, ...]  # context and added lines (make bench drifts a context line)


@dataclass(frozen=True)
class Patch:
    """One format-patch file of a series."""

    file: Path
    author_name: str
    author_email: str
    date: str  # RFC 2822, as in the file
    subject: str  # without the [PATCH n/m] prefix
    body: str  # commit message body, trailers included
    diff: str
    files: tuple[FileChange, ...]
    tests_only: bool = False

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def message(self) -> str:
        return self.subject + ("\n\n" + self.body.strip("\n") if self.body.strip() else "") + "\n"

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(sorted({p for fc in self.files for p in (fc.path, fc.old_path) if p}))


@dataclass(frozen=True)
class Upstream:
    url: str
    ref: str
    base: str = ""  # the commit (or tag) the series was made on: THREEWAY's merge base

    @property
    def recorded_base(self) -> str:
        """Where the series applies as written: the recorded base, else the ref itself (a tag)."""
        return self.base or self.ref


@dataclass(frozen=True)
class Tests:
    """Which tests the set's delta runs."""

    regression: tuple[str, ...]
    neighbours: tuple[str, ...] = ()

    @property
    def all(self) -> tuple[str, ...]:
        return self.regression + self.neighbours


@dataclass(frozen=True)
class Container:
    base: str
    site_packages: str
    package: str = "tensorrt_llm"


@dataclass(frozen=True)
class Status:
    """DEP-3 status of the set: where it was sent and whether upstream has it."""

    forwarded: str  # a PR URL, or "no"
    applied_upstream: str | None = None


# Where upstream keeps its test lists: the one home of these paths (a set may name others).
WAIVES_FILE = "tests/integration/test_lists/waives.txt"
TEST_DB = "tests/integration/test_lists/test-db"


@dataclass(frozen=True)
class WaiverIntent:
    """What the set needs from upstream's waives.txt (see waivers/<target>.yaml)."""

    waives_file: str
    must_run: tuple[str, ...]  # test files of the set that CI must run
    reason: str
    test_db: str = TEST_DB


@dataclass(frozen=True)
class ChecklistAnswer:
    """The set author's answer to an item of upstream's PR checklist that nothing we measure
    settles (e.g. following the coding guidelines): matched by a phrase of the item's text."""

    item: str  # a phrase of the item, matched case-insensitively
    answer: str  # "done" (ticked) or "n/a" (struck through)
    why: str


@dataclass(frozen=True)
class PrIntent:
    """What make pr needs beyond the series: answers to checklist items, and how to find the
    user documentation that describes the behaviour the set changes."""

    checklist: tuple[ChecklistAnswer, ...] = ()
    docs: tuple[str, ...] = ()  # phrases (one line, any case) of docs/ text describing the changed behaviour


@dataclass(frozen=True)
class PatchSet:
    target: str
    root: Path  # patches/<target>
    upstream: Upstream
    branch: str
    bug: str
    title: str
    patches: tuple[Patch, ...]
    status: Status
    verified_on: tuple[dict[str, Any], ...]
    tests: Tests
    expected: dict[str, Any]
    container: Container
    waivers: WaiverIntent | None
    extra_paths: tuple[str, ...] = field(default=())
    pr: PrIntent = field(default_factory=PrIntent)

    @property
    def touched_paths(self) -> tuple[str, ...]:
        return tuple(sorted({p for patch in self.patches for p in patch.paths}))

    @property
    def sparse_paths(self) -> tuple[str, ...]:
        """What a sparse checkout needs: touched files, tests, the waiver and test-db files,
        declared extras, and the pytest configuration on the way to the tests."""
        extra = list(self.extra_paths) + list(self.tests.all)
        if self.waivers:
            extra += [self.waivers.waives_file, self.waivers.test_db]
        tests = [p for p in self.touched_paths if PurePosixPath(p).name.startswith("test_")] + list(self.tests.all)
        return tuple(sorted(set(self.touched_paths) | set(extra) | pytest_config_on_the_way(tests)))

    @property
    def content_hash(self) -> str:
        """A hash of what the set changes (the patch files), stable across checkouts."""
        h = hashlib.sha256()
        for patch in self.patches:
            h.update(patch.name.encode() + b"\0" + patch.file.read_bytes() + b"\0")
        return h.hexdigest()

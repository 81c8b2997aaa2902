"""The domain: a target names a patch set; a patch set is an ordered series plus metadata."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
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


# Where a path of upstream's tree goes (stack.py classifies): its tests, user docs and examples
# are never built into the wheel; the package is laid over an installed one; the rest (cpp/,
# CMake, setup.py, requirements) is what a wheel is built from.
TEST_DIRS = ("tests",)


def is_test_path(path: str) -> bool:
    """A test file: under a tests/ folder anywhere (tests/unittest/..., cpp/tests/...)."""
    return any(part in TEST_DIRS for part in PurePosixPath(path).parts[:-1])


# DEP-3 fields a patch carries as git trailers in its commit message (Debian's DEP-3; Yocto
# calls the status Upstream-Status). make check refuses a patch without an origin or a status.
DEP3_FIELDS = ("Origin", "Bug", "Forwarded", "Applied-Upstream", "Last-Update")
DEP3_STATUS = ("Forwarded", "Applied-Upstream")


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
    trailers: tuple[tuple[str, str], ...] = ()  # the message's trailer block, in order

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def message(self) -> str:
        return self.subject + ("\n\n" + self.body.strip("\n") if self.body.strip() else "") + "\n"

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(sorted({p for fc in self.files for p in (fc.path, fc.old_path) if p}))

    @property
    def tests_only(self) -> bool:
        """Every file it touches is a test file: it goes into the delta's tree without the fix too."""
        return all(is_test_path(p) for p in self.paths)

    def trailer(self, key: str) -> str | None:
        """The last value of a trailer (DEP-3 field), any case of its key; None when absent."""
        found = [v for k, v in self.trailers if k.lower() == key.lower()]
        return found[-1] if found else None

    @property
    def provenance(self) -> dict[str, str]:
        """Its DEP-3 fields that are present: Origin, Bug, Forwarded, Applied-Upstream, Last-Update."""
        return {k: v for k in DEP3_FIELDS if (v := self.trailer(k)) is not None}


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
    devel: str = ""  # the devel image a wheel is built in (make wheel), as upstream's release is
    cuda_archs: str = ""  # the CUDA architectures the wheel is built for (CUDA_ARCHS' default)


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
class Variant:
    """Which form of the change a fix carries, where it has more than one (#25): a short name,
    and for a form that differs from the one verified (see verified_on) one sentence saying how
    and why, which make pr puts in the PR's description for the reviewer."""

    name: str
    differs: str = ""


OURS, BACKPORT = "ours", "backport"
FIX_KINDS = (OURS, BACKPORT)


@dataclass(frozen=True)
class Fix:
    """The unit a user speaks of: one fix of a target's stack, with its patches (in order).

    Ours (a fix we carry and send upstream as a PR) or a backport (an upstream PR or commit we
    carry until the target's ref has it). Its tests and their expected delta are its own:
    make delta grades it on the stack without its non-test changes against the whole stack."""

    id: str  # what the user types (FIXID=19514): the bug's number for ours, the PR's for a backport
    kind: str  # OURS or BACKPORT
    title: str
    bug: str  # the bug it fixes (URL)
    origin: str  # ours: the bug URL; a backport: the upstream PR or commit it was taken from
    patches: tuple[Patch, ...]
    status: Status
    tests: Tests
    expected: dict[str, Any]
    verified_on: tuple[dict[str, Any], ...] = ()
    pr: PrIntent = field(default_factory=PrIntent)
    variant: Variant | None = None  # which form of the change, where targets carry different ones
    upstream_commits: tuple[str, ...] = ()  # a backport: the upstream commits its patches were made from
    upstream_base: str = ""  # a backport: the commit they applied to (its 3-way merge base)

    @property
    def ours(self) -> bool:
        return self.kind == OURS


@dataclass(frozen=True)
class PatchSet:
    """A target: upstream's ref and the stack of fixes carried on it, in order."""

    target: str
    root: Path  # patches/<target>
    upstream: Upstream
    branch: str
    fixes: tuple[Fix, ...]
    container: Container
    waivers: WaiverIntent | None
    extra_paths: tuple[str, ...] = field(default=())

    @property
    def patches(self) -> tuple[Patch, ...]:
        """The whole stack's patches, in the order they apply."""
        return tuple(p for f in self.fixes for p in f.patches)

    @property
    def stacked(self) -> bool:
        """A stack of several fixes: what is said names the fix; a set of one reads as a set always has."""
        return len(self.fixes) > 1

    @property
    def tests(self) -> Tests:
        """Every fix's tests (each once, in stack order)."""
        reg = tuple(dict.fromkeys(t for f in self.fixes for t in f.tests.regression))
        nb = tuple(dict.fromkeys(t for f in self.fixes for t in f.tests.neighbours if t not in reg))
        return Tests(reg, nb)

    @property
    def primary(self) -> Fix:
        """The fix the set is about where one is meant (the PR, the title): its only own fix,
        else its only fix. A stack of several own fixes has none: callers ask for one by id."""
        ours = [f for f in self.fixes if f.ours]
        pick = ours if ours else list(self.fixes)
        if len(pick) != 1:
            raise ValueError(f"{self.target} carries {len(pick)} fixes; name one")
        return pick[0]

    # What a one-fix view (only()) reads as the set's own: the primary fix's.
    @property
    def title(self) -> str:
        return self.primary.title

    @property
    def bug(self) -> str:
        return self.primary.bug

    @property
    def status(self) -> Status:
        return self.primary.status

    @property
    def pr(self) -> PrIntent:
        return self.primary.pr

    @property
    def variant(self) -> Variant | None:
        return self.primary.variant

    @property
    def expected(self) -> dict[str, Any]:
        return self.primary.expected

    @property
    def verified_on(self) -> tuple[dict[str, Any], ...]:
        return tuple(v for f in self.fixes for v in f.verified_on)

    def fix(self, fix_id: str) -> Fix:
        """The fix called fix_id; KeyError when the stack has none."""
        for f in self.fixes:
            if f.id == fix_id:
                return f
        raise KeyError(fix_id)

    def only(self, *fixes: Fix) -> "PatchSet":
        """The same target carrying only these fixes (in stack order): a PR's series, one fix's view."""
        keep = {f.id for f in fixes}
        return replace(self, fixes=tuple(f for f in self.fixes if f.id in keep))

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
        import hashlib  # here: its OpenSSL start was a tenth of loading a set, which most commands never hash

        h = hashlib.sha256()
        for patch in self.patches:
            h.update(patch.name.encode() + b"\0" + patch.file.read_bytes() + b"\0")
        return h.hexdigest()

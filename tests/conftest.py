"""Hermetic seal for every test: own HOME, fixed git identity and dates, no network, no gpg."""
from __future__ import annotations

import compileall
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

import hygiene
from helpers import LINT_CACHE, ROOT, build_once, copy_project, sh  # noqa: F401
from stacks import STACK_PR

FIXED_DATE = "2026-11-29T12:00:00+00:00"
_FOUND = pytest.StashKey[dict]()
_ROOT = pytest.StashKey[Path]()
# The variables the Makefile exports: under `make test` they reach the tests' environment,
# and a test's own `make TRTLLM=rc25 export` would then get the outer BRANCH=overlay/main.
MAKE_VARIABLES = {name for line in (ROOT / "Makefile").read_text().splitlines()
                  if line.startswith("export ") and "=" not in line for name in line.split()[1:]}

# What an outer make (make test, .ci/run's make test-slow) puts in the environment: a command a
# test runs as printed is then a sub-make, which adds "make[1]: Entering directory" lines a user
# at a terminal never sees (CI's run of the demo's backport line failed on exactly that).
OUTER_MAKE = {"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKE_TERMOUT", "MAKE_TERMERR"}


def pytest_configure(config):
    """The run's own temporary root, then the package's bytecode.

    Root: everything the run puts in a temporary folder (pytest's own base, the workers', every
    test's TMPDIR, what the programs they start write there) lands under one folder this run
    made, $TMPDIR/patchkit-tests-XXXX, set before pytest picks its base. So the hygiene check
    counts only what this run made: another user's /tmp/pytest-of-<user>, or another test run
    writing into /tmp meanwhile, is none of its business (#31 item 12: a green run exited 2 when
    another pytest made /tmp/pytest-of-root). The workers inherit it from the controller.

    Bytecode: written once for the whole run. The suite starts patchkit in a few hundred
    processes (make, the CLI, hints run as printed); where PYTHONDONTWRITEBYTECODE is set, each
    of them compiled every module of the package from source again (a tenth of a second of each
    start-up). Python still reads bytecode under that setting; it lands where Python itself
    keeps it (__pycache__, ignored by git). Workers and controller may compile at once: each
    file is written to a temporary name and renamed."""
    if not hasattr(config, "workerinput") and not config.option.basetemp:
        root = Path(tempfile.mkdtemp(prefix=hygiene.RUN_ROOT_PREFIX))
        os.environ["TMPDIR"] = str(root)
        tempfile.tempdir = str(root)
        config.stash[_ROOT] = root
    compileall.compile_dir(ROOT / "tools" / "patchkit", quiet=1)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """The test modules' bytecode, as pytest rewrites their asserts: pytest reads what it wrote
    before, but writes nothing where PYTHONDONTWRITEBYTECODE is set, so each worker rewrote and
    compiled every test module at every run (1.5 CPU-s a worker). Written while collecting only
    (pytest writes beside, then renames: two workers may write at once); the tests run as set."""
    dont = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = dont


@pytest.hookimpl(trylast=True)  # after -m has deselected: make test keeps its order
def pytest_collection_modifyitems(items):
    """make test-slow's long modules first: those holding an exhaustive fault sweep (a single
    case of one ran 18 minutes on a busy machine) come before the others, each set in its
    collection order. make test-slow hands out whole modules in this order (--dist loadscope
    --no-loadscope-reorder; xdist's own reorder, by number of cases, started the two-case
    module of the longest sweeps last), so the short ones fill in around the long ones (#34
    item 3: over the cases' durations of a full run, the busier worker's share 2645 s, now 2294,
    the even split 2289)."""
    heavy = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("exhaustive")}
    if heavy:
        items.sort(key=lambda item: item.nodeid.split("::")[0] not in heavy)


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    cfg = home / ".gitconfig"
    cfg.write_text("[user]\n\tname = Test User\n\temail = test@example.com\n"
                   "[commit]\n\tgpgsign = false\n[init]\n\tdefaultBranch = main\n"
                   "[protocol]\n\tallow = never\n[protocol \"file\"]\n\tallow = always\n")
    for k in list(os.environ):
        if k.startswith("GIT_") or k in ("PATCHKIT_ROOT", "PATCHKIT_VIA_MAKE") or k in MAKE_VARIABLES \
                or k in OUTER_MAKE:
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_DATE", FIXED_DATE)
    monkeypatch.setenv("GIT_COMMITTER_DATE", FIXED_DATE)
    # make lint's hook environments and verdicts: one warm cache for every test (and for the
    # commands they run in subprocesses), as a user keeps theirs between runs.
    monkeypatch.setenv("PATCHKIT_LINT_CACHE", str(LINT_CACHE))
    monkeypatch.setenv("LANG", "C")
    monkeypatch.setenv("TZ", "UTC")
    # Whatever patchkit or a tool puts in $TMPDIR (temporary indexes, crash logs) lands in the
    # test's own temp dir: nothing of a run is left in /tmp, and no test counts another's files.
    tmp = tmp_path_factory.mktemp("tmpdir")
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))


def pytest_sessionstart(session):
    """What the project's build/ and /tmp hold before the run (the controller's view)."""
    if not hasattr(session.config, "workerinput"):
        session.config.stash[_FOUND] = hygiene.snapshot()


def pytest_sessionfinish(session, exitstatus):
    """A green run leaves nothing behind: this session's pytest base goes (a failed run's stays
    for a look; under xdist the controller's holds the workers' too), and then the run's root
    must be empty. Then the hygiene check: build/ as the run found it, nothing left in the run's
    root, no scratch folder or crash log of patchkit's in /tmp (#27 item 7, #31 item 12)."""
    if hasattr(session.config, "workerinput"):
        return
    root = session.config.stash.get(_ROOT, None)
    factory = getattr(session.config, "_tmp_path_factory", None)
    if exitstatus == 0 and factory is not None and not session.config.option.basetemp:
        base = Path(factory.getbasetemp())
        shutil.rmtree(base, ignore_errors=True)
        current = base.parent / f"{base.name.rsplit('-', 1)[0]}-current"
        if current.is_symlink() and not current.exists():
            current.unlink()
        try:
            base.parent.rmdir()  # pytest-of-<user> inside the run's root
        except OSError:
            pass
    found = session.config.stash.get(_FOUND, None)
    if found is None or exitstatus not in (0, 1):  # interrupted, or no test ran: nothing to judge
        return
    changes = hygiene.compare(found, hygiene.snapshot(), root if exitstatus == 0 else None)
    if changes:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = hygiene.describe(changes, root)
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_sep("=", "hygiene: the tests wrote outside their temporary folders", red=True)
            for line in lines:
                reporter.write_line(line)
        else:
            print("\n".join(lines))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif root is not None and exitstatus == 0:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def miniature_template(tmp_path_factory):
    """The miniature upstream, built once a session by the real builder, then its objects packed
    and git's sample hooks left out: each test's copy (upstream) creates a file for every one,
    and a file created costs this machine half a millisecond of CPU (#34 item 2: a copy took
    0.28 CPU-s with 330 files, 0.10 with 120; git answers the same)."""
    from patchkit import miniature

    def build(dest: Path) -> None:
        miniature.build(ROOT, dest)
        sh("git", "-C", dest, "repack", "-adq")  # -d: the loose copies go (prune-packed)
        for sample in (dest / ".git" / "hooks").glob("*.sample"):
            sample.unlink()
    return build_once(tmp_path_factory, "mini", build)


@pytest.fixture(scope="session")
def compiler_cache(tmp_path_factory) -> Path:
    """The compiler caches of the run's C++ builds of the miniature, laid out as make wheel's
    <cache>/ccache (one a devel image, host for this machine), shared by the xdist workers
    (ccache locks its own files): a translation unit one test compiled is a hit in the next
    test's tree, so each build is still the tree's own script, cmake and g++, and costs what it
    compiles anew (#34 item 3: the miniature's library is 29 files, 12.4 s cold, 0.9 s from the cache).
    It lies in the controller's base folder, which holds the workers' (removed after a green run)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "ccache"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture
def upstream(miniature_template, tmp_path):
    """A private copy of the miniature upstream that a test may change."""
    dest = tmp_path / "upstream"
    shutil.copytree(miniature_template, dest, symlinks=True)
    return dest


@pytest.fixture
def checkout(upstream, tmp_path):
    """A user's full clone of the upstream."""
    dest = tmp_path / "trtllm"
    sh("git", "clone", "-q", upstream.as_uri(), dest)
    return dest




@pytest.fixture(scope="session")
def stack_template(tmp_path_factory, miniature_template):
    """A stacked copy of the project (patches/, waivers/ and the Makefile; run with --root):
    rc25 carries the miniature's PR 19302 (C++, Python and tests; squash-merged on main) as a
    backport under our fix, written by make
    backport's own code (measured on the miniature, never typed) from a clone of its own."""
    from patchkit import patchset
    from patchkit.backport import command

    def build(root: Path) -> None:
        copy_project(root, "Makefile")
        src = root.parent / "trtllm-rc25"
        sh("git", "clone", "-q", miniature_template.as_uri(), src)
        command.backport(patchset.load(root, "rc25"), root=root, src=src, pr=STACK_PR, today="2026-12-02")
        shutil.rmtree(src)
    return build_once(tmp_path_factory, "stack", build, leaf="root")



@pytest.fixture
def stacked(stack_template, upstream, tmp_path):
    """(project, checkout): a copy of the stacked project (19302 under 19514 on rc25) and a clone
    of the miniature with overlay/rc25 applied, as a maintainer has them before a daily verb."""
    from patchkit import apply as apply_mod, patchset
    root = tmp_path / "root"
    shutil.copytree(stack_template, root)
    src = tmp_path / "src"
    sh("git", "clone", "-q", upstream.as_uri(), src)
    apply_mod.apply(patchset.load(root, "rc25"), src=src)
    return root, src

"""A seeded fuzz of every input format (#11): patchset.yaml, waivers/*.yaml, the patches,
waives.txt, the test-db files, delta reports and patchkit's own state files.

At least 500 mutants of each, read in-process by the code that reads them in a real run;
and a sample of them through `apply`/`pr` on a real checkout. Counted: exit 70 (any
exception that is not a UserError), tracebacks, runs slower than a bound (a hang), files
written outside the checkout and build/, and checkouts changed by a refused run. The test
asserts that every count is zero and prints them.
"""
from __future__ import annotations

import contextlib
import copy
import json
import random
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from patchkit import apply as apply_mod, patchset, schema
from patchkit.cli import main
from patchkit.errors import UserError
from patchkit.git import Repo
from patchkit.pr import body as body_mod
from patchkit.waives.narrow import narrow
from patchkit.waives.parse import parse_test_db
from helpers import ROOT, copy_root, sh, state_of

pytestmark = pytest.mark.slow  # fuzz: 500 mutants of each format: make test-slow (.ci/run)

SEED = 20261130
MUTANTS = 500
SLOW = 5.0  # seconds: any single read slower than this counts as a hang
MINI = ROOT / "tests" / "fixtures" / "miniature" / "base"
WAIVES = MINI / "tests/integration/test_lists/waives.txt"
TEST_DB = sorted((MINI / "tests/integration/test_lists/test-db").glob("*.yml"))

ODD_VALUES = ["5", "-1", "[a, b]", "{a: 1}", "2026-11-29", "null", "true", '"--orphan=pwn"', "../../etc/passwd",
              "/abs/path", '"a\\nSigned-off-by: Evil <e@e.com>"', "x" * 5000, "&a [*a, *a]", "'\\x00'", "[" * 200,
              '"\\u202e"', "!!python/object:os.system ls", "1e400", "0x10", "~", '""', "[]", "{}"]
ODD_BYTES = [b"\x00", b"\xff", b"\xfe\xff", b"\r", b"\t", b"\x1b[2J", b"\n", b"\\", b"'", b'"', b"-", b"..", b":", b"@@",
             b"\xe2\x80\xae", b"\x7f"]


def mutate(rng: random.Random, data: bytes, yaml_like: bool) -> bytes:
    """One to three random edits: bytes, lines, truncation, and (for YAML) odd values for keys."""
    for _ in range(rng.randint(1, 3)):
        lines = data.split(b"\n")
        op = rng.randrange(8 if yaml_like else 6)
        i = rng.randrange(len(lines)) if lines else 0
        if op == 0 and data:
            at = rng.randrange(len(data))
            data = data[:at] + rng.choice(ODD_BYTES) + data[at + 1:]
        elif op == 1:
            del lines[i]
            data = b"\n".join(lines)
        elif op == 2:
            lines.insert(i, lines[i] if lines else b"")
            data = b"\n".join(lines)
        elif op == 3 and len(lines) > 1:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
        elif op == 4:
            data = data[: rng.randrange(len(data) + 1)]
        elif op == 5:
            at = rng.randrange(len(data) + 1)
            data = data[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[at:]
        elif op in (6, 7) and b":" in lines[i]:
            key = lines[i].split(b":", 1)[0]
            lines[i] = key + b": " + rng.choice(ODD_VALUES).encode()
            data = b"\n".join(lines)
    return data


class Tally:
    def __init__(self, name: str) -> None:
        self.name, self.c = name, Counter()

    @contextlib.contextmanager
    def read(self):
        """One read of a mutant: UserError is an answer; anything else is a defect."""
        self.c["mutants"] += 1
        started = time.monotonic()
        try:
            yield
            self.c["accepted"] += 1
        except UserError as exc:
            self.c["refused"] += 1
            if "\n" in exc.message:
                self.c["message not one line"] += 1
                if self.c["message not one line"] <= 2:
                    print(f"  {self.name}: {exc.message!r}"[:300])
        except RecursionError:
            self.c["exit 70"] += 1
        except Exception as exc:  # noqa: BLE001 - what the fuzz looks for
            self.c["exit 70"] += 1
            if self.c["exit 70"] <= 3:
                print(f"  {self.name}: {type(exc).__name__}: {str(exc)[:200]}")
        if time.monotonic() - started > SLOW:
            self.c["hang"] += 1

    def cli(self, capsys, argv: list[str]) -> int:
        started = time.monotonic()
        code = main(argv)
        _, err = capsys.readouterr()
        self.c["runs"] += 1
        if code == 70 or "internal error" in err:
            self.c["exit 70"] += 1
            if self.c["exit 70"] <= 3:
                print(f"  {self.name}: {err.strip()[:300]}")
        if "Traceback" in err:
            self.c["traceback"] += 1
        if code and err.count("\n") != 1:
            self.c["not one line"] += 1
            print(f"  {self.name}: {err!r}"[:300])
        if time.monotonic() - started > 4 * SLOW:
            self.c["hang"] += 1
        return code

    def defects(self) -> int:
        return sum(v for k, v in self.c.items() if k not in ("mutants", "accepted", "refused", "runs"))

    def report(self) -> None:
        print(f"fuzz {self.name}: {self.c['mutants']} mutants ({self.c['accepted']} accepted, {self.c['refused']} "
              f"refused), {self.c['runs']} end-to-end runs; defects {self.defects()}: {dict(self.c)}")


def outside_writes(places: list[Path], snapshot: dict | None = None) -> dict:
    """(path -> mtime, size) of every file under places, for a before/after comparison."""
    seen = {}
    for place in places:
        for p in place.rglob("*") if place.is_dir() else []:
            if p.is_file() or p.is_symlink():
                st = p.lstat()
                seen[str(p)] = (st.st_mtime_ns, st.st_size)
    return seen


def crash_logs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("patchkit-crash-*.log")}


def parse_each_text_once(monkeypatch) -> None:
    """Every mutant is parsed by the real YAML reader; the set's other, unchanged YAML file is
    not parsed again for each of the 500 (the pure-Python parse was most of the fuzz's time).
    The reader is a function of its text: a repeat gets a copy of the first answer."""
    real = schema.load_yaml
    seen: dict = {}

    def load_yaml(text, where, max_aliases=schema.MAX_ALIASES):
        key = (text, where, max_aliases)
        if key not in seen:
            try:
                seen[key] = (real(text, where, max_aliases), None)
            except UserError as exc:
                seen[key] = (None, exc)
        data, exc = seen[key]
        if exc is not None:
            raise copy.copy(exc)
        return copy.deepcopy(data)
    monkeypatch.setattr(schema, "load_yaml", load_yaml)


@pytest.fixture
def arena(tmp_path, checkout, monkeypatch):
    """A project root copy, a checkout, and what lies outside them to watch."""
    monkeypatch.setenv("PATCHKIT_LOCK_WAIT", "0")
    parse_each_text_once(monkeypatch)
    # Crash logs go to this test's own temp dir: counted in the shared /tmp, another test run
    # on the machine (a test of the crash handler) was counted as a crash of ours.
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    root = copy_root(tmp_path)
    watch = [tmp_path / "watched", Path.home()]
    (tmp_path / "watched").mkdir()
    return root, checkout, watch


def _yaml_format(capsys, arena, name: str, target_file, end_to_end: int) -> Tally:
    root, checkout, watch = arena
    rng = random.Random(f"{SEED}-{name}")
    path = target_file(root)
    original = path.read_bytes()
    t = Tally(name)
    before_outside, logs = outside_writes(watch), crash_logs()
    for i in range(MUTANTS):
        path.write_bytes(mutate(rng, original, yaml_like=path.suffix in (".yaml", ".yml")))
        with t.read():
            patchset.load(root, "rc25")
        if i < end_to_end:
            before = state_of(checkout)
            code = t.cli(capsys, ["--root", str(root), "apply", "--target", "rc25", "--src", str(checkout)])
            if code == 0:
                if t.cli(capsys, ["--root", str(root), "unapply", "--target", "rc25", "--src", str(checkout)]) != 0:
                    t.c["unapply failed"] += 1
                    shutil.rmtree(checkout)
                    sh("git", "clone", "-q", arena_upstream(checkout), checkout)
            elif state_of(checkout) != before:
                t.c["changed checkout"] += 1
    path.write_bytes(original)
    if outside_writes(watch) != before_outside:
        t.c["writes outside checkout and build"] += 1
    t.c["crash logs"] += len(crash_logs() - logs)
    t.report()
    return t


def arena_upstream(checkout: Path) -> str:
    return sh("git", "-C", checkout, "remote", "get-url", "origin").stdout.strip()


@pytest.mark.parametrize("name, where", [
    ("patchset.yaml", lambda root: root / "patches" / "rc25" / "patchset.yaml"),
    ("waivers yaml", lambda root: root / "waivers" / "rc25.yaml"),
    ("fix patch", lambda root: sorted((root / "patches" / "rc25").glob("0001-*.patch"))[0]),
    ("test patch", lambda root: sorted((root / "patches" / "rc25").glob("0002-*.patch"))[0]),
])
def test_fuzz_metadata_and_patches(capsys, arena, name, where):
    t = _yaml_format(capsys, arena, name, where, end_to_end=4)
    assert t.c["mutants"] >= MUTANTS and t.c["refused"] > 0 and t.defects() == 0, dict(t.c)


def test_fuzz_waives_txt_and_test_db():
    rng = random.Random(f"{SEED}-waives")
    waives = WAIVES.read_bytes()
    stages = [s for f in TEST_DB for s in parse_test_db(f.read_text(), f.name)]
    files = sorted(str(p.relative_to(MINI)) for p in (MINI / "tests").rglob("test_*.py"))
    must = ["tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"]
    tw, td = Tally("waives.txt"), Tally("test-db")
    for _ in range(MUTANTS):
        text = mutate(rng, waives, yaml_like=False).decode("utf-8", "surrogateescape")
        with tw.read():
            narrow(text, stages, files, must)
    for i in range(MUTANTS):
        f = TEST_DB[i % len(TEST_DB)]
        text = mutate(rng, f.read_bytes(), yaml_like=True).decode("utf-8", "surrogateescape")
        with td.read():
            narrow(waives.decode(), parse_test_db(text, f.name), files, must)
    tw.report()
    td.report()
    assert tw.c["mutants"] >= MUTANTS and td.c["mutants"] >= MUTANTS
    assert tw.defects() == 0 and td.defects() == 0, (dict(tw.c), dict(td.c))


def test_fuzz_reports_and_state_files(capsys, arena, tmp_path):
    root, checkout, _ = arena
    ps = patchset.load(ROOT, "rc25")
    repo = Repo(checkout)
    commit = sh("git", "-C", checkout, "rev-parse", "v1.3.0rc25^{commit}").stdout.strip()
    seed_report = {"target": "rc25", "upstream_commit": commit, "upstream_ref": "refs/tags/v1.3.0rc25",
                   "mode": "source", "matches_expected": True, "valid": True,
                   "unpatched": {"passed": 7, "failed": 23, "error": 0, "skipped": 0, "not_run": 0,
                                 "tests": {f"{ps.tests.regression[0]}::t{i}": "failed" for i in range(3)}},
                   "patched": {"passed": 30, "failed": 0, "error": 0, "skipped": 0, "not_run": 0,
                               "tests": {f"{ps.tests.regression[0]}::t{i}": "passed" for i in range(3)}},
                   "fail_to_pass": [f"{ps.tests.regression[0]}::t0"], "pass_to_pass": [], "pass_to_fail": [],
                   "fail_to_fail": [], "not_run": {}}
    original = json.dumps(seed_report, indent=2).encode()
    rng = random.Random(f"{SEED}-report")
    report = tmp_path / "report.json"
    tr, ts = Tally("delta report"), Tally("state file")
    for i in range(MUTANTS):
        report.write_bytes(mutate(rng, original, yaml_like=True))
        with tr.read():
            rep = body_mod.load_report(report, ps, commit)
            body_mod.context(ps, rep, list(ps.touched_paths), None)
        if i < 4:
            before = state_of(checkout)
            code = tr.cli(capsys, ["--root", str(ROOT), "pr", "--target", "rc25", "--src", str(checkout), "--report",
                                   str(report), "--out", str(tmp_path / "out"), "--signoff", "A B <a@b.c>"])
            if code != 0 and state_of(checkout) != before:
                tr.c["changed checkout"] += 1
    assert tr.cli(capsys, ["--root", str(ROOT), "apply", "--target", "rc25", "--src", str(checkout)]) == 0
    state_file = repo.git_path("patchkit/rc25.json")
    good = state_file.read_bytes()
    for i in range(MUTANTS):
        state_file.write_bytes(mutate(rng, good, yaml_like=True))
        with ts.read():
            apply_mod.read_state(repo, "rc25")
        if i < 4:
            before = state_of(checkout)
            code = ts.cli(capsys, ["--root", str(ROOT), "unapply", "--target", "rc25", "--src", str(checkout)])
            if code != 0 and state_of(checkout) != before:
                ts.c["changed checkout"] += 1
            if code == 0:  # the mutant was still a valid record: apply again for the next one
                assert ts.cli(capsys, ["--root", str(ROOT), "apply", "--target", "rc25", "--src", str(checkout)]) == 0
                good = state_file.read_bytes()
    tr.report()
    ts.report()
    assert tr.defects() == 0 and ts.defects() == 0, (dict(tr.c), dict(ts.c))

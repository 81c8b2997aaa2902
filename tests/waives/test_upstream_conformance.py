"""Conformance with upstream's real data files in ../shared/upstream/ (see its README).

Regression for issue #9: the real waives.txt (455 lines at 000ea252) stopped `make apply` at
line 308 ('the reason must be in parentheses'). These tests read the real files where they
are (CI has them) and skip with a reason elsewhere; the files are never copied into the repo.
"""
from __future__ import annotations

import re
import shutil

import pytest

from patchkit.waives.match import Matcher, ci_item, waived_files
from patchkit.waives.narrow import narrow, test_id as tid
from patchkit.waives.parse import parse_test_db, parse_waives
from helpers import render_waives as render
from helpers import ROOT, sh

SHARED = ROOT.parent / "shared" / "upstream"
pytestmark = pytest.mark.skipif(
    not (SHARED / "waives.txt").is_file() or not (SHARED / "l0_cpu.yml").is_file(),
    reason=f"upstream's real data files are not at {SHARED} (a clone outside the team's machines)")

WAIVES_PATH = "tests/integration/test_lists/waives.txt"
BLANKET = "unittest/_torch/executor SKIP (https://nvbugs/6800103)"  # upstream's line of 2026-09-18..22
NEW = "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"
MINI = ROOT / "tests/fixtures/miniature/base/tests"


def real_waives() -> str:
    return (SHARED / "waives.txt").read_bytes().decode("utf-8")


def real_stages():
    return parse_test_db((SHARED / "l0_cpu.yml").read_text(), "tests/integration/test_lists/test-db/l0_cpu.yml")


def with_blanket(text: str) -> str:
    """A copy of the real file with the blanket directory line at its sorted place, as upstream had it."""
    lines = text.splitlines()
    assert BLANKET not in lines
    return "\n".join(sorted(lines + [BLANKET])) + "\n"


def listing() -> list[str]:
    """The miniature's test files (shaped like upstream's executor directory) and the set's new test."""
    return sorted({"tests/" + str(p.relative_to(MINI)) for p in MINI.rglob("test_*.py")} | {NEW})


def test_every_line_of_the_real_waives_txt_parses():
    text = real_waives()
    entries = parse_waives(text, WAIVES_PATH)
    content = [line for line in text.splitlines() if line.partition("#")[0].strip()]
    assert len([e for e in entries if e.name]) == len(content)
    # The forms that stopped apply before are there, and read as upstream reads them.
    no_reason = [e for e in entries if e.kind and re.fullmatch(rf".* {e.kind}( #.*)?", e.text)]
    assert no_reason and all(e.reason is None for e in no_reason)
    assert any("#" in e.text for e in no_reason)
    multi = max(entries, key=lambda e: len(e.paths))
    assert len(multi.paths) > 1 and multi.text.startswith(f"full:{multi.hardware}/") and multi.kind == "SKIP"
    assert any(e.selector and e.selector.startswith("-k ") for e in entries)
    assert any(e.selector and e.selector.startswith("-m ") for e in entries)


def test_the_real_waives_txt_round_trips_byte_identical():
    text = real_waives()
    assert render(parse_waives(text, WAIVES_PATH)).encode("utf-8") == (SHARED / "waives.txt").read_bytes()


def test_the_real_l0_cpu_yml_parses_and_maps_the_executor_directory_to_its_ci_item():
    stages = real_stages()
    assert [s.name for s in stages] == ["l0_cpu"]
    raw = (SHARED / "l0_cpu.yml").read_text()
    entries = [line.strip()[2:] for line in raw.splitlines() if line.startswith("  - ")]
    assert len(stages[0].items) == len(entries)
    marked = [e for e in entries if e.endswith(" ISOLATION")]
    assert marked and all(e[: -len(" ISOLATION")] in stages[0].items for e in marked)
    assert "unittest/_torch/executor" in stages[0].items
    assert ci_item("unittest/_torch/executor") == "test_unittests.py::test_unittests_v2[unittest/_torch/executor]"
    found = Matcher(parse_waives(with_blanket(real_waives())), stages).hits(tid(NEW))
    assert [(h.level, h.stages, h.entry.text) for h in found] == [("outer", ("l0_cpu",), BLANKET)]


def test_the_real_file_as_is_needs_no_edit():
    text = real_waives()
    n = narrow(text, real_stages(), listing(), [NEW], name=WAIVES_PATH)
    assert not n.changed and n.after == text


def test_narrowing_the_blanket_line_in_the_real_file_changes_exactly_what_it_must():
    before = with_blanket(real_waives())
    stages, files = real_stages(), listing()
    n = narrow(before, stages, files, [NEW], name=WAIVES_PATH)
    below = [tid(f) for f in files if f.startswith("tests/unittest/_torch/executor/") and f != NEW]
    assert n.changed and n.removed == [BLANKET]
    assert sorted(n.added) == sorted(f"{t} SKIP (https://nvbugs/6800103)" for t in below)
    # Only those lines changed, and the file stays sorted the way upstream keeps it.
    after = n.after.splitlines()
    assert sorted(set(after) - set(before.splitlines())) == sorted(n.added)
    assert set(before.splitlines()) - set(after) == {BLANKET}
    assert after == sorted(after) and n.after.endswith("\n")
    # The waived set changes by exactly the must-run test.
    ids = sorted(tid(f) for f in files)
    b = waived_files(ids, Matcher(parse_waives(before), stages))
    a = waived_files(ids, Matcher(parse_waives(n.after), stages))
    assert [t for t in ids if {x[1:] for x in b[t]} != {x[1:] for x in a[t]}] == [tid(NEW)]
    assert b[tid(NEW)] and not a[tid(NEW)]


def test_apply_on_an_upstream_carrying_the_real_files(upstream, tmp_path):
    """Issue #9 end to end: the real waives.txt and l0_cpu.yml no longer stop apply on either target."""
    from patchkit import apply as apply_mod, patchset
    lists = upstream / "tests/integration/test_lists"

    def lay(ref: str, waives: str, tag: str | None) -> None:
        sh("git", "-C", upstream, "checkout", "-q", ref)
        (lists / "waives.txt").write_text(waives)
        shutil.copyfile(SHARED / "l0_cpu.yml", lists / "test-db/l0_cpu.yml")
        sh("git", "-C", upstream, "commit", "-qam", "Upstream's real waives.txt and l0_cpu.yml")
        if tag:
            sh("git", "-C", upstream, "tag", "-f", tag)

    lay("v1.3.0rc25", with_blanket(real_waives()), "v1.3.0rc25")
    lay("main", real_waives(), None)
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    rc = apply_mod.apply(patchset.load(ROOT, "rc25"), src=clone)
    assert rc.waiver.changed and rc.waiver.removed == [BLANKET]
    waives = (clone / WAIVES_PATH).read_text()
    assert BLANKET not in waives.splitlines()
    assert set(real_waives().splitlines()) <= set(waives.splitlines())
    apply_mod.unapply(patchset.load(ROOT, "rc25"), src=clone)
    main = apply_mod.apply(patchset.load(ROOT, "main"), src=clone)
    assert not main.waiver.changed and (clone / WAIVES_PATH).read_text() == real_waives()

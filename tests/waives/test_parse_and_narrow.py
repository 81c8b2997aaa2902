"""waives.txt parsing and narrowing on the miniature's own waives.txt and test-db."""
from __future__ import annotations

import pytest

from patchkit.errors import BadInput, Conflict
from patchkit.waives.match import hits
from patchkit.waives.narrow import narrow
from patchkit.waives.parse import parse_test_db, parse_waives, render
from helpers import ROOT

BASE = ROOT / "tests/fixtures/miniature/base/tests"
WAIVES = (BASE / "integration/test_lists/waives.txt").read_text()
STAGES = [s for f in sorted((BASE / "integration/test_lists/test-db").glob("*.yml"))
          for s in parse_test_db(f.read_text(), f.name)]
FILES = sorted("tests/" + str(p.relative_to(BASE.parent / "tests")) for p in BASE.rglob("test_*.py"))
NEW = "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"


def test_every_shape_parses_and_round_trips_byte_identical():
    entries = parse_waives(WAIVES)
    assert render(entries) == WAIVES
    by_kind = {e.kind for e in entries if e.is_waiver}
    assert by_kind == {"SKIP", "XFAIL", "UNSTABLE", "TIMEOUT"}
    multi = next(e for e in entries if len(e.ids) == 2)
    assert multi.kind == "TIMEOUT"
    hw = next(e for e in entries if e.ids and e.ids[0].hardware == "sm100")
    assert (hw.option, hw.expr, hw.reason) == ("-k", "partition0", "Disable for Blackwell")


@pytest.mark.parametrize("line, message", [
    ("unittest/x.py SKIP https://nvbugs/1", ":3: the reason must be in parentheses"),
    ("unittest/x.py SKIPPED (why)", ":3: not a waiver line"),
])
def test_malformed_line_is_reported_with_its_number(line, message):
    with pytest.raises(BadInput, match=message):
        parse_waives("# comment\n\n" + line + "\n")


def test_blanket_directory_waiver_skips_the_new_test_at_the_outer_level_only():
    found = hits("unittest/_torch/executor/test_cross_kv_cache_layout.py", parse_waives(WAIVES), STAGES)
    assert [(h.level, h.stages, h.entry.reason) for h in found] == [("outer", ("l0_cpu",), "https://nvbugs/6800103")]


def test_narrowing_runs_the_new_test_and_keeps_everything_else_waived():
    n = narrow(WAIVES, STAGES, FILES, [NEW])
    assert n.changed and n.removed == ["unittest/_torch/executor SKIP (https://nvbugs/6800103)"]
    assert sorted(n.added) == [
        "unittest/_torch/executor/kv_cache/test_block_sizes.py SKIP (https://nvbugs/6800103)",
        "unittest/_torch/executor/test_config_lookup.py SKIP (https://nvbugs/6800103)",
        "unittest/_torch/executor/test_scheduler_limits.py SKIP (https://nvbugs/6800103)",
    ]
    before, after = WAIVES.splitlines(), n.after.splitlines()
    assert [line for line in after if line not in n.added] == [line for line in before if line not in n.removed]
    waivers = [line for line in after if line and not line.startswith("#")]
    assert waivers == sorted(waivers)
    assert not hits("unittest/_torch/executor/test_cross_kv_cache_layout.py", parse_waives(n.after), STAGES)


def test_no_blocking_line_means_no_change():
    text = WAIVES.replace("unittest/_torch/executor SKIP (https://nvbugs/6800103)\n", "")
    n = narrow(text, STAGES, FILES, [NEW])
    assert not n.changed and n.after == text


def test_narrowing_that_would_widen_a_waiver_is_refused():
    """A file the test-db also lists on its own would become skipped in that stage too."""
    extra = parse_test_db("l0_gpu:\n- tests:\n  - unittest/_torch/executor/test_config_lookup.py\n", "l0_gpu.yml")
    with pytest.raises(Conflict, match="would change waivers of .*test_config_lookup.py"):
        narrow(WAIVES, STAGES + extra, FILES, [NEW])

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


def test_a_line_with_several_ids_keeps_the_others_and_its_hardware_prefix():
    text = WAIVES.replace("unittest/_torch/executor SKIP (https://nvbugs/6800103)",
                          "full:A10/unittest/_torch/executor unittest/other/test_x.py SKIP (https://nvbugs/6800103)")
    a10 = [s for s in STAGES if s.name == "l0_a10"]
    cpu_as_a10 = [type(s)(s.name, s.file, {"wildcards": {"gpu": ["*a10*"]}}, s.items) for s in STAGES if s.name == "l0_cpu"]
    n = narrow(text, a10 + cpu_as_a10, FILES, [NEW])
    assert "unittest/other/test_x.py SKIP (https://nvbugs/6800103)" in n.after.splitlines()
    assert "full:A10/unittest/_torch/executor/test_config_lookup.py SKIP (https://nvbugs/6800103)" in n.after.splitlines()
    assert not any(line.startswith("full:A10/unittest/_torch/executor ") for line in n.after.splitlines())


def test_make_waivers_reports_lines_levels_and_stages(miniature_template, capsys):
    from patchkit.cli import main
    code = main(["--root", str(ROOT), "waivers", "--target", "rc25", "--src", str(miniature_template)])
    out = capsys.readouterr().out
    assert code == 0
    assert (f"{NEW}: waived by line 7 at the outer level in l0_cpu: unittest/_torch/executor SKIP "
            "(https://nvbugs/6800103)") in out
    assert f"after the set's edit:\n  {NEW}: runs (no line waives it)" in out
    code = main(["--root", str(ROOT), "waivers", "--target", "main", "--src", str(miniature_template)])
    out = capsys.readouterr().out
    assert "nothing to change" in out and "waived by" not in out


def test_malformed_waives_file_stops_apply_with_nothing_written(upstream, tmp_path, capsys):
    from helpers import sh, state_of
    from patchkit.cli import main
    waives = upstream / "tests/integration/test_lists/waives.txt"
    waives.write_text(waives.read_text() + "unittest/broken.py SKIP no parentheses\n")
    sh("git", "-C", upstream, "commit", "-qam", "A malformed waiver")
    sh("git", "-C", upstream, "tag", "-f", "v1.3.0rc25")
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    before = state_of(clone)
    code = main(["--root", str(ROOT), "apply", "--target", "rc25", "--src", str(clone)])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == ("patchkit: error: tests/integration/test_lists/waives.txt:10: "
                                        "the reason must be in parentheses")
    assert state_of(clone) == before

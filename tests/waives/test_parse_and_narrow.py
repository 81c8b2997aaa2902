"""waives.txt parsing and narrowing on the miniature's own waives.txt and test-db."""
from __future__ import annotations

import pytest

from patchkit import patchset
from patchkit.errors import Conflict
from patchkit.git import Repo
from patchkit.waives.edit import compute
from patchkit.waives.match import hits
from patchkit.waives.narrow import narrow
from patchkit.waives.parse import parse_test_db, parse_waives
from helpers import render_waives as render
from helpers import ROOT

BASE = ROOT / "tests/fixtures/miniature/base/tests"
WAIVES = (BASE / "integration/test_lists/waives.txt").read_text()
STAGES = [s for f in sorted((BASE / "integration/test_lists/test-db").glob("*.yml"))
          for s in parse_test_db(f.read_text(), f.name)]
FILES = sorted("tests/" + str(p.relative_to(BASE.parent / "tests")) for p in BASE.rglob("test_*.py"))
NEW = "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"


def test_the_miniature_round_trips_byte_identical():
    assert render(parse_waives(WAIVES)) == WAIVES


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


def test_a_line_with_several_ids_is_one_ci_item_and_expands_with_its_hardware_prefix():
    """Upstream reads 'full:A10/p q SKIP' as one CI item 'p q' on A10 (the test-db lists it so)."""
    text = WAIVES.replace("unittest/_torch/executor SKIP (https://nvbugs/6800103)",
                          "full:A10/unittest/_torch/executor unittest/other/test_x.py SKIP (https://nvbugs/6800103)")
    files = FILES + ["tests/unittest/other/test_x.py"]
    a10 = [parse_test_db("l0_a10:\n- condition: {wildcards: {gpu: ['*a10*']}}\n  tests:\n"
                         "  - unittest/_torch/executor unittest/other/test_x.py\n", "l0_a10.yml")[0]]
    n = narrow(text, a10, files, [NEW])
    assert n.removed == ["full:A10/unittest/_torch/executor unittest/other/test_x.py SKIP (https://nvbugs/6800103)"]
    assert sorted(n.added) == [
        "full:A10/unittest/_torch/executor/kv_cache/test_block_sizes.py SKIP (https://nvbugs/6800103)",
        "full:A10/unittest/_torch/executor/test_config_lookup.py SKIP (https://nvbugs/6800103)",
        "full:A10/unittest/_torch/executor/test_scheduler_limits.py SKIP (https://nvbugs/6800103)",
        "full:A10/unittest/other/test_x.py SKIP (https://nvbugs/6800103)",
    ]
    # The same line does not skip the item the test-db lists as 'unittest/_torch/executor' alone.
    assert not narrow(text, STAGES, files, [NEW]).changed


def test_a_selector_line_cannot_be_expanded_into_files_and_is_refused():
    """'dir -k expr' skips part of each file; per-file lines would skip them whole."""
    text = WAIVES.replace("unittest/_torch/executor SKIP", 'unittest/_torch/executor -k "lookup or layout" SKIP')
    stages = parse_test_db('l0_cpu:\n- tests:\n  - unittest/_torch/executor -k "lookup or layout"\n', "l0_cpu.yml")
    with pytest.raises(Conflict, match="would change waivers of"):
        narrow(text, stages, FILES, [NEW])


def test_new_lines_keep_the_removed_lines_comment_and_marker():
    text = WAIVES.replace("unittest/_torch/executor SKIP (https://nvbugs/6800103)",
                          "unittest/_torch/executor XFAIL (https://nvbugs/6800103) # owner: kv team")
    n = narrow(text, STAGES, FILES, [NEW])
    assert "unittest/_torch/executor/test_config_lookup.py XFAIL (https://nvbugs/6800103) # owner: kv team" in n.added


def test_narrowing_a_crlf_file_keeps_its_line_endings():
    text = WAIVES.replace("\n", "\r\n")
    n = narrow(text, STAGES, FILES, [NEW])
    assert n.changed and "\n" not in n.after.replace("\r\n", "")
    assert n.after.replace("\r\n", "\n") == narrow(WAIVES, STAGES, FILES, [NEW]).after


def test_make_waivers_reports_lines_levels_and_stages(miniature_template, capsys):
    from patchkit.cli import main
    code = main(["--root", str(ROOT), "waivers", "--target", "rc25", "--src", str(miniature_template)])
    out = capsys.readouterr().out
    line = "unittest/_torch/executor SKIP (https://nvbugs/6800103)"
    assert code == 0
    assert f"{NEW}: waived by line {WAIVES.splitlines().index(line) + 1} at the outer level in l0_cpu: {line}" in out
    assert out.startswith("waivers rc25: tests/integration/test_lists/waives.txt\nupstream: v1.3.0rc25 ")
    assert "a tag already here: not fetched (tags do not move)\nat v1.3.0rc25 (upstream, without the set):\n" in out
    assert f"after the set:\n  {NEW}: runs (no line waives it)" in out
    # #27 item 4: the edit itself, as -/+ lines numbered as before and after it ('edit: 1 line(s)
    # skipped' said a line changed, not that one became three)
    ps = patchset.load(ROOT, "rc25")
    n = compute(Repo(miniature_template), "v1.3.0rc25", ps.waivers)
    assert n.changed and len(n.added) > 1
    edit = out.split("\nedit: ", 1)[1].splitlines()
    assert edit[0].endswith(f"; 1 line becomes {len(n.added)}:")
    after = n.after.splitlines()
    assert edit[1:] == [f"  -{WAIVES.splitlines().index(line) + 1}: {line}"] + [
        f"  +{after.index(t) + 1}: {t}" for t in n.added]
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
    lineno = len(waives.read_text().splitlines())
    assert code == 2 and err.strip() == (f"patchkit: error: tests/integration/test_lists/waives.txt:{lineno}: "
                                        'Invalid syntax for reason: " no parentheses". Did you forget to add parentheses?')
    assert state_of(clone) == before


def test_merged_lines_keep_order_endings_and_sortedness():
    """The one-pass merge: kept lines in order, new ones at their sorted places, endings kept."""
    import random
    from collections import Counter
    from patchkit.waives.narrow import _merge
    from patchkit.waives.parse import split_lines
    rng = random.Random(3)
    for _ in range(2000):
        lines = sorted(f"{rng.choice('abcdef')}{rng.randrange(50)} SKIP" for _ in range(rng.randrange(8)))
        for _ in range(rng.randrange(3)):
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(["# note", ""]))
        nl = rng.choice(["\n", "\r\n"])
        text = nl.join(lines) + (nl if rng.random() < 0.7 else "")
        kept = parse_waives(text)
        new = sorted({f"{rng.choice('abcdef')}{rng.randrange(50)}x SKIP" for _ in range(rng.randrange(5))})
        out = _merge(kept, new, nl)
        pieces = split_lines(out)
        texts = [t for t, _ in pieces]
        named = [t for t in texts if t and not t.startswith("#")]
        assert Counter(texts) == Counter([e.text for e in kept] + new), (text, new)
        assert named == sorted(named) and [t for t in texts if t not in new] == [e.text for e in kept]
        assert all(end == nl for _, end in pieces[:-1]) and (not text or out.endswith(nl) == text.endswith(nl))

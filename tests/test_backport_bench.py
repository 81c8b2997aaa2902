"""make bench's backport section (#26 item 3), small: a pull request laid on a generated
upstream is carried cold onto rc25, receiving a small part of a full clone."""
from __future__ import annotations

import pytest

from patchkit.bench import backport, generate
from helpers import ROOT

pytestmark = pytest.mark.slow  # a bench's own test (a generated upstream): make test-slow (.ci/run)

SHAPE = generate.Shape(files=300, dirs=50, commits=120, binaries=1, binary_mib=0.25)


def test_the_backport_bench_carries_the_pr_and_receives_less_than_a_full_clone(tmp_path):
    b = backport.backport_bench(ROOT, tmp_path / "bench", shape=SHAPE)
    assert b.pr_commits == 2 and b.written >= 3  # the PR's two patches, our renumbered ones, patchset.yaml
    assert 0 < b.received_bytes < b.full_bytes and b.seconds > 0
    assert "of a full clone's" in backport.render(b)


def test_the_stack_bench_builds_ten_fixes_with_backport_and_pairs_check_and_a_cold_apply(tmp_path):
    from patchkit.bench import stacked
    b = stacked.stack_bench(ROOT, tmp_path / "bench", shape=SHAPE, runs=2)
    assert (b.fixes, b.patches) == (10, 30) and b.one_patches == 2
    for pair in (b.apply, b.check):  # the stack's runs (A) against the one-fix set's (B), two pairs each
        assert len(pair.a) == len(pair.b) == 2 and min(pair.a + pair.b) > 0
    assert [f.met for f in b.figures()] == [b.apply.ratio <= 2, b.check.ratio <= 2]
    assert "a stack of 10 fixes (30 patches" in stacked.render(b) and "alternating pairs" in stacked.render(b)

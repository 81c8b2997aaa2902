"""make bench's radar section (#18), small: on a generated upstream it grows a history with
upstream's fix at a commit it knows, runs radar cold and reports it. The section once ended
in a traceback (the fixed-upstream variant became a diff) and nothing noticed until make
bench ran; here it runs in every CI run (make test-slow), with fewer files and commits."""
from __future__ import annotations

import pytest

from patchkit.bench import generate, radar
from helpers import ROOT, sh

pytestmark = pytest.mark.slow  # a bench's own test (seconds of generated history): make test-slow (.ci/run)

SHAPE = generate.Shape(files=300, dirs=50, commits=60, binaries=1, binary_mib=0.25)


def test_the_radar_bench_names_the_fix_it_laid_and_receives_less_than_a_full_clone(tmp_path):
    commits, touches = 120, 24
    b = radar.radar_bench(ROOT, tmp_path / "bench", shape=SHAPE, commits=commits, touches=touches)
    grown = tmp_path / "bench" / "radar-upstream.git"
    subject = sh("git", "-C", grown, "log", "-1", "--format=%s", b.fix_commit).stdout
    assert b.found_commit == b.fix_commit and "Radar bench change" in subject
    assert b.commits_in_range == commits and b.candidates == touches  # exactly the commits on the set's files
    assert b.probes <= b.budget
    assert 0 < b.received_bytes < b.full_bytes and b.seconds > 0 and b.cpu_seconds > 0
    text = radar.render(b)
    assert f"over {commits:,} commits ({touches} touch the set)" in text and "named the known fix commit" in text

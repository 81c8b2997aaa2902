"""make export after a refresh (#33 item 3, export's share): a changed patch carries the index
lines of the checkout it was exported from and today's Last-Update, so that git am -3 finds its
base by hand (it failed: "sha1 information is lacking ... could not build fake ancestor"); a
patch whose change is unchanged keeps its bytes, whatever blob ids it or the checkout has."""
from __future__ import annotations

import re
import subprocess

from helpers import REWORD, UTIL, copy_root, sh, upstream_moves
from patchkit import apply as apply_mod, patchset
from patchkit.git import Repo
from patchkit.pr import export as export_mod

DAY = "2026-12-09"
INDEX = re.compile(r"^index ([0-9a-f]{40})\.\.([0-9a-f]{40}) 100644$", re.M)


def test_a_refreshed_patch_gets_index_lines_and_today_the_others_keep_their_bytes(upstream, tmp_path):
    upstream_moves(upstream, REWORD)  # a context line of 0001's hunk reworded: it needs 3-way
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    root = copy_root(tmp_path)
    shipped = {p.name: p.read_bytes() for p in (root / "patches" / "main").glob("*.patch")}
    apply_mod.apply(patchset.load(root, "main"), src=clone, threeway=True)
    res = export_mod.export(patchset.load(root, "main"), Repo(clone), "overlay/main", today=DAY)
    ps = patchset.load(root, "main")
    fix, *rest = ps.patches
    assert res.changed == [fix.name, "patchset.yaml"] and res.base == sh("git", "-C", clone, "rev-parse",
                                                                           "origin/main").stdout.strip()
    [(pre, post)] = INDEX.findall(fix.diff)  # the whole blob ids of this checkout: before and after the change
    assert pre == sh("git", "-C", clone, "rev-parse", f"origin/main:{UTIL}").stdout.strip()
    assert post == sh("git", "-C", clone, "rev-parse", f"overlay/main:{UTIL}").stdout.strip()
    assert fix.trailer("Last-Update") == DAY
    assert {p.name: p.file.read_bytes() for p in rest} == {p.name: shipped[p.name] for p in rest}
    assert f"base: {res.base}" in (root / "patches/main/patchset.yaml").read_text()

    # git am -3 by hand, on the commit before upstream moved (where the patch needs a 3-way merge)
    sh("git", "-C", clone, "checkout", "-q", "-b", "by-hand", "origin/main~1")
    am = subprocess.run(["git", "-C", str(clone), "am", "-3", "-q", str(fix.file)], capture_output=True, text=True)
    assert am.returncode == 0, am.stderr
    assert "max_source_positions" in (clone / UTIL).read_text()

    # another checkout's blob ids (the real upstream's, say) in an unchanged patch: kept, no churn
    other = INDEX.sub(lambda m: f"index {'1' * 40}..{'2' * 40} 100644", fix.file.read_text())
    fix.file.write_text(other)
    again = export_mod.export(patchset.load(root, "main"), Repo(clone), "overlay/main", today="2026-12-10")
    assert again.up_to_date and fix.file.read_text() == other

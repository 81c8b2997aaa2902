"""make export files each commit by its Origin trailer, and every command refuses a patch filed
under another fix than its Origin names (#31 item 2: reordering overlay/rc25's commits made
export hand 19514's patches to 19450 and upstream's squash commit to our fix; make check
passed, and make pr FIXID=19514 would have sent upstream's own commit as our PR)."""
from __future__ import annotations

import re
import shutil

import pytest

from helpers import sh
from patchkit import patchset
from patchkit.cli import main
from patchkit.errors import BadInput
from patchkit.git import Repo
from patchkit.pr import export as export_mod
from stacks import STACK_PR


def _rebuild(src, order):
    """overlay/rc25 made again with its commits in this order (indexes of base..branch without
    the waiver commit), as git rebase -i would."""
    git = lambda *a: sh("git", "-C", src, *a).stdout.strip()  # noqa: E731
    commits = git("rev-list", "--reverse", "v1.3.0rc25..HEAD").split()[:-1]  # the waiver commit last
    git("checkout", "-q", "--detach", "v1.3.0rc25")
    for i in order:
        git("cherry-pick", commits[i])
    git("checkout", "-q", "-B", "overlay/rc25")


def _owners(ps):
    return {f.id: [p.subject for p in f.patches] for f in ps.fixes}


def test_reordered_commits_keep_their_fixes_and_the_stack_takes_the_branch_order(stacked, capsys):
    root, src = stacked
    before = patchset.load(root, "rc25")
    assert [f.id for f in before.fixes] == [f"{STACK_PR}", "19514"]
    _rebuild(src, [1, 2, 0])  # our two commits first, then the backport's squash commit
    res = export_mod.export(patchset.load(root, "rc25", filing=False), Repo(src), "overlay/rc25")
    after = patchset.load(root, "rc25")
    assert [f.id for f in after.fixes] == ["19514", f"{STACK_PR}"] == res.order
    assert _owners(after) == _owners(before)
    for fix in after.fixes:  # each patch's Origin names its own fix
        assert all(p.trailer("Origin").endswith(fix.origin if not fix.ours else fix.bug)
                   or p.trailer("Origin").endswith(fix.status.applied_upstream or "-") for p in fix.patches)
    assert [p.name[:4] for p in after.patches] == ["0001", "0002", "0003"]
    code = main(["--root", str(root), "check", "--src", str(src), "--target", "rc25"])
    assert code == 0, capsys.readouterr()


@pytest.mark.slow  # make test keeps the reorder above
def test_a_fix_s_commits_apart_are_refused_and_nothing_is_written(stacked):
    root, src = stacked
    files = {p.name: p.read_bytes() for p in (root / "patches" / "rc25").iterdir()}
    _rebuild(src, [1, 0, 2])  # the backport's squash commit between our fix and its test
    with pytest.raises(BadInput, match=rf"belongs to fix 19514, but comes after fix {STACK_PR}'s commits; keep each "
                                       r"fix's commits together"):
        export_mod.export(patchset.load(root, "rc25"), Repo(src), "overlay/rc25")
    assert {p.name: p.read_bytes() for p in (root / "patches" / "rc25").iterdir()} == files


def test_check_refuses_a_patch_filed_under_another_fix_naming_both(stack_template, tmp_path, capsys):
    """What the old export by position wrote: the stack's series lists swapped between its fixes."""
    root = tmp_path / "root"
    shutil.copytree(stack_template, root)
    meta = root / "patches" / "rc25" / "patchset.yaml"
    ps = patchset.load(root, "rc25")
    back, ours = (f.patches[0].name for f in ps.fixes)
    text = meta.read_text().replace(back, "@BACK@").replace(ours, back).replace("@BACK@", ours)
    meta.write_text(text)
    code = main(["--root", str(root), "check", "--src", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert re.search(rf"patches/rc25/{re.escape(ours)} is filed under fix {STACK_PR} \(backport\), but its Origin "
                     rf"\('vendor, https://github.com/NVIDIA/TensorRT-LLM/issues/19514'\) names fix 19514 \(ours\)", err)
    assert "(and 1 more)" in err
    # every command that reads the set refuses it alike
    code = main(["--root", str(root), "targets"])
    assert code == 2 and f"is filed under fix {STACK_PR}" in capsys.readouterr().err

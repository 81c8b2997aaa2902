"""The commands on a stack (#26 items 2, 4, 6): provenance in every patch file, check grouped by
fix and saying which fix needs a wheel build, export's round trip and its fixes' series, and the
container's refusal of a change no image can carry by laying files over the package."""
from __future__ import annotations

import re
import subprocess

import pytest

from helpers import ROOT, copy_project, sh
from patchkit import apply as apply_mod, patchset, provenance
from patchkit.cli import main
from patchkit.errors import BadInput
from patchkit.git import Repo
from patchkit.pr import export as export_mod
from stacks import PULL, stacked

CPP = "cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp"


def test_every_patch_of_ours_carries_its_origin_and_status():
    for target in patchset.targets(ROOT):
        ps = patchset.load(ROOT, target)
        assert provenance.missing(ps) == []
        for p in ps.patches:
            assert p.provenance["Origin"] == f"vendor, {ps.bug}" and p.provenance["Forwarded"] == "no", p.name


def test_check_refuses_a_patch_without_provenance_naming_it(tmp_path, capsys):
    root = copy_project(tmp_path / "project", "overlay")
    patch = next((root / "patches" / "main").glob("0002-*.patch"))
    text = patch.read_text()
    patch.write_text(re.sub(r"^(Origin|Forwarded): .*\n", "", text, flags=re.M))
    code = main(["--root", str(root), "check", "--src", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert (f"patches/main/{patch.name} (fix 19514) has no Origin and no status (Forwarded or Applied-Upstream) "
            "trailer (DEP-3); its fix would say: Origin: vendor, https://github.com/NVIDIA/TensorRT-LLM/issues/19514; "
            "Forwarded: no") in err
    assert not (tmp_path / "nowhere").exists()  # refused before anything was opened


MESSAGES = [
    "Subject\n\nBody.\n\nFixes #19514\n\nOrigin: vendor, https://x/issues/1\nBug: https://x/issues/1\nForwarded: no\n"
    "Last-Update: 2026-12-01\n",
    "Subject\n\nBody.\n\nOrigin: backport, https://x/pull/2\nForwarded: not-needed\nSigned-off-by: A <a@b.c>\n",
    "Subject\n\nBody.\n\nOrigin: upstream,\n  https://x/commit/3\nCo-authored-by: B <b@c.d>\n",
    "Subject\n\nBody.\n\nFixes #19514\n",
    "Subject\n",
]


@pytest.mark.parametrize("message", MESSAGES)
def test_a_pr_message_drops_the_dep3_trailers_as_git_reads_them(message):
    """What is left is the message git would give after removing those trailers (interpret-
    trailers --parse names them); other trailers and the text above stay byte for byte."""
    out = provenance.without(message)

    def parse(m):
        return subprocess.run(["git", "-c", "trailer.separators=:", "interpret-trailers", "--parse"], input=m,
                              capture_output=True, text=True, check=True).stdout.splitlines()
    assert parse(out) == [t for t in parse(message) if t.split(":")[0] not in ("Origin", "Bug", "Forwarded",
                                                                               "Last-Update", "Applied-Upstream")]
    assert out.startswith(message.split("\n\nOrigin")[0]) and "Origin" not in out


def _apply(root, target, src):
    return apply_mod.apply(patchset.load(root, target), src=src)


@pytest.mark.slow  # two applies and exports: make test keeps test_export_and_dco's round trip (trailers and all)
def test_export_round_trips_a_stack_byte_for_byte_with_its_fixes_series(miniature_template, upstream, tmp_path):
    """Exporting a stack numbers its patches over the whole stack and keeps each fix's series:
    the files and patchset.yaml come back byte-identical from a branch made from them."""
    root = copy_project(tmp_path / "project", "overlay")
    stacked(root, "rc25", miniature_template, tmp_path)
    first = tmp_path / "first"
    sh("git", "clone", "-q", upstream.as_uri(), first)
    _apply(root, "rc25", first)
    export_mod.export(patchset.load(root, "rc25"), Repo(first), "overlay/rc25")
    ps = patchset.load(root, "rc25")
    assert [(f.id, [p.name[:10] for p in f.patches]) for f in ps.fixes] == [
        ("19302", ["0001-18609"]), ("19514", ["0002-19514", "0003-19514"])]
    assert [p.trailer("Origin") for p in ps.patches] == [f"backport, {PULL.format(19302)}"] + [
        "vendor, https://github.com/NVIDIA/TensorRT-LLM/issues/19514"] * 2
    files = {p.name: p.read_bytes() for p in (root / "patches" / "rc25").iterdir()}
    again = tmp_path / "again"
    sh("git", "clone", "-q", upstream.as_uri(), again)
    _apply(root, "rc25", again)
    res = export_mod.export(patchset.load(root, "rc25"), Repo(again), "overlay/rc25")
    assert res.up_to_date and {p.name: p.read_bytes() for p in (root / "patches" / "rc25").iterdir()} == files


@pytest.mark.slow  # make test-slow (.ci/run): export's other mapping
def test_where_counts_changed_each_commit_goes_to_the_fix_its_origin_names(miniature_template, upstream, tmp_path):
    root = copy_project(tmp_path / "project", "overlay")
    stacked(root, "rc25", miniature_template, tmp_path)
    src = tmp_path / "src"
    sh("git", "clone", "-q", upstream.as_uri(), src)
    _apply(root, "rc25", src)
    # A review fixup of the backport's test, after the other fixes: counts change, Origin says whose.
    assert "waiver" in sh("git", "-C", src, "log", "-1", "--format=%s").stdout  # recomputed at apply: not exported
    sh("git", "-C", src, "reset", "-q", "--hard", "HEAD~1")
    with open(src / "tests/unittest/_torch/executor/test_reuse_policy.py", "a") as fh:
        fh.write("# a review change\n")
    sh("git", "-C", src, "commit", "-qam", "[#18609][test] Fixup\n\nOrigin: backport, " + PULL.format(19302))
    with pytest.raises(BadInput, match="belongs to fix 19302, but comes after fix 19514's commits"):
        export_mod.export(patchset.load(root, "rc25"), Repo(src), "overlay/rc25")
    sh("git", "-C", src, "commit", "-q", "--amend", "-m", "[#19514][test] Fixup")
    with pytest.raises(BadInput, match=r"1 commit\(s\) belong to no fix of the rc25 stack .*'\[#19514\]\[test\] Fixup'; "
                       r"export never folds .* its subject names fix 19514, whose patches say Origin: vendor, "
                       r"https://github.com/NVIDIA/TensorRT-LLM/issues/19514"):
        export_mod.export(patchset.load(root, "rc25"), Repo(src), "overlay/rc25")
    sh("git", "-C", src, "commit", "-q", "--amend", "-m",
       "[#19514][test] Fixup\n\nOrigin: vendor, https://github.com/NVIDIA/TensorRT-LLM/issues/19514\nForwarded: no")
    export_mod.export(patchset.load(root, "rc25"), Repo(src), "overlay/rc25")
    ps = patchset.load(root, "rc25")
    assert [len(f.patches) for f in ps.fixes] == [1, 3] and ps.fixes[1].patches[-1].name.startswith("0004-19514-test-Fixup")


def test_check_groups_patches_by_fix_and_says_which_needs_a_wheel_build(miniature_template, upstream, tmp_path, capsys):
    root = copy_project(tmp_path / "project", "overlay")
    stacked(root, "rc25", miniature_template, tmp_path, pulls=("19450",))
    code = main(["--root", str(root), "check", "--src", str(upstream), "--target", "rc25"])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = re.findall(r"^  rc25  (\S+) \((\w+)\)\s+(\S+\.patch)\s+applies cleanly$", out, re.M)
    ps = patchset.load(root, "rc25")
    assert rows == [(f.id, f.kind, p.name) for f in ps.fixes for p in f.patches]
    cpp_patch = ps.fix("19450").patches[0].name
    [line] = [ln for ln in out.splitlines() if "needs a wheel build" in ln]
    assert line == (f"rc25: fix 19450 needs a wheel build: {cpp_patch} changes {CPP} (compiled into the wheel: make "
                    "wheel TRTLLM=rc25 builds it, make container carries it)")
    # make targets names it too (#32 item 4)
    assert main(["--root", str(root), "targets"]) == 0
    said = capsys.readouterr().out
    assert f"      needs a wheel build: it changes {CPP} (make wheel, then make container)" in said.splitlines()
    assert said.count("needs a wheel build") == 1  # 19450's alone: our fix changes Python


def test_container_of_a_fix_that_needs_a_wheel_build_reads_the_base_first_and_renders_nothing_without_it(
        miniature_template, tmp_path, capsys):
    """#32 item 2: a stack that needs a wheel build is carried as its wheel laid over what the
    base has installed, so the base is read first: one that cannot be pulled stops it there
    (exit 4), before a wheel is built or a context rendered (the image test builds it whole)."""
    root = copy_project(tmp_path / "project", "overlay")
    stacked(root, "rc25", miniature_template, tmp_path, pulls=("19302",))
    ctx = tmp_path / "ctx"
    code = main(["--root", str(root), "container", "--target", "rc25", "--src", str(miniature_template),
                 "--context", str(ctx), "--builder", "buildah", "--base", "localhost/nothing-here:1",
                 "--wheel-out", str(tmp_path / "wheel"), "--wheel-cache", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert code == 4 and err.count("\n") == 1 and "cannot pull localhost/nothing-here:1 with buildah" in err, err
    assert not ctx.exists() and not (tmp_path / "wheel").exists()  # nothing rendered, no wheel built
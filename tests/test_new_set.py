"""make new-set (#33 item 6): a set for a new release, started from an existing one. On the
miniature's rc26 variant (a release branch from v1.3.0rc25 that took PR 19450 as one squash
commit, tagged v1.3.0rc26), new-set FROM=rc25 of a set carrying 19450 under 19514 leaves 19450
out, naming the commit as radar finds it (recorded as Applied-Upstream under retired:), and
carries 19514; all or nothing."""
from __future__ import annotations

import re
import shutil

import pytest

from helpers import ROOT, copy_project, sh, state_of, tiered
from patchkit import miniature, patchset
from patchkit.backport import command as backport
from patchkit.cli import main

GITHUB = "https://github.com/NVIDIA/TensorRT-LLM"


PULL = "19450"  # the pull request the miniature's release branch took (manifest.yaml, variant rc26)


@pytest.fixture
def rc26(tmp_path):
    """(a copy of the project whose rc25 carries 19450 under 19514, by make backport's own code;
    the miniature with its rc26 release branch)."""
    root = copy_project(tmp_path / "root")
    up = tmp_path / "upstream"
    miniature.build(ROOT, up, "rc26")
    backport.backport(patchset.load(root, "rc25"), root=root, src=tmp_path / "rc25", url=up.as_uri(), pr=PULL,
                      today="2026-12-02")
    return root, up


def test_a_set_for_a_new_tag_leaves_out_the_fix_it_has_and_carries_ours(rc26, capsys):
    root, up = rc26
    rc25 = {p.name: p.read_bytes() for p in (root / "patches" / "rc25").iterdir()}
    code = main(["--root", str(root), "new-set", "--from", "rc25", "--ref", "v1.3.0rc26", "--url", str(up)])
    out = capsys.readouterr().out
    assert code == 0, out
    squash = sh("git", "-C", up, "rev-parse", "v1.3.0rc26").stdout.strip()
    assert f"rc26: a new set on v1.3.0rc26 ({squash[:12]}) from rc25: carries 19514; leaves out {PULL}" in out
    assert f"  {PULL} is in v1.3.0rc26 already: {GITHUB}/commit/{squash}" in out
    ps = patchset.load(root, "rc26")
    assert (ps.upstream.ref, ps.upstream.base, ps.branch) == ("v1.3.0rc26", "", "overlay/rc26")
    assert ps.container.base.endswith("release:1.3.0rc26") and ps.waivers is not None
    assert [f.id for f in ps.fixes] == ["19514"] and [p.name[:4] for p in ps.patches] == ["0001", "0002"]
    ours = patchset.load(root, "rc25").fix("19514")
    unnumbered = lambda p: re.sub(rb"\[PATCH[^\]]*\]", b"", p.file.read_bytes(), count=1)  # noqa: E731
    assert [unnumbered(p) for p in ps.patches] == [unnumbered(p) for p in ours.patches]  # carried as they were
    meta = (root / "patches" / "rc26" / "patchset.yaml").read_text()
    assert f"retired:\n  - id: '{PULL}'" in meta and f"applied_upstream: {GITHUB}/commit/{squash}" in meta
    assert {p.name: p.read_bytes() for p in (root / "patches" / "rc25").iterdir()} == rc25  # FROM as it was
    src = root / "build" / "trtllm-rc26"
    assert main(["--root", str(root), "check", "--src", str(src), "--target", "rc26"]) == 0


@pytest.mark.parametrize("argv, code, said", tiered(
    (["--from", "rc25", "--ref", "v1.3.0rc26", "--name", "rc25"], 2, "patches/rc25 exists already"),
    (["--from", "rc25", "--ref", "v9.9.9", "--name", "x"], 4, "v9.9.9"),
    (["--from", "nope", "--ref", "v1.3.0rc26"], 4, "unknown patch set 'nope'"),
    (["--from", "rc25", "--ref", "v1.3.0rc26", "--name", "a b"], 2, "is not a set name"),
))
def test_bad_requests_write_nothing(rc26, argv, code, said, capsys):
    root, up = rc26
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    got = main(["--root", str(root), "new-set", *argv, "--url", str(up)])
    err = capsys.readouterr().err
    assert got == code and said in err and err.count("\n") == 1, err
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before


@pytest.mark.slow  # make test keeps the acceptance above
def test_a_fix_that_conflicts_on_the_new_ref_is_named_and_nothing_is_written(rc26, tmp_path, capsys):
    """Upstream's release branch rewrote a line our fix removes: neither a plain nor a 3-way
    apply carries it; new-set names the fix, the patch, the file and the hunk."""
    root, up = rc26
    work = tmp_path / "release"
    sh("git", "clone", "-q", "-b", "release/1.3.0rc26", up.as_uri(), work)
    util = work / "tensorrt_llm/_torch/pyexecutor/_util.py"
    old = "        max_seq_len = fallback_max_seq_len or self._max_seq_len\n"
    assert old in util.read_text()
    util.write_text(util.read_text().replace(old, "        max_seq_len = self._max_seq_len if fallback_max_seq_len "
                                                  "is None else fallback_max_seq_len\n"))
    sh("git", "-C", work, "commit", "-qam", "Treat a zero fallback as a fallback")
    sh("git", "-C", work, "tag", "v1.3.0rc27")
    sh("git", "-C", work, "push", "-q", "origin", "HEAD:release/1.3.0rc26", "v1.3.0rc27")
    checkout = tmp_path / "checkout"
    sh("git", "clone", "-q", up.as_uri(), checkout)
    before = state_of(checkout)
    code = main(["--root", str(root), "new-set", "--from", "rc25", "--ref", "v1.3.0rc27", "--src", str(checkout)])
    out, err = capsys.readouterr()
    assert code == 3 and err.count("\n") == 1, err
    assert "fix 19514: 0002-19514-fix-Size-the-cross-KV-pool-from-the-encoder-s-.patch: " \
           "tensorrt_llm/_torch/pyexecutor/_util.py" in err and "nothing written" in err
    assert not (root / "patches" / "rc27").exists() and not (root / "waivers" / "rc27.yaml").exists()
    assert state_of(checkout) == before

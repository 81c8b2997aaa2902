"""Cold start (#12): a cold apply from a URL fetches one commit's worth, history only on demand.

The upstream here is generated as make bench generates its own (bench.generate), smaller, but with
real history: hundreds of commits over a tree of directories, with the miniature's commits
laid in. What was fetched is read from the packs git received (everything we write ourselves
is a loose object), so the tests count objects a user's disk would hold.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from patchkit import apply as apply_mod, patchset, series
from patchkit.bench import generate
from helpers import ROOT, build_once, copy_root, sh

UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"
SHAPE = generate.Shape(files=400, dirs=60, commits=300, binaries=1, binary_mib=0.25)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return build_once(tmp_path_factory, "gen", lambda dest: generate.generate(ROOT, dest, SHAPE), "upstream.git")


@pytest.fixture
def upstream_copy(generated, tmp_path):
    dest = tmp_path / "upstream.git"
    shutil.copytree(generated, dest)
    return dest


def git(repo, *args) -> str:
    return sh("git", "-C", repo, *args).stdout.strip()


def received(clone: Path) -> dict[str, str]:
    """Every object in the packs the clone received (sha -> type); loose objects are ours."""
    shas = []
    for idx in (clone / ".git" / "objects" / "pack").glob("*.idx"):
        data = sh("git", "-C", clone, "verify-pack", "-v", idx).stdout
        shas += [line.split()[0] for line in data.splitlines() if len(line.split()) >= 5 and len(line.split()[0]) == 40]
    out = sh("git", "-C", clone, "cat-file", "--batch-check=%(objectname) %(objecttype)", input="\n".join(shas) + "\n").stdout
    return dict(line.split() for line in out.splitlines())


def trees_of(repo: Path, rev: str) -> set[str]:
    out = git(repo, "ls-tree", "-r", "-t", rev)
    return {git(repo, "rev-parse", f"{rev}^{{tree}}")} | {line.split()[2] for line in out.splitlines() if line.split()[1] == "tree"}


def blobs_at(repo: Path, rev: str, paths) -> set[str]:
    out = git(repo, "ls-tree", "-r", rev, "--", *paths)
    return {line.split()[2] for line in out.splitlines()}


def of_type(objs: dict[str, str], typ: str) -> set[str]:
    return {sha for sha, t in objs.items() if t == typ}


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps test_apply's partial clone fetching only the touched paths
def test_cold_apply_fetches_one_commits_trees_and_only_the_sets_blobs(generated, tmp_path):
    ps = patchset.load(ROOT, "main")
    src = tmp_path / "trtllm"
    res = apply_mod.apply(ps, src=src, url=generated.as_uri())
    assert [o.status for o in res.outcomes] == [series.APPLIED] * len(ps.patches)
    tip = git(generated, "rev-parse", "main")
    assert res.base == tip

    got = received(src)
    # The upstream has history that a clone with history would have brought.
    all_commits = int(git(generated, "rev-list", "--count", "main"))
    historic_trees = {line.split()[0] for line in git(generated, "rev-list", "--objects", "--filter=blob:none", "main").splitlines()} \
        - set(git(generated, "rev-list", "main").split())
    assert all_commits > SHAPE.commits and len(historic_trees) > 3 * len(trees_of(generated, tip))

    assert of_type(got, "commit") == {tip}  # one commit, no history
    assert of_type(got, "tree") == trees_of(generated, tip)  # its trees: no historic tree
    wanted = blobs_at(generated, tip, ps.sparse_paths)
    assert of_type(got, "blob") <= wanted and of_type(got, "blob")  # only the set's blobs
    assert git(src, "rev-parse", "--is-shallow-repository") == "true"
    total_blobs = len(git(generated, "ls-tree", "-r", tip).splitlines())
    assert len(of_type(got, "blob")) < total_blobs / 20


@pytest.mark.slow  # the count's own check: make test-slow (.ci/run)
def test_the_old_clone_with_history_is_what_the_count_would_catch(generated, tmp_path):
    """The measure above can fail: a blobless clone with the ref's history brings every commit."""
    from patchkit.git import partial_clone
    ps = patchset.load(ROOT, "main")
    partial_clone(generated.as_uri(), tmp_path / "old", "main", ps.sparse_paths, depth=None)
    got = received(tmp_path / "old")
    assert len(of_type(got, "commit")) == int(git(generated, "rev-list", "--count", "main"))


def _drift(up: Path) -> tuple[str, str]:
    """Upstream main edits a context line of the fix's hunk; returns (old tip, new tip)."""
    old = git(up, "rev-parse", "main")
    text = sh("git", "-C", up, "show", f"main:{UTIL}").stdout
    line = "            head_dim = encoder_hidden_size // encoder_num_heads\n"
    assert line in text
    blob = sh("git", "-C", up, "hash-object", "-w", "--stdin",
              input=text.replace(line, line.replace("encoder_num_heads", "max(encoder_num_heads, 1)"))).stdout.strip()
    index = up / "drift-index"
    env = dict(os.environ, GIT_INDEX_FILE=str(index))
    import subprocess
    subprocess.run(["git", "-C", up, "read-tree", "main"], env=env, check=True)
    subprocess.run(["git", "-C", up, "update-index", "--cacheinfo", f"100644,{blob},{UTIL}"], env=env, check=True)
    tree = subprocess.run(["git", "-C", up, "write-tree"], env=env, check=True, capture_output=True, text=True).stdout.strip()
    index.unlink()
    new = sh("git", "-C", up, "commit-tree", tree, "-p", old, "-m", "Guard the head size division").stdout.strip()
    sh("git", "-C", up, "update-ref", "refs/heads/main", new, old)
    return old, new


def _root_with_base(tmp_path: Path, target: str, base: str) -> Path:
    root = copy_root(tmp_path)
    f = root / "patches" / target / "patchset.yaml"
    meta = yaml.safe_load(f.read_text())
    meta["upstream"]["base"] = base
    f.write_text(yaml.safe_dump(meta, sort_keys=False))
    return root


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_threeway_fetches_the_recorded_base_as_one_commit(upstream_copy, tmp_path):
    """THREEWAY needs the drifted file's preimage: the set's recorded base, at depth 1."""
    old, new = _drift(upstream_copy)
    ps = patchset.load(_root_with_base(tmp_path, "main", old), "main")
    src = tmp_path / "trtllm"
    res = apply_mod.apply(ps, src=src, url=upstream_copy.as_uri(), threeway=True)
    assert [o.status for o in res.outcomes] == [series.THREEWAY] + [series.APPLIED] * (len(ps.patches) - 1)
    text = (src / UTIL).read_text()
    assert "max(encoder_num_heads, 1)" in text and '"max_source_positions"' in text
    got = received(src)
    assert of_type(got, "commit") == {new, old}  # the tip and the base: not the history between
    assert of_type(got, "tree") <= trees_of(upstream_copy, new) | trees_of(upstream_copy, old)


@pytest.mark.slow  # make test-slow (.ci/run); make test keeps the recorded-base case
def test_threeway_without_a_reachable_base_deepens_only_as_far_as_needed(upstream_copy, tmp_path):
    old, new = _drift(upstream_copy)
    ps = patchset.load(ROOT, "main")  # its recorded base is a real upstream commit: not in this upstream
    assert ps.upstream.base and sh("git", "-C", upstream_copy, "cat-file", "-e", ps.upstream.base, check=False).returncode
    src = tmp_path / "trtllm"
    res = apply_mod.apply(ps, src=src, url=upstream_copy.as_uri(), threeway=True)
    assert [o.status for o in res.outcomes] == [series.THREEWAY] + [series.APPLIED] * (len(ps.patches) - 1)
    commits = of_type(received(src), "commit")
    assert old in commits and new in commits
    assert len(commits) < int(git(upstream_copy, "rev-list", "--count", "main")) / 4


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_later_apply_on_the_same_clone_fetches_only_its_own_ref(generated, tmp_path):
    src = tmp_path / "trtllm"
    apply_mod.apply(patchset.load(ROOT, "main"), src=src, url=generated.as_uri())
    before = received(src)
    rc25 = patchset.load(ROOT, "rc25")
    res = apply_mod.apply(rc25, src=src)
    assert not res.cloned and res.base_ref == "refs/tags/v1.3.0rc25"
    assert [o.status for o in res.outcomes] == [series.APPLIED] * len(rc25.patches)
    new = {sha: t for sha, t in received(src).items() if sha not in before}
    assert of_type(new, "commit") == {git(generated, "rev-parse", "v1.3.0rc25^{commit}")}


@pytest.mark.slow  # a bench's own test (a generated upstream of 200 commits): make test-slow (.ci/run)
def test_bench_reports_the_cold_apply_at_the_limit_and_the_old_clone_above_it(tmp_path):
    """make bench's own numbers: the clone apply makes now receives exactly the limit's objects
    (one commit, its trees, the set's blobs), the old one history, the full clone everything."""
    from patchkit.bench import clone as cold, report
    shape = generate.Shape(files=300, dirs=50, commits=200, binaries=1, binary_mib=0.25)
    b = cold.clone_bench(ROOT, tmp_path / "bench", shape, targets=("main",))
    now, before, full = (b.run("main", m) for m in (cold.NOW, cold.BEFORE, cold.FULL))
    limit = b.limits[0]
    assert now.objects == limit.objects
    assert now.received_bytes < limit.received_bytes * 1.05
    assert before.objects > 10 * now.objects and full.objects > before.objects
    assert b.ratio("main") < b.ratio("main", cold.BEFORE) < 1
    text = report.clone_bench(b)
    assert "limit: 1 commit, its trees, the set's blobs" in text and "steps of the cold apply now: cloning main" in text


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_delta_on_a_cold_clone_reads_only_the_sets_blobs(generated, tmp_path):
    """git archive in a partial clone fetches every blob of the tree, whatever the pathspec:
    the delta's trees must not (they are written from the set's blobs alone)."""
    from patchkit.delta import command as delta_cmd
    from patchkit.git import Repo
    ps = patchset.load(ROOT, "rc25")
    src = tmp_path / "trtllm"
    apply_mod.apply(ps, src=src, url=generated.as_uri())
    res = delta_cmd.delta(ps, repo=Repo(src), mode="source", report=tmp_path / "delta.json")
    assert res.ok, [m for f in res.fixes for m in f.mismatches + f.invalid]
    tag = git(generated, "rev-parse", "v1.3.0rc25^{commit}")
    got = received(src)
    assert of_type(got, "blob") <= blobs_at(generated, tag, ps.sparse_paths)
    assert of_type(got, "commit") == {tag}


@pytest.mark.slow  # a later apply on the same clone: make test-slow (.ci/run)
def test_a_later_set_with_other_paths_widens_the_clone_it_reuses(upstream, tmp_path):
    """The second set needs a file the first did not: it appears, fetched alone, no re-clone."""
    root = copy_root(tmp_path)
    f = root / "patches" / "rc25" / "patchset.yaml"
    meta = yaml.safe_load(f.read_text())
    meta["extra_paths"] = ["README.md"]
    f.write_text(yaml.safe_dump(meta, sort_keys=False))
    src = tmp_path / "trtllm"
    apply_mod.apply(patchset.load(root, "main"), src=src, url=upstream.as_uri())
    assert not (src / "README.md").exists()
    res = apply_mod.apply(patchset.load(root, "rc25"), src=src)
    assert not res.cloned and (src / "README.md").is_file()
    assert git(src, "rev-parse", "--abbrev-ref", "HEAD") == "overlay/rc25"

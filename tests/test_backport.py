"""make backport (#26 item 3): an upstream pull request or commit becomes a fix of kind
backport in patches/<target>/, on the miniature, whose upstream serves refs/pull/19450/head
(a C++ guard alone, open), refs/pull/19302/head (C++, Python and tests, squash-merged on main)
and refs/pull/20918/head (upstream's own form of our fix, open)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from helpers import ROOT, copy_root, sh, state_of, tiered
from patchkit import apply as apply_mod, patchset, stack
from patchkit.backport import command
from patchkit.delta.run import collects
from patchkit.errors import BadInput, Conflict, NotFound
from patchkit.git import Repo
from patchkit.model import BACKPORT

GITHUB = "https://github.com/NVIDIA/TensorRT-LLM"
DAY = "2026-12-02"
CPP = "cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp"
CPP_TEST = "cpp/tests/unit_tests/batch_manager/capacitySchedulerTest.cpp"
PY_TEST = "tests/unittest/_torch/executor/test_reuse_policy.py"


def files(root: Path, target: str) -> dict[str, bytes]:
    folder = root / "patches" / target
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def backport(root, target, src, upstream=None, **kw):
    return command.backport(patchset.load(root, target), root=root, src=src,
                            url=upstream.as_uri() if upstream else None, today=DAY, **kw)


def git(repo, *args) -> str:
    return sh("git", "-C", repo, *args).stdout.strip()


def test_a_merged_pr_is_its_squash_commit_before_our_fix_measured_and_fetched_alone(tmp_path, upstream):
    """Cold (TRTLLM_SRC missing): a one-commit clone of rc25, the PR's commits and the
    default branch's since the merge base, commits only; trees and blobs of what it touches."""
    root, src = copy_root(tmp_path), tmp_path / "trtllm-rc25"
    res = backport(root, "rc25", src, upstream, pr="19302")
    squash = git(upstream, "log", "-1", "--format=%H", "--grep=(#19302)", "main")
    assert res.kind == "merged" and res.commits == [squash] and not res.already
    said = command.describe(res).splitlines()
    assert said[0] == (f"rc25: 19302 ({GITHUB}/pull/19302, merged as {squash[:12]}): a new backport, before 19514, "
                       f"on v1.3.0rc25 ({git(upstream, 'rev-parse', 'v1.3.0rc25')[:12]})")
    assert f"patches/rc25: {len(res.written)} written, 2 removed" in said
    ps = patchset.load(root, "rc25")
    assert [(f.id, f.kind) for f in ps.fixes] == [("19302", BACKPORT), ("19514", "ours")]
    [patch] = ps.fix("19302").patches
    assert patch.name.startswith("0001-18609-fix-") and ps.fix("19514").patches[0].name.startswith("0002-19514-")
    assert patch.provenance == {"Origin": f"upstream, {GITHUB}/commit/{squash}", "Bug": f"{GITHUB}/issues/18609",
                                "Forwarded": "not-needed", "Applied-Upstream": f"{GITHUB}/commit/{squash}",
                                "Last-Update": DAY}
    fix = ps.fix("19302")
    assert fix.origin == f"{GITHUB}/pull/19302" and fix.upstream_base == git(upstream, "rev-parse", f"{squash}~1")
    cpp, test = fix.tests.regression
    assert (cpp, test) == (CPP_TEST, PY_TEST)
    # measured: the squash commit mixes code and tests; without it (its test part only) a case
    # fails, with the stack every case passes; the cases that call the compiled library are
    # skipped in source mode (no library is built there), the C++ test is not run here
    got = {k: {o: n for o, n in v.items() if n} for k, v in fix.expected["source"][test].items() if k != "not_run"}
    assert got == res.expected[test] and fix.expected["source"][cpp] == {"not_run": True}
    assert got == {"unpatched": {"failed": 1, "passed": 1, "skipped": 3}, "patched": {"passed": 2, "skipped": 3}}
    # the whole stack applies on the ref (make apply), our fix's files untouched but renumbered
    applied = apply_mod.apply(ps, src=src)
    assert len(applied.outcomes) == 3 and "canReuseCrossBlocks" in (src / CPP).read_text()
    # fetched alone: no commit of main older than the merge base, no blob outside what the
    # set and the change touch
    repo = Repo(src)
    present = sh("git", "-C", src, "cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(objectname)").stdout
    commits = {line.split()[1] for line in present.splitlines() if line.startswith("commit ")}
    upstream_commits = set(git(upstream, "rev-list", "--all").split())
    pr_own = git(upstream, "rev-list", f"{squash}..refs/pull/19302/head").split()
    assert commits & upstream_commits == {git(upstream, "rev-parse", r) for r in ("v1.3.0rc25", f"{squash}~1", squash)} | set(pr_own)
    wanted = set(ps.sparse_paths) | set(ps.touched_paths)
    blobs = {line.split()[1] for line in present.splitlines() if line.startswith("blob ")}
    named = {}  # blob id -> a path it is at, in the commits the run may read
    for rev in (squash, "v1.3.0rc25", f"{squash}~1"):
        for line in sh("git", "-C", upstream, "ls-tree", "-r", rev).stdout.splitlines():
            meta, path = line.split("\t", 1)
            named[meta.split()[2]] = path
    assert {p for b in blobs if (p := named.get(b)) and not any(p == w or p.startswith(w + "/") for w in wanted)} == set()
    repo.close()


def test_a_pr_already_in_the_ref_writes_nothing(tmp_path, upstream, checkout):
    root = copy_root(tmp_path)
    before = files(root, "main"), state_of(checkout)
    res = backport(root, "main", checkout, pr="19302")
    assert res.already == f"at {res.commits[0][:12]}" and not res.changed
    assert command.describe(res).endswith(f"is already in main ({res.commits[0][:12]}) at {res.commits[0][:12]}; "
                                          "nothing written")
    assert (files(root, "main"), state_of(checkout)) == before


def test_a_pr_that_conflicts_with_our_fix_writes_nothing_and_names_the_hunk(tmp_path, checkout):
    root = copy_root(tmp_path)
    before = files(root, "main"), state_of(checkout)
    with pytest.raises(Conflict) as exc:
        backport(root, "main", checkout, pr="20918")
    said = exc.value.message
    assert "fix 19514: 0001-19514-fix-" in said and "_util.py hunk #1 @@ -1941" in said and "nothing written" in said
    assert exc.value.code == 3 and "expected (-) beside found" in exc.value.details
    assert (files(root, "main"), state_of(checkout)) == before


@pytest.mark.slow
def test_an_open_pr_of_cpp_alone_is_carried_with_nothing_to_measure(tmp_path, checkout):
    root = copy_root(tmp_path)
    res = backport(root, "rc25", checkout, pr="19450")
    ps = patchset.load(root, "rc25")
    fix = ps.fix("19450")
    assert fix.kind == BACKPORT and fix.status.forwarded == "not-needed" and fix.status.applied_upstream is None
    assert fix.patches[0].provenance["Origin"] == f"backport, {GITHUB}/pull/19450"
    assert fix.tests.all == () and res.expected == {} and not collects(CPP_TEST)
    assert [f for _p, fs in stack.wheel_files(ps, fix) for f in fs] == [CPP]


def _move_pr(upstream: Path, number: str) -> str:
    """The PR gains a commit, as when its author pushes a review fix."""
    work = upstream.parent / "pr-work"
    sh("git", "clone", "-q", upstream.as_uri(), work)
    sh("git", "-C", work, "fetch", "-q", "origin", f"refs/pull/{number}/head")
    sh("git", "-C", work, "checkout", "-q", "FETCH_HEAD")
    with open(work / CPP, "a") as fh:
        fh.write("// the reviewer asked for this line\n")
    sh("git", "-C", work, "commit", "-qam", "[#18609][fix] Say why the tokens are checked")
    sh("git", "-C", work, "push", "-q", "origin", f"HEAD:refs/pull/{number}/head")
    return git(work, "rev-parse", "HEAD")


@pytest.mark.slow
def test_a_pr_that_moved_is_replaced_in_place_and_range_diffed(tmp_path, upstream, checkout):
    root = copy_root(tmp_path)
    first = backport(root, "rc25", checkout, pr="19450")
    assert not first.replaced and first.placed == "before 19514"
    again = backport(root, "rc25", checkout, pr="19450")
    assert again.replaced and not again.changed and again.range_diff.startswith("1:  ")
    _move_pr(upstream, "19450")
    moved = backport(root, "rc25", checkout, pr="19450")
    ps = patchset.load(root, "rc25")
    assert moved.replaced and [f.id for f in ps.fixes] == ["19450", "19514"] and len(ps.fix("19450").patches) == 2
    assert "-:  ------- > 2:" in moved.range_diff and "Say why the tokens are checked" in moved.range_diff


def _hostile_pr(upstream: Path, number: str, make) -> None:
    """refs/pull/<number>/head: one commit on main made by make(work tree, git)."""
    work = upstream.parent / f"hostile-{number}"
    sh("git", "clone", "-q", upstream.as_uri(), work)
    message = make(work, lambda *a: sh("git", "-C", work, *a))
    sh("git", "-C", work, "add", "-A")
    sh("git", "-C", work, "commit", "-q", "-m", message or "[None][fix] Something")
    sh("git", "-C", work, "push", "-q", "origin", f"HEAD:refs/pull/{number}/head")


def _symlink(work, git):
    (work / "tensorrt_llm" / "evil.py").symlink_to("/etc/passwd")


def _executable(work, git):
    f = work / "tensorrt_llm" / "run.py"
    f.write_text("print('hi')\n")
    f.chmod(0o755)


def _submodule(work, git):
    sub = work / "tensorrt_llm" / "sub"
    sh("git", "init", "-q", sub)
    sh("git", "-C", sub, "commit", "-q", "--allow-empty", "-m", "inside")  # git add -A adds it as a gitlink


def _smuggled_diff(work, git):
    (work / "tensorrt_llm" / "ok.py").write_text("x = 1\n")
    return ("[None][fix] Fine\n\ndiff --git a/tensorrt_llm/_torch/pyexecutor/_util.py "
            "b/tensorrt_llm/_torch/pyexecutor/_util.py\n--- a/x\n+++ b/x\n")


def _binary(work, git):
    (work / "tensorrt_llm" / "blob.bin").write_bytes(b"\x00\x01binary\x00")


def _long_message(work, git):
    (work / "tensorrt_llm" / "ok.py").write_text("x = 1\n")
    return "[None][fix] Fine\n\n" + "All work and no play.\n" * 3200


@pytest.mark.parametrize("make, said", tiered((_symlink, "is a symlink"), (_executable, "becomes an executable"),
                                              (_submodule, "is a submodule"),
                                              (_smuggled_diff, "git reads as the start of a patch"),
                                              (_binary, "tensorrt_llm/blob.bin is a binary file"),
                                              (_long_message, "its message is over 64 KiB")))
def test_an_untrusted_pr_is_refused_and_nothing_is_written(tmp_path, upstream, checkout, make, said):
    _hostile_pr(upstream, "31337", make)
    root = copy_root(tmp_path)
    before = files(root, "rc25"), state_of(checkout)
    with pytest.raises(BadInput, match=said) as exc:
        backport(root, "rc25", checkout, pr="31337")
    assert exc.value.code == 2
    assert (files(root, "rc25"), state_of(checkout)) == before


@pytest.mark.slow
def test_a_commit_is_carried_by_its_id_after_our_fix_when_asked(tmp_path, upstream, checkout):
    root = copy_root(tmp_path)
    sha = git(upstream, "rev-parse", "refs/pull/19450/head")
    res = backport(root, "rc25", checkout, commit=sha, after="19514")
    ps = patchset.load(root, "rc25")
    assert res.fix == sha[:12] and [f.id for f in ps.fixes] == ["19514", sha[:12]]
    assert ps.fix(sha[:12]).patches[0].provenance["Applied-Upstream"] == f"{GITHUB}/commit/{sha}"
    assert ps.patches[-1].name.startswith("0003-18609-")


@pytest.mark.slow
@pytest.mark.parametrize("kw, error, said", [
    ({}, BadInput, "name the change"), ({"pr": "19450", "commit": "abc1234"}, BadInput, "one of them"),
    ({"pr": "1x"}, BadInput, "not a pull request number"), ({"pr": "4242"}, NotFound, "no refs/pull/4242/head"),
    ({"pr": "19302", "before": "7"}, NotFound, "no fix '7'"), ({"commit": "abc1234"}, BadInput, "full 40-hex id"),
    ({"pr": "19302", "before": "19514", "after": "19514"}, BadInput, "not both"),
])
def test_bad_requests_change_nothing(tmp_path, checkout, kw, error, said):
    root = copy_root(tmp_path)
    before = files(root, "rc25"), state_of(checkout)
    with pytest.raises(error, match=said):
        backport(root, "rc25", checkout, **kw)
    assert (files(root, "rc25"), state_of(checkout)) == before


@pytest.mark.slow
def test_the_one_fix_file_becomes_the_stack_form_with_its_comments(tmp_path, checkout):
    root = copy_root(tmp_path)
    old = (root / "patches" / "rc25" / "patchset.yaml").read_text()
    backport(root, "rc25", checkout, pr="19450")
    new = (root / "patches" / "rc25" / "patchset.yaml").read_text()
    comments = [line.strip() for line in old.splitlines() if line.strip().startswith("#")]
    # every comment kept (the target's fields come first now, so their comments may move up)
    assert sorted(line.strip() for line in new.splitlines() if line.strip().startswith("#")) == sorted(comments)
    ours, was = patchset.load(root, "rc25").fix("19514"), patchset.load(ROOT, "rc25").fixes[0]
    assert (ours.title, ours.expected, ours.pr, ours.tests) == (was.title, was.expected, was.pr, was.tests)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed here: the test would run")
def test_a_test_that_imports_what_this_machine_lacks_is_not_run_here(tmp_path, upstream, checkout):
    def needs_torch(work, git):
        (work / "tests/unittest/_torch/executor/test_needs_torch.py").write_text(
            "import torch\n\n\ndef test_gpu():\n    assert torch.cuda.is_available()\n")
        with open(work / "tensorrt_llm/_torch/pyexecutor/scheduler.py", "a") as fh:
            fh.write("\n\ndef guard():\n    return 1\n")
        return "[#1][fix] A guard, tested on a GPU"
    _hostile_pr(upstream, "777", needs_torch)
    root = copy_root(tmp_path)
    res = backport(root, "rc25", checkout, pr="777")
    assert res.expected == {"tests/unittest/_torch/executor/test_needs_torch.py": {"not_run": True}}
    assert "not run here" in command.describe(res)


def test_make_backport_of_a_pr_already_in_the_ref_says_so(tmp_path, checkout):
    root = copy_root(tmp_path)
    res = sh("make", "-s", "-C", ROOT, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit --root {root}",
             "TRTLLM=main", f"TRTLLM_SRC={checkout}", "PR=19302", "backport", check=False)
    assert res.returncode == 0, res.stderr
    squash = git(checkout, "rev-parse", "origin/main")[:12]
    assert res.stdout.strip() == (f"upstream: origin/main {squash}, fetched now\n"  # #33 item 4: the ref judged
                                  f"main: 19302 ({GITHUB}/pull/19302, merged as {squash}) is already in main ({squash}) "
                                  f"at {squash}; nothing written")


@pytest.mark.slow
def test_the_cli_says_a_conflict_in_one_line_and_exits_3(tmp_path, checkout, capsys):
    from patchkit import cli
    root = copy_root(tmp_path)
    code = cli.main(["--root", str(root), "backport", "--target", "main", "--src", str(checkout), "--pr", "20918"])
    out, err = capsys.readouterr()
    assert code == 3 and err.count("\n") == 1 and "_util.py hunk #1" in err and "expected (-) beside found" in out
    assert f"radar --target main --src {checkout}" in err


def test_make_backport_of_a_cpp_change_ends_saying_the_set_needs_a_wheel_build(tmp_path, checkout):
    """#32 item 4: a change compiled into the wheel (19450: the C++ guard) says so at once, its
    last line the make wheel line in the user's words."""
    root = copy_root(tmp_path)
    res = sh("make", "-s", "-C", ROOT, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit --root {root}",
             "TRTLLM=rc25", f"TRTLLM_SRC={checkout}", "PR=19450", "backport", check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-1] == (
        f"run: PATCHKIT_ROOT={root} make wheel TRTLLM=rc25 TRTLLM_SRC={checkout} (rc25 now needs a wheel build: fix 19450 changes {CPP}, "
        "which is compiled into the wheel; make container builds it when missing)")

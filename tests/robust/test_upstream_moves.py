"""Verdicts that stay true when upstream moves (#24): each reproduction of the issue, on the
miniature, as a user meets it."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from patchkit import apply as apply_mod, miniature, patchset
from patchkit.cli import main
from patchkit.delta import command as delta_cmd
from patchkit.errors import ExitCode
from patchkit.git import Repo
from patchkit.lint import command as lint_cmd
from patchkit.pr import checklist, dco
from helpers import HOOK_ENVS_BY_UV, LINT_CACHE, ROOT, WHEELHOUSE, build_once, copy_root, needs_hook_tools, sh, state_of, tiered
from robust.faults import SAME, Injector, defects
from robust.test_faults import Scenario, sweep

UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"
SIGNOFF = "Jane Developer <jane@example.com>"
# Who authors apply's commits: the patches' own From: (make dco FIX=1 signs off as a commit's author, #33 item 7).
APPLIED_BY = "{0.author_name} <{0.author_email}>".format(patchset.load(ROOT, "main").patches[0])


# -- radar, delta and bench (#24 items 3 and 8) ----------------------------------------------------

@pytest.fixture(scope="module")
def fixed_upstream(tmp_path_factory):
    """The miniature where upstream landed its own form of the fix: our 0001 conflicts there."""
    return build_once(tmp_path_factory, "fixedup", lambda dest: miniature.build(ROOT, dest, variant="fixed-upstream"))


def _radar(capsys, *args) -> tuple[int, dict | None, str]:
    code = main(["--json", "radar", "--target", "main", *map(str, args)])
    out = capsys.readouterr()
    return code, json.loads(out.out) if out.out.strip() else None, out.err


def _commit(repo, message: str, date: str = "") -> None:
    env = f"GIT_COMMITTER_DATE={date} GIT_AUTHOR_DATE={date}".split() if date else []
    sh("env", *env, "git", "-C", repo, "commit", "-qam", message)


def _drift(repo, date: str = "") -> None:
    """Upstream rewords a context line of 0001's hunk: the patch conflicts (3-way merges it)."""
    util = repo / UTIL
    old = "            head_dim = encoder_hidden_size // encoder_num_heads\n"
    assert util.read_text().count(old) == 1
    util.write_text(util.read_text().replace(old, "            head_dim = encoder_hidden_size // max(encoder_num_heads, 1)\n"))
    _commit(repo, "Guard the head size division", date)


def test_radar_on_fixed_upstream_with_its_defaults_says_fixed_upstream(fixed_upstream, tmp_path, capsys):
    """make apply's own hint on fixed-upstream is make radar with the defaults; there 0001
    conflicts already at SINCE (the ref as of verified_on) and stays so. Was: exit 70, `min()
    arg is an empty sequence`. Now: the fixed-upstream verdict the tests give, exit 1; a docs
    patch that still applies, on a page that still says a pr.docs phrase, is kept."""
    clone = tmp_path / "trtllm"
    sh("git", "clone", "-q", fixed_upstream.as_uri(), clone)
    before = state_of(clone)
    code, res, err = _radar(capsys, "--src", clone, "--out", tmp_path / "out")
    assert code == 1, err
    ps = patchset.load(ROOT, "main")
    fix, test, docs = (p.name for p in ps.patches)
    [own] = res["fixes"]
    assert res["action"] == "retire" and own["tests"]["since"]["fixed"] and own["tests"]["until"]["fixed"]
    assert res["verdict"].startswith(f"fixed upstream at SINCE {res['since']['commit'][:12]} or before: ")
    assert f"retire {fix}: drop it from the series" in res["todo"]
    assert f"keep {test} as a PR" in res["todo"]
    assert f"keep {docs} as a PR: docs/source/models/encoder-decoder.md still says" in res["todo"]
    assert state_of(clone) == before


@pytest.mark.slow  # the second case of a status already held at SINCE: make test-slow (.ci/run)
def test_radar_since_equals_until_on_a_drifted_main(upstream, tmp_path, capsys, monkeypatch):
    """SINCE=UNTIL on a main where 0001 no longer applies as written. Was: exit 70. Now: said
    as so already at SINCE, exit 1, with the ways on (an earlier SINCE, or a conflict to resolve by hand); radar from there names
    the commit and that 3-way merges it, and its THREEWAY hint runs as printed."""
    _drift(upstream)
    clone = tmp_path / "trtllm"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    monkeypatch.setenv("PATCHKIT_VIA_MAKE", "1")
    radar = ["radar", "--target", "main", "--src", str(clone), "--until", "main", "--out", str(tmp_path / "out")]
    assert main([*radar, "--since", "main"]) == 1
    out = capsys.readouterr().out
    fix = patchset.load(ROOT, "main").patches[0].name
    tip = sh("git", "-C", clone, "rev-parse", "main").stdout.strip()
    assert f"verdict: {fix} already does not apply cleanly at SINCE {tip[:12]} or before" in out
    assert "\nchoose another SINCE (an earlier commit of the ref, where the set still applied)\n" in out
    assert out.rstrip().endswith(f"run: make apply TRTLLM=main TRTLLM_SRC={clone} THREEWAY=keep"
                                 " (resolve the conflict by hand; it prints the next steps)"), out
    root = copy_root(tmp_path)  # the hint's export writes the set: into a copy of the project
    assert main(["--root", str(root), *radar, "--since", "main~1"]) == 1
    out = capsys.readouterr().out
    assert f"verdict: {fix} stops applying cleanly at {tip[:12]} (" in out and "; 3-way merges it" in out
    assert (m := re.search(r"^run: (.*make apply .*THREEWAY=1 && .*make export .*)$", out, re.M)), out
    env = dict(os.environ, SETUP="", PATCHKIT=f"{sys.executable} -m patchkit")
    env.pop("PATCHKIT_VIA_MAKE")
    ran = subprocess.run(["bash", "-c", m.group(1)], cwd=ROOT, env=env, text=True, capture_output=True)
    assert ran.returncode == 0, (m.group(1), ran.stderr)
    assert main(["--root", str(root), "check", "--target", "main", "--src", str(clone)]) == 0


def _quiet_radar(capsys, tmp_path, src, *url) -> dict:
    """radar on a ref whose tip is older than the set's verified_on (a quiet branch)."""
    code, res, err = _radar(capsys, "--src", src, *url, "--out", tmp_path / f"out-{src.name}")
    assert code in (0, 1) and res is not None, err
    return {"since": res["since"]["commit"], "until": res["until"]["commit"],
            **{k: res[k] for k in ("changed", "action", "verdict", "commits_in_range")}}


def test_radar_in_a_one_commit_clone_of_a_quiet_ref_answers_as_the_full_repository(upstream, tmp_path, capsys):
    """TRTLLM_SRC missing: the one-commit clone of main, whose tip is older than verified_on.
    Was: git's `no commits selected for shallow requests`, exit 3. Now what the full repository says."""
    said = _quiet_radar(capsys, tmp_path, tmp_path / "one-commit", "--url", upstream)
    # As the full repository says it (make test-slow compares the two runs): main as it was
    # on verified_on is its tip, and no commit lies between.
    tip = sh("git", "-C", upstream, "rev-parse", "main").stdout.strip()
    assert (said["since"], said["until"], said["commits_in_range"]) == (tip, tip, 0)
    assert said["verdict"].startswith("nothing to do") and said["action"] == "nothing"


@pytest.mark.slow  # two radar runs: make test-slow (.ci/run)
def test_radar_in_a_one_commit_clone_answers_exactly_as_the_full_repository(upstream, tmp_path, capsys):
    assert (_quiet_radar(capsys, tmp_path, tmp_path / "one-commit", "--url", upstream)
            == _quiet_radar(capsys, tmp_path, upstream))


@pytest.mark.slow  # the second kind of shallow clone: make test-slow (.ci/run)
def test_radar_in_a_depth_1_clone_of_a_quiet_ref_answers_as_the_full_repository(upstream, tmp_path, capsys):
    clone = tmp_path / "depth1"
    sh("git", "clone", "-q", "--depth", "1", upstream.as_uri(), clone)
    assert _quiet_radar(capsys, tmp_path, clone) == _quiet_radar(capsys, tmp_path, upstream)


@pytest.mark.slow  # a shallow clone fetched by count: make test-slow (.ci/run)
def test_radar_fetches_the_range_by_count_where_its_dates_select_nothing(upstream, tmp_path, capsys):
    """SINCE dated after every commit of the range (clocks set apart: make bench's upstream had
    that): fetching history by SINCE's date selects nothing, which git calls an error. Was:
    exit 3. Now the range's commits are fetched by count and the answer is the full one's."""
    (upstream / "NOTES.md").write_text("Release notes, stamped by a clock running ahead.\n")
    sh("git", "-C", upstream, "add", "NOTES.md")
    _commit(upstream, "Stamp the release notes", "2026-12-31T00:00:00+00:00")
    since = sh("git", "-C", upstream, "rev-parse", "main").stdout.strip()
    _drift(upstream, "2026-10-01T00:00:00+00:00")
    clone = tmp_path / "shallow"
    sh("git", "clone", "-q", "--depth", "1", "--filter=blob:none", upstream.as_uri(), clone)
    args = ("--since", since, "--until", "main")
    code, res, err = _radar(capsys, "--src", clone, *args, "--out", tmp_path / "o1")
    full_code, full, _ = _radar(capsys, "--src", upstream, *args, "--out", tmp_path / "o2")
    assert code == full_code == 1, err
    assert (res["verdict"], res["commits_in_range"], res["candidates"]) == (full["verdict"], 1, 1)


def test_delta_on_a_drifted_series_is_one_line_naming_file_and_hunk_and_its_hint_runs(upstream, tmp_path, capsys):
    """make delta where 0001 no longer applies. Was: a traceback (AttributeError in the hint's
    rendering), exit 1. Now: one line, exit 3, the file and the hunk, and a hint that runs as
    printed (make radar, which says what the set needs)."""
    _drift(upstream)
    root = copy_root(tmp_path)  # the hint's radar writes its report under the root's build/
    before = state_of(upstream)
    code = main(["--root", str(root), "delta", "--target", "main", "--src", str(upstream), "--mode", "source",
                 "--report", str(tmp_path / "delta.json")])
    err = capsys.readouterr().err
    assert code == 3
    [line] = err.strip().splitlines()
    fix = patchset.load(ROOT, "main").patches[0].name
    assert line.startswith(f"patchkit: error: {fix} does not apply to ") and f"{UTIL} hunk #" in line
    assert state_of(upstream) == before and not (tmp_path / "delta.json").exists()
    hint = re.search(r"; run: (patchkit .*?) \(", line).group(1)
    assert hint == f"patchkit --root {root} radar --target main --src {upstream}"
    assert main(shlex.split(hint)[1:]) == 1
    # The drift is dated on the set's verified_on day (the tests' clock): SINCE already has it.
    assert f"verdict: {fix} already does not apply cleanly at SINCE " in capsys.readouterr().out


def test_logs_are_not_part_of_the_repository():
    """build-test.log (a local pip log with machine paths) was committed; logs are ignored."""
    assert sh("git", "-C", ROOT, "ls-files", "*.log").stdout == ""
    assert sh("git", "-C", ROOT, "check-ignore", "-q", "--no-index", "build-test.log", check=False).returncode == 0


# The bench's image store: overlay storage, mounted while buildah and skopeo use it.
needs_buildah = pytest.mark.skipif(not (shutil.which("buildah") and shutil.which("skopeo")),
                                   reason="needs buildah and skopeo")


def _use_store(tmp_path) -> None:
    """What leaves an overlay store mounted: an image copied out of it by skopeo."""
    ctr = sh("buildah", "from", "scratch").stdout.strip()
    sh("buildah", "commit", "-q", ctr, "localhost/moves:1")
    sh("buildah", "rm", ctr)
    sh("skopeo", "copy", "-q", "containers-storage:localhost/moves:1", f"oci:{tmp_path / 'oci'}:img")


def _mounted(path) -> list[str]:
    return [ln for ln in open("/proc/self/mountinfo").read().splitlines() if f" {path}" in ln]


@pytest.fixture
def unmounted(tmp_path):
    """The test's folder swept of mounts however the test ends (a failing one too)."""
    yield
    from patchkit.bench import store
    store.sweep(tmp_path)


@needs_buildah
def test_the_bench_image_store_is_shut_down_when_its_section_fails(tmp_path, unmounted, monkeypatch):
    """make bench's container section, failing after skopeo read the store. Was: its overlay
    folder stayed mounted, and `rm -rf build` failed with "Device or resource busy"."""
    from patchkit.bench import container

    def fails(root, workdir, big_mb, driver):
        _use_store(tmp_path)
        raise RuntimeError("the section fails here")
    monkeypatch.setattr(container, "_container_bench_in", fails)
    with pytest.raises(RuntimeError):
        container.container_bench(ROOT, tmp_path / "bench", big_mb=1)
    assert _mounted(tmp_path) == []
    shutil.rmtree(tmp_path / "bench")


@pytest.mark.slow  # buildah and a bench section: make test-slow (.ci/run)
@needs_buildah
def test_a_mount_left_by_a_killed_bench_is_cleaned_by_the_next(tmp_path, unmounted, monkeypatch):
    """A run killed while a container of its store was mounted leaves the store mounted; the
    next make bench clears its folder (the clone section starts with it) and measures."""
    from patchkit import bench
    work = tmp_path / "bench"
    store = work / "containers"
    store.mkdir(parents=True)
    conf = store / "storage.conf"
    conf.write_text(f'[storage]\ndriver = "overlay"\ngraphroot = "{store}/graph"\nrunroot = "{store}/run"\n')
    monkeypatch.setenv("CONTAINERS_STORAGE_CONF", str(conf))
    ctr = sh("buildah", "from", "scratch").stdout.strip()
    sh("buildah", "mount", ctr)  # and then the kill: nobody unmounts it
    monkeypatch.delenv("CONTAINERS_STORAGE_CONF")
    if not _mounted(store):
        pytest.skip("overlay storage does not mount here")
    monkeypatch.setattr(bench, "SECTIONS", {"clone": lambda root, w, opt: shutil.rmtree(w) or "cleared"})
    assert bench.run(ROOT, work) == ["cleared"]
    assert _mounted(tmp_path) == []


@pytest.mark.slow  # a bench section end to end (two image builds): make test-slow (.ci/run)
@needs_buildah
def test_the_container_section_leaves_nothing_mounted(tmp_path, unmounted):
    from patchkit.bench import container
    res = container.container_bench(ROOT, tmp_path / "bench", big_mb=1)
    assert not isinstance(res, str) and res.layer_bytes > 0
    assert _mounted(tmp_path) == []
    assert subprocess.run(["rm", "-rf", str(tmp_path / "bench")]).returncode == 0


# -- worktrees, sets, dco and hints (#24 items 4-7) -------------------------------------------------
def load(target: str):
    return patchset.load(ROOT, target)


def cli(capsys, *argv, root: Path = ROOT) -> tuple[int, str, str]:
    code = main(["--root", str(root), *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def git(repo: Path, *args: str, check: bool = True) -> str:
    return sh("git", "-C", repo, *args, check=check).stdout.strip()


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "--abbrev-ref", "HEAD")


def branches(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/patchkit-backup").splitlines()


def records(repo: Path) -> list[str]:
    """The apply records this worktree keeps (per worktree since #24)."""
    folder = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path", "patchkit"))
    return sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []


def seen(repo: Path) -> dict:
    """state_of without the index file's stat data (a checkout rewrites it with the same entries)."""
    return {k: v for k, v in state_of(repo).items() if k != "index"}


@pytest.fixture
def two_worktrees(checkout, tmp_path):
    """A user's clone and a second worktree of it on a branch of its own."""
    side = tmp_path / "side"
    git(checkout, "worktree", "add", "-q", "-b", "side", str(side))
    return checkout, side


def test_unapply_in_the_other_worktree_exits_4_and_changes_neither(capsys, two_worktrees):
    """make apply in one worktree, make unapply in another: the second was moved off its branch,
    the branch the first had checked out was deleted, and the first was left on an unborn
    branch with every file staged as added (the record under .git/patchkit was shared)."""
    first, side = two_worktrees
    apply_mod.apply(load("main"), src=first)
    before = (seen(first), seen(side))
    code, out, err = cli(capsys, "unapply", "--target", "main", "--src", side)
    assert code == 4 and out == "" and err.count("\n") == 1, err
    assert "nothing to unapply here" in err and f"checked out in {first}" in err
    assert (seen(first), seen(side)) == before
    assert head(first) == "overlay/main" and head(side) == "side"
    # the hint names the worktree where it was applied, and runs there
    hint = re.search(r"run: (.+)$", err.strip()).group(1)
    assert hint == f"patchkit --root {ROOT} unapply --target main --src {first}"
    assert main(shlex.split(hint)[1:]) == 0
    assert head(first) == "main" and head(side) == "side" and "refs/heads/overlay/main" not in branches(first)


@pytest.mark.slow
def test_each_worktree_applies_and_unapplies_its_own(capsys, two_worktrees):
    """Both worktrees apply a set (rc25 in one, main in the other): each record is the
    worktree's own, and each unapply returns only its worktree to where it was."""
    first, side = two_worktrees
    start = (seen(first), seen(side))
    apply_mod.apply(load("rc25"), src=first)
    apply_mod.apply(load("main"), src=side)
    assert records(first) == ["rc25.json"] and records(side) == ["main.json"]
    # The other worktree's set is refused by name, with the way to it.
    code, _, err = cli(capsys, "apply", "--target", "main", "--src", first)
    assert code == 3 and f"overlay/main is checked out in {side}" in err and err.count("\n") == 1
    assert apply_mod.unapply(load("main"), src=side).restored == "refs/heads/side"
    assert apply_mod.unapply(load("rc25"), src=first).restored == "refs/heads/main"
    assert (seen(first), seen(side)) == start


@pytest.mark.slow
def test_no_command_deletes_a_branch_another_worktree_has_checked_out(capsys, two_worktrees):
    """Applied in one worktree, then checked out in the other by hand: unapply in the first
    deleted it from under the second."""
    first, side = two_worktrees
    apply_mod.apply(load("main"), src=first)
    git(first, "checkout", "-q", "main")
    git(side, "checkout", "-q", "overlay/main")
    before = (seen(first), seen(side))
    code, _, err = cli(capsys, "unapply", "--target", "main", "--src", first)
    assert code == 3 and f"branch overlay/main is checked out in {side}" in err and err.count("\n") == 1
    assert (seen(first), seen(side)) == before
    # dco FIX would move it under that worktree too: refused, said to run there
    code, _, err = cli(capsys, "dco", "--src", first, "--branch", "overlay/main", "--fix", "--signoff", SIGNOFF)
    assert code == 3 and f"--src {side}" in err and (seen(first), seen(side)) == before


@pytest.mark.parametrize("first, second", tiered(("rc25", "main"), ("main", "rc25")))
def test_two_sets_on_one_checkout_unapplied_in_either_order_end_where_they_started(capsys, checkout, first, second):
    """apply rc25, apply main, unapply rc25 moved HEAD from overlay/main to main without a word
    and deleted overlay/rc25; from then on unapply main failed for good (git's `ambiguous
    argument 'overlay/rc25'`, exit 3)."""
    start = seen(checkout)
    apply_mod.apply(load("rc25"), src=checkout)
    apply_mod.apply(load("main"), src=checkout)
    code, out, err = cli(capsys, "unapply", "--target", first, "--src", checkout)
    assert code == 0, err
    if first == "rc25":  # not the set checked out: back to where its apply started, saying what it left
        assert "left overlay/main, which was checked out; it is kept" in out
        assert f"run: patchkit --root {ROOT} unapply --target main --src {checkout}" in out
        assert "refs/heads/overlay/main" in branches(checkout) and records(checkout) == ["main.json"]
    code, out, err = cli(capsys, "unapply", "--target", second, "--src", checkout)
    assert code == 0, err
    assert seen(checkout) == start and records(checkout) == []


@pytest.mark.slow  # make test keeps the two sets' case, where the start of the second set's apply is gone
def test_a_record_whose_branch_is_gone_is_recovered_from_with_a_line(capsys, checkout):
    """The branch deleted by hand: unapply and apply said so nowhere, and a record pointing at
    a branch that was gone made unapply fail for good (exit 3)."""
    start = seen(checkout)
    apply_mod.apply(load("main"), src=checkout)
    git(checkout, "checkout", "-q", "main")
    git(checkout, "branch", "-q", "-D", "overlay/main")
    code, out, err = cli(capsys, "unapply", "--target", "main", "--src", checkout)
    assert code == 0 and "branch overlay/main was already gone" in out, err
    assert seen(checkout) == start and records(checkout) == []


@pytest.mark.slow
def test_a_branch_deleted_while_checked_out_comes_back_and_apply_goes_on(capsys, checkout):
    """The state the cross-worktree unapply left (HEAD on a branch that is gone, every file
    staged as added): apply and unapply refused it as uncommitted changes, for good."""
    start = seen(checkout)
    apply_mod.apply(load("main"), src=checkout)
    tip = git(checkout, "rev-parse", "HEAD")
    git(checkout, "update-ref", "-d", "refs/heads/overlay/main")
    code, out, err = cli(capsys, "apply", "--target", "main", "--src", checkout)
    assert code == 0 and "already applied" in out and "was gone while checked out" in out, err
    assert git(checkout, "rev-parse", "HEAD") == tip
    code, out, err = cli(capsys, "unapply", "--target", "main", "--src", checkout)
    assert code == 0, err
    assert seen(checkout) == start


def test_dco_fix_leaves_upstreams_commits_alone_in_a_checkout_without_remote_tracking_refs(capsys, upstream):
    """In a repository with no remote-tracking refs (upstream's own, the miniature), make dco
    counted upstream's commits after its last tag as the branch's, and FIX rewrote them."""
    apply_mod.apply(load("main"), src=upstream)
    upstream_main = git(upstream, "rev-parse", "main")
    code, out, err = cli(capsys, "dco", "--src", upstream, "--branch", "overlay/main", "--fix", "--signoff", APPLIED_BY)
    assert code == 0, err + out
    ours = int(git(upstream, "rev-list", "--count", "main..overlay/main"))  # the series' commits
    assert ours >= len(load("main").patches) and f"{ours} commit(s) checked" in out and "all signed off" in out
    assert git(upstream, "rev-parse", f"overlay/main~{ours}") == upstream_main  # upstream's commit is the same object
    assert git(upstream, "rev-parse", "main") == upstream_main


def test_unapply_takes_the_branch_dco_fix_signed_off(capsys, checkout):
    """make dco FIX=1 on overlay/<target>, then make unapply: 'has commits made after apply;
    move them elsewhere or delete the branch by hand' (exit 3), with no word of the backup."""
    start = seen(checkout)
    apply_mod.apply(load("main"), src=checkout)
    code, out, err = cli(capsys, "dco", "--src", checkout, "--branch", "overlay/main", "--fix", "--signoff", APPLIED_BY)
    assert code == 0 and "sign-offs added" in out, err
    code, out, err = cli(capsys, "unapply", "--target", "main", "--src", checkout)
    assert code == 0, err
    assert "refs/patchkit-backup/overlay/main" in out and "make dco FIX=1" in out
    assert seen(checkout) == start  # the backup ref went with the branch it backed up


@pytest.mark.slow
def test_a_signed_off_set_is_already_applied_and_a_rewritten_one_names_the_backup(capsys, checkout):
    """apply over the branch dco signed off said it was 'built from another version', with a
    hint to unapply that refused; a branch rewritten otherwise named no backup."""
    apply_mod.apply(load("main"), src=checkout)
    dco.fix(Repo(checkout), "overlay/main", dco.parse_identity(APPLIED_BY))
    code, out, err = cli(capsys, "apply", "--target", "main", "--src", checkout)
    assert code == 0 and "already applied" in out, err
    git(checkout, "commit", "-q", "--amend", "-m", "[#19514][doc] Reworded by hand")
    before = seen(checkout)
    code, _, err = cli(capsys, "unapply", "--target", "main", "--src", checkout)
    assert code == 3 and "refs/patchkit-backup/overlay/main" in err and "branch -m overlay/main" in err
    assert seen(checkout) == before


def test_apply_over_the_users_own_commits_says_so_and_its_hint_works(capsys, checkout):
    """Commits of the user's own on overlay/<target>, then make apply: 'already exists and was
    built from another version of the patch set' with a hint to unapply, which refused too."""
    apply_mod.apply(load("main"), src=checkout)
    (checkout / "mine.txt").write_text("my work\n")
    git(checkout, "add", "mine.txt")
    git(checkout, "commit", "-q", "-m", "My own work")
    before = seen(checkout)
    code, _, err = cli(capsys, "apply", "--target", "main", "--src", checkout)
    assert code == 3 and err.count("\n") == 1, err
    assert "1 commit(s) made after apply on top of the series" in err and "My own work" in err
    assert seen(checkout) == before
    keep = re.search(r"\((git -C .+ branch -m overlay/main overlay/main-mine)\)", err).group(1)
    sh(*shlex.split(keep))
    code, out, err = cli(capsys, "apply", "--target", "main", "--src", checkout)
    assert code == 0 and "whose branch overlay/main is gone" in out, err
    assert head(checkout) == "overlay/main" and "My own work" in git(checkout, "log", "-1", "overlay/main-mine")


def test_make_check_exits_4_when_no_targets_ref_is_in_the_checkout(capsys, tmp_path):
    """make check on an empty or wrong repository printed 'ref not in checkout' for each
    target and exited 0: a CI gate passed."""
    empty = tmp_path / "empty"
    sh("git", "init", "-q", empty)
    code, out, err = cli(capsys, "check", "--src", empty)
    assert code == 4 and out == "" and err.count("\n") == 1, err
    assert "no target's ref is in" in err and "nothing was checked" in err


@pytest.mark.slow
def test_a_checkout_without_origin_gets_a_fetch_hint_naming_the_url_and_it_runs(capsys, upstream, tmp_path):
    """Without origin, the hint was `git fetch origin <ref>`, which fails there (and a tag so
    fetched from origin is no tag in a --no-tags clone)."""
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", "--no-tags", upstream.as_uri(), clone)
    git(clone, "remote", "remove", "origin")
    code, _, err = cli(capsys, "apply", "--target", "rc25", "--src", clone, "--url", upstream.as_uri())
    assert code == 4 and upstream.as_uri() in err, err
    fetch = re.search(r"run: (git .+)$", err.strip()).group(1)
    sh(*shlex.split(fetch))
    code, out, err = cli(capsys, "apply", "--target", "rc25", "--src", clone)
    assert code == 0 and "refs/tags/v1.3.0rc25" in out, err


# -- every hint runs as printed, every value named as given (#24 item 6) ----------------------------
def make_run(*args: str, root: Path = ROOT, cwd: Path = ROOT):
    """make as a user runs it (the venv step skipped), on a project root of the test's own."""
    return sh("make", "-s", "-C", cwd, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit --root {root}", *args,
              check=False)


@pytest.mark.parametrize("variable, target, said", tiered(
    ("MODE=bogus", "delta", "MODE: invalid choice: 'bogus'"),
    ("TLS_VERIFY=maybe", "container-push", "TLS_VERIFY: invalid choice: 'maybe'"),
    ("GPU_RUNNER= ", "workflow", "GPU_RUNNER: must not be empty"),
    ("BUILDER=bogus", "container", "BUILDER: unknown image builder 'bogus'")))
def test_a_bad_value_through_make_is_named_as_the_make_variable(tmp_path, checkout, variable, target, said):
    """make delta MODE=bogus said `argument --mode: invalid choice`, a flag the user never
    typed; make workflow GPU_RUNNER=' ' used the default runners without a word (the CLI
    refuses a blank --gpu-runner); make container BUILDER=bogus exited 5, not 2."""
    root = copy_root(tmp_path)
    res = make_run(variable, f"TRTLLM_SRC={checkout}", "REGISTRY=r.example/x", target, root=root)
    err = res.stderr.replace("make: ***", "\n").splitlines()[0]
    assert f"patchkit: error: {said}" in err and "--" not in err.split("(see")[0], res.stderr
    assert "Error 2" in res.stderr  # the CLI's exit 2: bad input
    assert not (root / ".github").exists()


def test_pr_says_the_lint_fix_in_the_users_vocabulary():
    """make pr from the CLI said `make lint FIX=1` for failing formatters (in the checklist
    item's reason), a command of the other vocabulary."""
    from patchkit.cli import COMMANDS
    from patchkit.pr import branch, checklist
    from patchkit.text.voice import Voice
    failing = {"config_found": True, "failures": [{"file": "a.py", "hook": "ruff-format", "wants": "x"}],
               "ran": ["ruff-format"], "not_run": {}}
    facts = checklist.Facts(explained=True, new_tests=("t.py",), mode="source", neighbours={}, ref="main", lint=failing)
    item = checklist.answer("The code follows the coding guidelines of the project.", facts, ())
    assert item.state == checklist.OPEN and "ruff-format" in item.why and "make lint" not in item.why
    options = {c.name: {a.dest: (a.flag, a.make) for a in c.args} for c in COMMANDS.values()}
    given = {"target": "main", "src": "/w/trtllm", "report": "/w/delta.json", "signoff": SIGNOFF}
    hint = branch._mend_hint([item], failing)
    said = {via: Voice(via_make=via, command="pr", given=given, options=options).hint(hint) for via in (False, True)}
    # pr's REPORT is the delta's report: lint must not be pointed at it
    assert said[False] == "run: patchkit lint --target main --src /w/trtllm --fix (it mends the formatters' part)"
    assert said[True] == "run: make lint TRTLLM=main TRTLLM_SRC=/w/trtllm FIX=1 (it mends the formatters' part)"


def test_keep_it_elsewhere_renames_the_branch_so_pr_can_run_again(upstream):
    """make pr on a pr/<target> with a commit it did not make said 'keep it elsewhere (git
    branch keep/main pr/main)': a copy, after which pr/main was refused again."""
    from patchkit.errors import Conflict
    from patchkit.pr import branch
    checkout = upstream
    git(checkout, "branch", "pr/main")
    repo = Repo(checkout)
    with pytest.raises(Conflict) as exc:
        branch._refuse_foreign_commits(repo, "main", "pr/main")
    keep = re.search(r"\((git -C .+ branch -m pr/main keep/main)\)", exc.value.message).group(1)
    sh(*shlex.split(keep))
    assert branch._refuse_foreign_commits(repo, "main", "pr/main") is None
    assert "refs/heads/keep/main" in branches(checkout)


# -- a fault sweep over apply and unapply with a second worktree present ----------------------------
class WorktreeScenario(Scenario):
    """apply, or unapply, rc25 in a linked worktree ('side') of the user's clone, whose main
    worktree stays on main: after a failure both worktrees are as they were, after a kill the
    next plain run finishes the job (robust/test_faults.py's sweep)."""

    def __init__(self, name, tmp: Path, upstream: Path, checkout: Path, root: Path, report) -> None:
        self.name, self.tmp, self.root, self.upstream, self.report = name, tmp, root, upstream, report
        self.template = tmp / f"template-{name}"
        shutil.copytree(checkout, self.template / "trtllm", symlinks=True)
        git(self.template / "trtllm", "worktree", "add", "-q", "-b", "side", str(self.template / "side"))
        if name == "wt-unapply":
            done = Injector(tmp).run(["apply", "--target", "rc25", "--src", str(self.template / "side")], root=root)
            assert done.code == 0, done.stderr

    def argv(self, work: Path) -> list[str]:
        return ["apply" if self.name == "wt-apply" else "unapply", "--target", "rc25", "--src", str(work.parent / "side")]

    def fresh(self, n: int) -> Path:
        run = self.tmp / f"run-{self.name}-{n}"
        if run.exists():
            shutil.rmtree(run)
        shutil.copytree(self.template, run, symlinks=True)
        work, side = run / "trtllm", run / "side"
        # the copies point at each other, as `git worktree repair` would make them
        (side / ".git").write_text(f"gitdir: {work}/.git/worktrees/side\n")
        (work / ".git" / "worktrees" / "side" / "gitdir").write_text(f"{side}/.git\n")
        return work

    def look(self, work: Path) -> dict | None:
        if not work.exists():
            return None
        both = {f"{name} {k}": v for name, tree in (("main", work), ("side", work.parent / "side"))
                for k, v in state_of(tree).items() if k != "index"}
        return {k: v.replace(str(work.parent), "<run>") if isinstance(v, str) else v for k, v in both.items()}


@pytest.fixture(scope="module")
def wt_world(tmp_path_factory, miniature_template):
    tmp = tmp_path_factory.mktemp("wtfaults")
    upstream, checkout = tmp / "upstream", tmp / "checkout"
    shutil.copytree(miniature_template, upstream, symlinks=True)
    sh("git", "clone", "-q", upstream.as_uri(), checkout)
    return tmp, upstream, checkout, copy_root(tmp), None


@pytest.mark.slow  # make test keeps the plain cross-worktree unapply above
@pytest.mark.sampled
@pytest.mark.parametrize("name", ["wt-apply", "wt-unapply"])
def test_sampled_faults_with_a_second_worktree_leave_both_as_they_were_or_recoverable(wt_world, tmp_path, name):
    counts = sweep(wt_world, name, 3, tmp_path, WorktreeScenario)
    assert counts["runs"] + counts[SAME] >= 6 and defects(counts) == 0, dict(counts)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", ["wt-apply", "wt-unapply"])
def test_every_fault_point_with_a_second_worktree(wt_world, tmp_path, name):
    counts = sweep(wt_world, name, None, tmp_path, WorktreeScenario)
    assert defects(counts) == 0, dict(counts)


# -- lint: upstream's pre-commit config moves (#24 items 1 and 2) -------------------------------------
#
# Upstream bumps a hook's rev (or freezes it to a commit), raises minimum_pre_commit_version, or
# breaks its config. The lint follows the pins at the ref (a pin the wheelhouse lacks is fetched
# from the user's index, or named "not run" with pip's reason and the command that fetches it),
# and fails closed when pre-commit itself cannot run: exit 2 for a config pre-commit rejects, 5
# for something missing here; never 0 with nothing checked, never 70, nothing cached; and make
# pr's coding-guidelines item stays open, saying why.
# ---------------------------------------------------------------------------------------------

CONFIG = ".pre-commit-config.yaml"
GUIDELINES = "The code follows CODING_GUIDELINES.md"  # the item as upstream's template words it (matched by phrase)


@pytest.fixture
def house(tmp_path, monkeypatch):
    """A wheelhouse of the test's own (make setup's wheels, linked): a pin lint fetches lands here,
    never in the project's .venv."""
    if not (WHEELHOUSE / ".fetched").exists():
        pytest.skip(f"no wheelhouse at {WHEELHOUSE}: make setup fetches the hook tools")
    h = tmp_path / "wheelhouse"
    h.mkdir()
    for w in WHEELHOUSE.glob("*.whl"):
        (h / w.name).symlink_to(w)
    (h / ".fetched").touch()
    monkeypatch.setattr(lint_cmd, "wheelhouse", lambda: h)
    return h


@pytest.fixture
def index(tmp_path, monkeypatch):
    """pip's configuration, the user's way: PIP_INDEX_URL names the index and nothing else of this
    machine's pip configuration reaches pip. It starts unreachable (a file:// index that is not
    there: pip's own "not found" answer, offline); index.serve(wheel) makes it a PEP 503 simple
    index that serves the wheel."""
    for k in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(k)
    root = tmp_path / "index"
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", (root / "simple").as_uri())
    monkeypatch.setenv("PIP_RETRIES", "0")

    class Index:
        url = (root / "simple").as_uri()

        @staticmethod
        def serve(wheel: Path) -> None:
            name = wheel.name.split("-")[0].replace("_", "-").lower()
            page = root / "simple" / name
            page.mkdir(parents=True, exist_ok=True)
            (root / "files").mkdir(exist_ok=True)
            (root / "files" / wheel.name).write_bytes(wheel.read_bytes())
            href = "../../files/" + wheel.name.replace("+", "%2B")
            (page / "index.html").write_text(f'<!DOCTYPE html><html><body><a href="{href}">{wheel.name}</a></body></html>\n')
    return Index


def relabel(wheel: Path, version: str, dest: Path) -> Path:
    """The wheel's own files under another version label (the dist-info renamed, METADATA's
    Version and RECORD rewritten): a release the wheelhouse lacks, made offline. The code is the
    original's, byte for byte; only the label differs (a PEP 440 local label says so)."""
    name, old = wheel.name.split("-")[:2]
    out = dest / wheel.name.replace(f"{name}-{old}-", f"{name}-{version}-")
    old_info, new_info = f"{name}-{old}.dist-info/", f"{name}-{version}.dist-info/"
    record = []
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            path = item.filename.replace(old_info, new_info, 1)
            if path == new_info + "RECORD":
                continue
            data = src.read(item)
            if path == new_info + "METADATA":
                data = re.sub(rb"(?m)^Version: .*$", f"Version: {version}".encode(), data, count=1)
            dst.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        dst.writestr(new_info + "RECORD", "\n".join(record + [new_info + "RECORD,,"]) + "\n")
    return out


def shared_cache(tmp_path: Path) -> Path:
    """A lint cache of the test's own whose hook environments are the shared warm ones: the
    verdicts this test sees are its own runs', never an earlier run's kept verdict."""
    cache = tmp_path / "lint-cache"
    cache.mkdir()
    for d in ("pre-commit", "mirrors"):
        (LINT_CACHE / d).mkdir(parents=True, exist_ok=True)
        (cache / d).symlink_to(LINT_CACHE / d)
    return cache


def moved(upstream: Path, old: str, new: str, message: str) -> None:
    """Upstream's main changes its pre-commit config (old -> new) in a commit of its own."""
    text = (upstream / CONFIG).read_text()
    assert old in text, old
    (upstream / CONFIG).write_text(text.replace(old, new, 1))
    sh("git", "-C", upstream, "commit", "-q", "-am", message)


def only(upstream: Path, repo: str) -> None:
    """Upstream's config with the hook repository repo alone (a config upstream could have; the
    other repositories' hooks would only make the case slower, not different)."""
    import yaml
    cfg = yaml.safe_load((upstream / CONFIG).read_text())
    cfg["repos"] = [r for r in cfg["repos"] if repo in r["repo"]]
    (upstream / CONFIG).write_text(yaml.safe_dump(cfg, sort_keys=False, width=1000))
    sh("git", "-C", upstream, "commit", "-q", "-am", f"Only {repo}'s hooks")


def lint(src: Path, cache: Path, report: Path) -> int:
    return main(["--root", str(ROOT), "lint", "--target", "main", "--src", str(src), "--cache", str(cache),
                 "--report", str(report)])


def guidelines(report: Path) -> checklist.Answer:
    """make pr's answer to the coding-guidelines item from this lint report (as make pr reads it)."""
    facts = checklist.Facts(explained=True, new_tests=(), mode="source", neighbours={}, ref="main",
                            lint=json.loads(report.read_text()))
    return checklist.answer(GUIDELINES, facts, ())


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("patchkit: error: "), err
    return lines[0]


@needs_hook_tools
@pytest.mark.parametrize(("repo", "old", "new", "hooks", "pin"), tiered(
    ("astral-sh/ruff-pre-commit", "rev: v0.9.4", "rev: v0.9.5", ["ruff", "ruff-format"], "ruff==0.9.5"),
    ("pycqa/isort", "rev: 5.12.0", "rev: 5.13.2", ["isort"], "isort==5.13.2")))
def test_a_bumped_rev_offline_is_not_run_with_pips_reason_and_the_command_that_fetches_it(
        upstream, tmp_path, house, index, capsys, repo, old, new, hooks, pin):
    """Upstream bumped a rev: lint said "not run here ... (make setup fetches it)" (false: the
    wheelhouse list is static), exited 0, and make pr ticked the coding-guidelines box."""
    only(upstream, repo)
    moved(upstream, old, new, f"Bump {repo}")
    report = tmp_path / "lint.json"
    assert lint(upstream, shared_cache(tmp_path), report) == ExitCode.TOOL_MISSING
    out = capsys.readouterr().out
    data = json.loads(report.read_text())
    assert sorted(data["tool_missing"]) == sorted(hooks) and not data["ok"], data
    for hook in hooks:
        why = data["not_run"][hook]
        assert why.startswith(f"{pin} is not in the wheelhouse {house} and pip could not fetch it (ERROR: "), why
        assert f"not run here: {hook} ({why})" in out
    assert "ran: none" in out and re.search(r"^verdict: not checked: the pinned tools of .* are missing here", out, re.M)
    answer = guidelines(report)
    assert answer.state == checklist.OPEN and all(h in answer.why for h in hooks), answer
    # The command it names fetches the pin, as printed, from the user's index.
    cmd = data["not_run"][hooks[0]].split("; fetch it with: ", 1)[1].rstrip(")")
    assert cmd == f"{shlex.quote(os.sys.executable)} -m pip download --disable-pip-version-check --only-binary :all: " \
                  f"--dest {shlex.quote(str(house))} {pin}"
    assert not any(house.glob(f"{pin.split('==')[0]}-{pin.split('==')[1]}-*.whl"))


def _isort_bumped_past_the_wheelhouse(upstream: Path, tmp_path: Path) -> tuple[str, Path, Path, Path]:
    """Upstream bumps isort to a version only a package index has (our wheel, relabelled);
    (the version, its wheel, where lint's report goes, a lint cache of its own)."""
    (ours,) = WHEELHOUSE.glob("isort-5.12.0-*.whl")
    label = "5.12.0+patchkit.relabelled"
    (tmp_path / "dist").mkdir()
    wheel = relabel(ours, label, tmp_path / "dist")
    only(upstream, "pycqa/isort")
    moved(upstream, "rev: 5.12.0", f"rev: {label}", "Bump isort")
    return label, wheel, tmp_path / "lint.json", shared_cache(tmp_path)


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps the offline bumped rev, not run with pip's reason
@needs_hook_tools
def test_a_bumped_pin_is_fetched_from_the_users_index_on_first_use_and_the_hook_runs(upstream, tmp_path, house,
                                                                                     index, capsys):
    """With a reachable index, the pin upstream bumped to is fetched into the wheelhouse (kept
    per version) and its hook runs with it; offline first, the printed command fetches it."""
    label, wheel, report, cache = _isort_bumped_past_the_wheelhouse(upstream, tmp_path)
    index.serve(wheel)
    assert lint(upstream, cache, report) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    data = json.loads(report.read_text())
    assert data["ran"] == ["isort"] and data["tools"]["isort"] == f"isort=={label}" and not data["memo"], data
    assert f"isort (isort=={label})" in out
    assert (house / wheel.name).is_file() and not (house / wheel.name).is_symlink()  # fetched, kept per version
    assert guidelines(report).state == checklist.DONE


@needs_hook_tools
@pytest.mark.slow  # make test-slow: make test keeps the fetch on first use above
def test_the_printed_fetch_command_runs_as_printed_and_the_hook_runs_after_it(upstream, tmp_path, house, index,
                                                                              capsys):
    label, wheel, report, cache = _isort_bumped_past_the_wheelhouse(upstream, tmp_path)
    assert lint(upstream, cache, report) == ExitCode.TOOL_MISSING  # the index is not there yet
    capsys.readouterr()
    cmd = json.loads(report.read_text())["not_run"]["isort"].split("; fetch it with: ", 1)[1].rstrip(")")
    index.serve(wheel)
    assert subprocess.run(cmd, shell=True, capture_output=True, text=True).returncode == 0
    assert (house / wheel.name).is_file()
    assert lint(upstream, cache, report) == 0
    data = json.loads(report.read_text())
    assert "isort" in data["ran"] and data["tools"]["isort"] == f"isort=={label}"


@needs_hook_tools
@pytest.mark.parametrize(("comment", "runs"), tiered(("  # frozen: v0.9.4", True), ("", False)))
def test_a_frozen_commit_rev_runs_the_version_its_comment_names(upstream, tmp_path, capsys, comment, runs):
    """`pre-commit autoupdate --freeze` writes a commit id with `# frozen: v0.9.4`: ruff 0.9.4
    runs; a commit with no such comment names no version here: not run (never exit 0 with
    nothing run), and the box stays open."""
    sha = "8a5d9ee6e6d1b0ab4c1c2b1d2d7ab1d8e5cb39b5"  # a commit id as autoupdate writes it (40 hex digits)
    only(upstream, "astral-sh/ruff-pre-commit")
    moved(upstream, "rev: v0.9.4", f"rev: {sha}{comment}", "Freeze ruff")
    report = tmp_path / "lint.json"
    code = lint(upstream, LINT_CACHE, report)
    data = json.loads(report.read_text())
    if runs:
        assert code == 0 and data["ran"] == ["ruff", "ruff-format"] and data["tools"]["ruff"] == "ruff==0.9.4", data
        assert guidelines(report).state == checklist.DONE
    else:
        assert code == ExitCode.TOOL_MISSING and data["ran"] == [] and "verdict: not checked" in capsys.readouterr().out
        assert data["not_run"]["ruff"].startswith(f"its rev is commit {sha[:12]} of https://github.com/astral-sh/"
                                                  "ruff-pre-commit, which names no version here"), data
        answer = guidelines(report)
        assert answer.state == checklist.OPEN and "ruff-format (its rev is commit" in answer.why


# Upstream's config as pre-commit rejects it, and what pre-commit says (its own words).
REJECTED = {
    "missing rev": ("    rev: v0.9.4\n", "", "At Repository(repo='https://github.com/astral-sh/ruff-pre-commit'): "
                    "Missing required key: rev"),
    "bad YAML": ("repos:\n", "repos: [\n", "while parsing a flow node"),
    "a list at the top": (None, "- repos\n", "Expected a Config map but got a list"),
    "a hook without id": ("    -   id: copyright-header\n", "    -   name: no id\n",
                          "At Hook(id=MISSING): Missing required key: id"),
    "fail_fast not a bool": ("repos:\n", 'fail_fast: "yes"\nrepos:\n', "At key: fail_fast: Expected bool got str"),
    "a rev that names no version": ("rev: v0.9.4", "rev: main", "which names no version of its tool"),
}


def _break(upstream: Path, case: str) -> str:
    old, new, said = REJECTED[case]
    if old is None:
        (upstream / CONFIG).write_text(new)
        sh("git", "-C", upstream, "commit", "-q", "-am", case)
    else:
        moved(upstream, old, new, case)
    return said


@pytest.mark.parametrize("case", tiered(*REJECTED))
def test_a_config_pre_commit_rejects_is_exit_2_with_its_reason_and_nothing_is_cached(upstream, tmp_path, capsys,
                                                                                      house, case):
    """A broken upstream config was an internal error (exit 70); a missing rev was let through."""
    said = _break(upstream, case)
    head = sh("git", "-C", upstream, "rev-parse", "HEAD").stdout.strip()
    report, cache = tmp_path / "lint.json", tmp_path / "cache"
    assert lint(upstream, cache, report) == ExitCode.USAGE
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"patchkit: error: pre-commit rejects upstream's {CONFIG} at main ({head[:12]}): "), line
    assert said in line, line
    data = json.loads(report.read_text())
    assert data["error"] == line.removeprefix("patchkit: error: ") and not data["ok"] and not data["ran"]
    assert not (cache / "verdicts").exists()  # never cached
    answer = guidelines(report)
    assert answer.state == checklist.OPEN and said in answer.why


@needs_hook_tools
@pytest.mark.parametrize(("old", "new", "said"), tiered(
    ("repos:\n", 'minimum_pre_commit_version: "99.0"\nrepos:\n', "pre-commit version 99.0 is required but version "),
    ("exclude: '(^third_party/)'\n", "exclude: '(^third_party/)'\ndefault_language_version:\n    python: python3.99\n",
     # What the tool that builds hook environments says, whole: uv (pre-commit-uv) or virtualenv.
     "stderr: error: No interpreter found for Python 3.99 in managed installations or search path" if HOOK_ENVS_BY_UV
     else "stdout: RuntimeError: failed to find interpreter for Builtin discover of python_spec='python3.99'")))
def test_what_this_machine_lacks_is_exit_5_with_pre_commits_whole_reason_never_a_pass(upstream, tmp_path, capsys,
                                                                                      old, new, said):
    """pre-commit exited 1 with no hook run: lint read "every hook that ran passes" (ran: none),
    kept that verdict, and the box was ticked; an interpreter's absence was cut at "stdout:"."""
    moved(upstream, old, new, "Upstream moves on")
    report, cache = tmp_path / "lint.json", shared_cache(tmp_path)
    assert lint(upstream, cache, report) == ExitCode.TOOL_MISSING
    line = one_error_line(capsys.readouterr().err)
    assert f"upstream's {CONFIG} at main (" in line and said in line, line
    assert not (cache / "verdicts").exists()
    assert guidelines(report).state == checklist.OPEN


@needs_hook_tools
@pytest.mark.slow  # a delta and a PR: make test-slow; make test asserts the item from each case's report above
@pytest.mark.parametrize("case", ["missing rev", "a hook without id"])
def test_make_pr_keeps_the_coding_guidelines_item_open_when_pre_commit_rejects_the_config(upstream, tmp_path,
                                                                                          capsys, case):
    """make pr was an internal error (exit 70) on a broken config, or ticked the box on ran: none."""
    said = _break(upstream, case)
    checkout = tmp_path / "trtllm"
    sh("git", "clone", "-q", upstream.as_uri(), checkout)
    report = tmp_path / "delta.json"  # the user's make delta, on this upstream commit
    assert delta_cmd.delta(patchset.load(ROOT, "main"), repo=Repo(checkout), mode="source", report=report).ok
    code = main(["--root", str(ROOT), "pr", "--target", "main", "--src", str(checkout), "--report", str(report),
                 "--signoff", "Jane Developer <jane.developer@example.com>", "--out", str(tmp_path / "out")])
    line = one_error_line(capsys.readouterr().err)
    assert code == ExitCode.MISMATCH, line
    assert f"item '{GUIDELINES}" in line and "make lint could not check the series: pre-commit rejects" in line
    assert said in line and not (tmp_path / "out").exists()


def test_test_coverage_says_which_hooks_did_not_run_and_that_the_item_stays_open():
    """The body said "`ruff` passed. Not run here: ..." as if the series were checked."""
    from patchkit.pr import body as body_mod
    stats = {k: 0 for k in ("passed", "failed", "error", "skipped", "not_run")}
    ctx = {"regression": [], "neighbours": [], "ref": "main", "commit": "0123456789ab", "unpatched_tree": "main",
           "how": "in source mode.", "unpatched": stats, "patched": stats,
           "counts": {k: 0 for k in ("fail_to_pass", "pass_to_pass", "pass_to_fail", "fail_to_fail")}, "waiver": None,
           "unrun": []}
    not_run = {"config_found": True, "ran": ["isort"], "tools": {"isort": "isort==5.12.0"}, "failures": [],
               "not_run": {"ruff": "ruff==0.9.5 is not in the wheelhouse /w and pip could not fetch it (x)"}}
    text = body_mod._render("pr_test_coverage.md.j2", {**ctx, "lint": body_mod._lint_summary(not_run)})
    # #33 item 7: the verdict in words, of the hooks that ran only
    assert text.count("Upstream's pre-commit hooks that could run here pass on the files the series changes") == 1
    assert ("ran: `isort` (isort==5.12.0). Not run here: `ruff` (ruff==0.9.5 is not in the wheelhouse /w and pip "
            "could not fetch it (x)); they select files of the series, so the coding-guidelines item stays open.") in text
    error = {"config_found": True, "ran": [], "failures": [], "not_run": {},
             "error": "pre-commit rejects upstream's .pre-commit-config.yaml at main (0123456789ab): Missing required key: rev"}
    text = body_mod._render("pr_test_coverage.md.j2", {**ctx, "lint": body_mod._lint_summary(error)})
    assert f"did not check the files the series changes: {error['error']}. The coding-guidelines item stays open." in text
    assert "hooks (`make lint`: the real" not in text

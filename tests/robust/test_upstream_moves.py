"""Verdicts that stay true when upstream moves (#24): each reproduction of the issue, on the
miniature, as a user meets it."""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess

import pytest

from patchkit import miniature, patchset
from patchkit.cli import main
from helpers import ROOT, build_once, copy_root, sh, state_of

UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"


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
    assert res["action"] == "retire" and res["tests"]["since"]["fixed"] and res["tests"]["until"]["fixed"]
    assert res["verdict"].startswith(f"fixed upstream at SINCE {res['since']['commit'][:12]} or before: ")
    assert f"retire {fix}: drop it from the series" in res["todo"]
    assert f"keep {test} as a PR" in res["todo"]
    assert f"keep {docs} as a PR: docs/source/models/encoder-decoder.md still says" in res["todo"]
    assert state_of(clone) == before


@pytest.mark.slow  # the second case of a status already held at SINCE: make test-slow (.ci/run)
def test_radar_since_equals_until_on_a_drifted_main(upstream, tmp_path, capsys, monkeypatch):
    """SINCE=UNTIL on a main where 0001 no longer applies as written. Was: exit 70. Now: said
    as so already at SINCE, exit 1, with the way on (an earlier SINCE); radar from there names
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
    assert out.rstrip().endswith("choose another SINCE (an earlier commit of the ref, where the set still applied)")
    assert main([*radar, "--since", "main~1"]) == 1
    out = capsys.readouterr().out
    assert f"verdict: {fix} stops applying cleanly at {tip[:12]} (" in out and "; 3-way merges it" in out
    hint = re.search(r"^run: (make apply .*THREEWAY=1)$", out, re.M).group(1)
    assert hint == f"make apply TRTLLM=main TRTLLM_SRC={clone} THREEWAY=1"
    ran = sh("make", "--no-print-directory", "-C", ROOT, *shlex.split(hint)[1:], check=False)
    assert ran.returncode == 0, ran.stderr


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
    monkeypatch.setattr(bench, "SECTIONS", (lambda root, w, opt: shutil.rmtree(w) or "cleared",))
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

"""make delta: both trees measured, classified and graded against the declared expectations."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from patchkit import patchset
from patchkit.cli import main
from patchkit.delta import command, compare
from patchkit.delta.run import ContainerRunner, TreeRun
from patchkit.errors import Hint
from patchkit.git import Repo
from helpers import ROOT, copy_root, sh, tiered

REGRESSION = "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"
NEIGHBOUR = "tests/unittest/_torch/executor/test_neighbour.py"


def run_delta(upstream: Path, target: str, tmp_path: Path, root: Path = ROOT, mode: str = "source", **kw):
    ps = patchset.load(root, target)
    return command.delta(ps, repo=Repo(upstream), mode=mode, report=tmp_path / "report" / f"{target}.json", **kw)


# make test-slow (.ci/run): make test measures both one-fix sets' deltas in make demo (test_make), the
# golden PR and the golden summary, and the report's schema 2 on a stack (test_stack_delta.py)
@pytest.mark.parametrize("target", tiered("rc25", "main", fast=0))
def test_declared_delta_is_measured_on_the_miniature(miniature_template, tmp_path, target):
    res = run_delta(miniature_template, target, tmp_path)
    [fx] = res.fixes
    assert res.ok, fx.mismatches + fx.invalid
    assert (fx.unpatched["failed"], fx.unpatched["passed"], fx.patched["passed"]) == (23, 7, 30)
    assert len(fx.fail_to_pass) == 23 and len(fx.pass_to_pass) == 7 and not fx.pass_to_fail
    report = json.loads(Path(res.report).read_text())
    for key in ("schema", "target", "mode", "upstream_ref", "upstream_commit", "ok", "valid", "matches_expected"):
        assert key in report
    [section] = report["fixes"]  # schema 2: a section per fix of the stack; a one-fix set has one
    assert (section["id"], section["kind"]) == ("19514", "ours") and report["schema"] == 2
    for key in ("tests", "unpatched", "patched", "fail_to_pass", "pass_to_pass", "pass_to_fail", "fail_to_fail",
                "expected", "matches_expected", "mismatches", "valid", "invalid", "junit", "fixed_upstream"):
        assert key in section
    assert report["upstream_commit"] == sh("git", "-C", miniature_template, "rev-parse", "v1.3.0rc25^{commit}"
                                           if target == "rc25" else "main").stdout.strip()
    assert section["unpatched"]["tests"][f"{REGRESSION}::test_whisper_large_v3_pool_holds_all_encoder_positions"] == "failed"
    for name in ("unpatched", "patched"):
        assert "<testsuite" in Path(fx.junit[name]).read_text()


@pytest.mark.slow  # make test-slow (.ci/run): a second delta on rc25
def test_rc25s_test_tells_the_verified_form_from_mains(miniature_template, tmp_path):
    """#25: rc25 carries the form verified on hardware, main a stated variant (variant.differs).
    rc25's regression test fails main's form of the fix on the tag in exactly the two generic
    names, which main keeps as a cap on max_input_len."""
    root = copy_root(tmp_path)
    ours = sorted((root / "patches" / "rc25").glob("0001-*.patch"))[0]
    ours.write_text(sorted((ROOT / "patches" / "main").glob("0001-*.patch"))[0].read_text())
    res = run_delta(miniature_template, "rc25", tmp_path, root=root)
    [fx] = res.fixes
    assert not res.ok
    assert sorted(t.split("::")[1] for t in fx.fail_to_fail) == [
        "test_every_declared_length_name_sizes_the_pool[max_position_embeddings]",
        "test_every_declared_length_name_sizes_the_pool[n_positions]"]


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_main_lists_the_container_only_neighbour_as_not_run(miniature_template, tmp_path):
    res = run_delta(miniature_template, "main", tmp_path)
    [fx] = res.fixes
    assert res.ok
    [(tid, why)] = {k.split("::")[0]: v for k, v in fx.not_run.items()}.items()
    assert tid.endswith("test_dual_pool_kv_cache.py") and "No module named 'torch'" in why
    [hint] = res.hints  # container mode, with the BASE a branch needs (#27 item 4)
    assert hint.command is None and [k for k, _v in hint.settings] == ["mode", "base"] and hint.settings[0][1] == "container"


def _edit_expected(root: Path, target: str, edit) -> None:
    meta = root / "patches" / target / "patchset.yaml"
    data = yaml.safe_load(meta.read_text())
    edit(data)
    meta.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_changed_expectation_fails_naming_the_tests(miniature_template, tmp_path, capsys):
    root = copy_root(tmp_path)
    _edit_expected(root, "rc25", lambda d: d["expected"]["source"][REGRESSION].update(unpatched={"passed": 8, "failed": 22}))
    code = main(["--root", str(root), "delta", "--target", "rc25", "--src", str(miniature_template),
                 "--report", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert code == 1
    assert "MISMATCH: " + REGRESSION + " unpatched: passed 7 (expected 8), failed 23 (expected 22)" in out
    assert "surplus: " + REGRESSION + "::test_declared_encoder_length_is_not_resized" in out
    assert json.loads((tmp_path / "r.json").read_text())["matches_expected"] is False


def _add_neighbour(upstream: Path, root: Path, body: str, expected: dict | None = None) -> None:
    (upstream / NEIGHBOUR).write_text(body)
    sh("git", "-C", upstream, "add", "-A")
    sh("git", "-C", upstream, "commit", "-qm", "A neighbour test")
    sh("git", "-C", upstream, "tag", "-f", "v1.3.0rc25")

    def edit(d):
        d["tests"]["neighbours"] = [NEIGHBOUR]
        if expected is not None:
            d["expected"]["source"][NEIGHBOUR] = expected
    _edit_expected(root, "rc25", edit)


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_pass_to_fail_in_a_neighbour_fails_the_delta(upstream, tmp_path):
    root = copy_root(tmp_path)
    _add_neighbour(upstream, root,
                   "from types import SimpleNamespace as NS\n"
                   "from tensorrt_llm._torch.pyexecutor._util import KvCacheCreator\n\n"
                   "def test_old_behaviour_max_input_len_wins():\n"
                   "    c = KvCacheCreator.__new__(KvCacheCreator)\n"
                   "    cfg = NS(decoder_layers=2, encoder_attention_heads=2, d_model=8, max_encoder_input_len=1500)\n"
                   "    c._model_engine = NS(model=NS(model_config=NS(pretrained_config=cfg)))\n"
                   "    c._max_seq_len, c._llm_args = 4096, NS(max_input_len=1024)\n"
                   "    assert c._get_cross_kv_cache_layout()[3] == 1024\n")
    res = run_delta(upstream, "rc25", tmp_path, root)
    [fx] = res.fixes
    assert fx.pass_to_fail == [f"{NEIGHBOUR}::test_old_behaviour_max_input_len_wins"]
    assert not res.ok and f"pass->fail: {NEIGHBOUR}::test_old_behaviour_max_input_len_wins" in fx.mismatches


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_collection_error_is_its_own_category_and_fails_when_named(upstream, tmp_path):
    root = copy_root(tmp_path)
    _add_neighbour(upstream, root, "def broken(:\n", expected={"patched": {"passed": 1}})
    res = run_delta(upstream, "rc25", tmp_path, root)
    [fx] = res.fixes
    assert fx.unpatched["error"] == 1 and fx.patched["error"] == 1
    assert any(m.startswith(f"{NEIGHBOUR} patched: passed 0 (expected 1), error 1 (expected 0)") for m in fx.mismatches)
    assert not res.ok


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_skipped_test_never_counts_as_passing(upstream, tmp_path):
    root = copy_root(tmp_path)
    _add_neighbour(upstream, root, "import pytest\n\ndef test_later():\n    pytest.skip('not today')\n",
                   expected={"unpatched": {"passed": 1}, "patched": {"passed": 1}})
    res = run_delta(upstream, "rc25", tmp_path, root)
    [fx] = res.fixes
    assert fx.patched["tests"][f"{NEIGHBOUR}::test_later"] == "skipped"
    assert fx.other == {f"{NEIGHBOUR}::test_later": "skipped->skipped"}
    assert not res.ok and any("skipped 1 (expected 0)" in m for m in fx.mismatches)


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_run_whose_collection_failed_is_invalid(upstream, tmp_path):
    root = copy_root(tmp_path)
    _edit_expected(root, "rc25", lambda d: d["tests"].update(regression=[NEIGHBOUR]))
    (upstream / NEIGHBOUR).write_text("def broken(:\n")  # the only declared test cannot be collected
    sh("git", "-C", upstream, "add", "-A")
    sh("git", "-C", upstream, "commit", "-qm", "x")
    sh("git", "-C", upstream, "tag", "-f", "v1.3.0rc25")
    res = run_delta(upstream, "rc25", tmp_path, root)
    [fx] = res.fixes
    assert not res.valid and any("collection failed" in why for why in fx.invalid)


@pytest.mark.parametrize("exitstatus, tests, why", [
    (0, {"a::t": {"outcome": "failed"}}, "exited 0 but reported 1 failing"),
    (1, {"a::t": {"outcome": "passed"}}, "exited 1 but reported no failure"),
    (2, {}, "interrupted"),
    (5, {}, "no tests collected"),
])
def test_exit_code_that_contradicts_outcomes_is_invalid(exitstatus, tests, why):
    assert why in compare.validity(TreeRun("patched", exitstatus, len(tests), tests))[0]


class FakeBuilder:
    """Records what the container runner asks a builder to run; answers as pytest in an image would."""

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.envs: list[dict] = []

    def inspect(self, image):
        """The base sets PYTHONPATH in its config, as some images do (#17 item 14); the other has none."""
        from patchkit.container.builders import Image
        return Image(image, "id", "sha256:" + "d" * 64, env={"PYTHONPATH": "/opt/deps"} if "nvcr.io" in image else {})

    def run(self, image, argv, *, mounts, workdir, env):
        tree = next(m.host for m in mounts if m.at == "/patchkit/tree")
        self.calls.append((image, argv, mounts, sorted(p.name for p in tree.iterdir())))
        self.envs.append(env)
        out = next(m.host for m in mounts if not m.read_only)
        n_fail = 23 if "nvcr.io" in image else 0
        tests = {f"{REGRESSION}::t{i}": {"outcome": "failed" if i < n_fail else "passed", "reason": ""} for i in range(30)}
        name = "unpatched" if n_fail else "patched"
        (out / f"{name}.json").write_text(json.dumps({"exitstatus": 1 if n_fail else 0, "collected": 30,
                                                      "tests": tests, "collect_errors": {}}))
        return SimpleNamespace(returncode=1 if n_fail else 0, stdout="", stderr="")


def test_container_mode_runs_the_same_selection_in_both_images(miniature_template, tmp_path):
    fake = FakeBuilder()
    images = ("nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc25", "localhost/trtllm:1.3.0rc25-abc")
    res = run_delta(miniature_template, "rc25", tmp_path, mode="container", runner=ContainerRunner(fake), images=images)
    [fx] = res.fixes
    assert res.ok and res.mode == "container"
    assert [c[0] for c in fake.calls] == list(images)
    for image, argv, mounts, listing in fake.calls:
        assert argv[:3] == ["python3", "-m", "pytest"] and argv[-1] == REGRESSION
        assert "--continue-on-collection-errors" in argv
        assert not any(a.startswith("--source-root") for a in argv)  # the image's installed package is tested
        assert next(m for m in mounts if m.at == "/patchkit/tree").read_only
        assert listing == ["tests"]  # no copy of the package beside the tests
    assert res.images == {"unpatched": {"name": images[0]}, "patched": {"name": images[1]}}
    # the plugin's folder is added to the image's own PYTHONPATH, never in its place
    assert [e["PYTHONPATH"] for e in fake.envs] == ["/opt/deps:/patchkit/plugin", "/patchkit/plugin"]


def test_container_mode_without_a_builder_says_so(miniature_template, tmp_path, monkeypatch, capsys):
    from patchkit.container import builders
    monkeypatch.setattr(builders, "BUILDERS", {})
    code = main(["--root", str(ROOT), "delta", "--target", "rc25", "--src", str(miniature_template),
                 "--mode", "container", "--report", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 5 and err == "patchkit: error: no image builder works here (docker, podman or buildah)\n"
    assert not (tmp_path / "r.json").exists()


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_declared_test_missing_at_the_ref_is_named(upstream, tmp_path):
    root = copy_root(tmp_path)
    _edit_expected(root, "rc25", lambda d: d["tests"].update(neighbours=["tests/unittest/test_gone.py"]))
    res = run_delta(upstream, "rc25", tmp_path, root)
    [fx] = res.fixes
    assert res.valid and not res.ok
    assert fx.mismatches == ["tests/unittest/test_gone.py: declared, but does not exist at refs/tags/v1.3.0rc25"]

"""make container carries compiled fixes (#32 item 2): rc25 with 19450 (the C++ guard) beneath our
fix builds the set's wheel in the devel image (no network), and lays over the release base, in
one layer, only the wheel's files that differ from the base's installed package (by content),
its RECORD rewritten (pip show and pip check stay true), ldconfig for the changed library; the
labels name the wheel. A base of another version is refused, naming both. Image builds:
make test-slow."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from cstore import SITE as INSTALLED, in_store, needs_tools, new_layer
from helpers import copy_project, sh
from patchkit.cli import main
from patchkit.container.builders import BUILDERS
from stacks import stacked
from wheels import build_wheel, tree_at, wheel_cache

pytestmark = [needs_tools, pytest.mark.slow]
SITE = INSTALLED.lstrip("/")  # the site-packages folder, as a layer's paths name it
LIB = "tensorrt_llm/libs/libtensorrt_llm.so"
ASK = ("from types import SimpleNamespace as S\nfrom tensorrt_llm._torch.pyexecutor.scheduler import needed_cross_blocks\n"
       "print(needed_cross_blocks(S(encoder_unique_tokens=None, encoder_output_len=1500), 32))\n")


def _project(tmp_path: Path, miniature: Path, ccache: Path) -> Path:
    """A copy of the project whose rc25 carries 19450 beneath our fix; its wheel cache's compiler
    caches are the session's (wheels.wheel_cache)."""
    root = copy_project(tmp_path / "project", "overlay")
    stacked(root, "rc25", miniature, tmp_path, pulls=("19450",))
    wheel_cache(root / "build" / "wheel-cache", ccache)
    return root


def _container(root: Path, src: Path, base: str, devel: str, *more: str) -> int:
    return main(["--root", str(root), "--json", "container", "--target", "rc25", "--src", str(src), "--base", base,
                 "--builder", "buildah", "--devel", devel, "--context", str(root / "ctx"),
                 "--wheel-out", str(root / "build" / "wheel"), "--wheel-cache", str(root / "build" / "wheel-cache"), *more])


def test_the_image_carries_the_wheels_differing_files_and_says_so(devel_image, wheel_release, miniature_template,
                                                                 tmp_path, capsys, compiler_cache):
    base, unpatched = wheel_release
    root, src = _project(tmp_path, miniature_template, compiler_cache), tmp_path / "trtllm"
    sh("git", "clone", "-q", miniature_template.as_uri(), src)
    assert _container(root, src, base, devel_image) == 0, capsys.readouterr().err
    res = json.loads(capsys.readouterr().out)
    info = json.loads((root / "build" / "wheel" / "rc25" / "wheel.json").read_text())
    wheel = root / "build" / "wheel" / "rc25" / info["wheel"]
    assert info["place"] == "image" and info["fenced"].startswith("no network")
    # labels name the wheel, its architectures and the devel image it was built in
    labels = res["labels"]
    assert (labels["io.patchkit.wheel.sha256"], labels["io.patchkit.wheel.archs"], labels["io.patchkit.devel.digest"]) == (
        info["sha256"], "120-real", info["devel_digest"])
    # the new layer: the wheel's files that differ from the base's, the rewritten RECORD, the linker's cache
    layer = {n for n, m in new_layer(res["image"], tmp_path).items() if not m.isdir()}
    record = f"{SITE}/tensorrt_llm-1.3.0rc25.dist-info/RECORD"
    assert layer == {f"{SITE}/{LIB}", f"{SITE}/tensorrt_llm/_torch/pyexecutor/_util.py", record, "etc/ld.so.cache"}
    with zipfile.ZipFile(wheel) as zf, zipfile.ZipFile(unpatched) as old:
        same = [n for n in zf.namelist() if n in old.namelist() and zf.read(n) == old.read(n)]
        lib = zf.read(LIB)
    assert same and not {f"{SITE}/{n}" for n in same} & layer  # what the base already has is not laid again
    assert res["wheel"]["copied"] == 3 and res["wheel"]["unchanged"] == len(same)
    # in the image: the wheel's library (the guard), pip show and pip check true
    run = lambda *argv: BUILDERS["buildah"].run(res["image"], list(argv), mounts=[], workdir="/", env={})  # noqa: E731
    summed = run("sha256sum", f"/{SITE}/{LIB}")
    assert summed.returncode == 0 and summed.stdout.split(), (summed.returncode, summed.stderr)  # the builder's words
    assert summed.stdout.split()[0] == __import__("hashlib").sha256(lib).hexdigest()
    assert run("python3", "-c", ASK).stdout.strip() == "47"
    show = run("python3", "-m", "pip", "show", "-f", "tensorrt_llm").stdout
    assert "Version: 1.3.0rc25" in show and LIB in show
    assert "No broken requirements found." in run("python3", "-m", "pip", "check").stdout
    # the wheel is the stack's: a second make container builds no wheel
    before = (root / "build" / "wheel" / "rc25" / "wheel.json").read_bytes()
    assert _container(root, src, base, devel_image) == 0
    assert (root / "build" / "wheel" / "rc25" / "wheel.json").read_bytes() == before
    capsys.readouterr()
    # make delta MODE=container (#32 item 3): 19450 carries no test; the unit test of the file it
    # compiles runs in the devel image's build tree, through its own cmake and ctest
    assert main(["--root", str(root), "--json", "delta", "--target", "rc25", "--src", str(src), "--mode", "container",
                 "--base", base, "--builder", "buildah", "--devel", devel_image, "--report", str(tmp_path / "d.json"),
                 "--wheel-out", str(root / "build" / "wheel"), "--wheel-cache", str(root / "build" / "wheel-cache")]) == 0
    cpp = json.loads(capsys.readouterr().out)["cpp"]["19450"]
    assert cpp["targets"] == {"capacitySchedulerTest": {
        "why": "the unit test of cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp", "files": [],
        "unpatched": "passed", "patched": "passed"}}
    assert cpp["where"].startswith(f"{devel_image} ({info['devel_digest'][:19]}), build tree ")


def test_a_base_of_another_release_is_refused_naming_both(devel_image, storage, miniature_template, tmp_path, capsys,
                                                          compiler_cache):
    from patchkit.container.bases import make_base
    main_wheel = build_wheel(tree_at(miniature_template, "main", tmp_path / "main"), tmp_path / "mainbuild", compiler_cache)
    with in_store(storage):
        other = make_base("localhost/test-wheelrelease:1.3.0rc26", None, INSTALLED, python=True, wheel=main_wheel)
    root, src = _project(tmp_path, miniature_template, compiler_cache), tmp_path / "trtllm"
    sh("git", "clone", "-q", miniature_template.as_uri(), src)
    assert _container(root, src, other, devel_image, "--wheel-build", "host") == 3
    err = capsys.readouterr().err
    assert (f"{other} has tensorrt_llm 1.3.0rc26 installed, the wheel tensorrt_llm-1.3.0rc25-py3-none-linux_x86_64.whl "
            "is 1.3.0rc25") in err and err.count("\n") == 1
    assert not (root / "ctx").exists()

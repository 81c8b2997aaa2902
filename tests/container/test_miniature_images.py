"""The miniature's stand-in images (#32 item 5): a devel image with a real compiler (this
machine's toolchain copied in) builds the miniature's wheel with its own script, and a release
image has the unpatched wheel installed by pip (pip show and pip check true in it)."""
from __future__ import annotations

import pytest

from cstore import SITE, needs_tools
from helpers import sh
from patchkit.container.builders import BUILDERS, Mount

pytestmark = [needs_tools, pytest.mark.slow]  # image builds: make test-slow

ASK = ("from types import SimpleNamespace as S\nfrom tensorrt_llm._torch.pyexecutor.scheduler import needed_cross_blocks\n"
       "try:\n    print(needed_cross_blocks(S(encoder_unique_tokens=None, encoder_output_len=1500), 32))\n"
       "except RuntimeError as exc:\n    print('RuntimeError:', exc)\n")


def test_the_devel_stand_in_builds_the_wheel_with_the_trees_own_script(devel_image, miniature_template, tmp_path):
    tree = tmp_path / "src"
    sh("git", "clone", "-q", miniature_template.as_uri(), tree)
    sh("git", "-C", tree, "checkout", "-q", "--detach", "v1.3.0rc25")
    (tmp_path / "ccache").mkdir()
    buildah = BUILDERS["buildah"]
    res = buildah.run(devel_image, ["python3", "scripts/build_wheel.py", "--no-venv", "-j", "2", "-a", "120-real",
                                    "--use_ccache", "--benchmarks"],
                      mounts=[Mount(tree, "/src/tensorrt_llm", read_only=False),
                              Mount(tmp_path / "ccache", "/root/.cache/ccache", read_only=False)],
                      workdir="/src/tensorrt_llm", env={"CCACHE_DIR": "/root/.cache/ccache"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Building CXX object tensorrt_llm/CMakeFiles/tensorrt_llm.dir/batch_manager/capacityScheduler.cpp.o" in res.stdout
    [wheel] = (tree / "build").glob("tensorrt_llm-1.3.0rc25-*.whl")
    assert any((tmp_path / "ccache").rglob("*")), "ccache wrote its cache to the mounted folder"
    res = buildah.run(devel_image, ["g++", "--version"], mounts=[], workdir="/", env={})
    assert res.returncode == 0 and sh("g++", "--version").stdout.splitlines()[0] == res.stdout.splitlines()[0]


def test_the_release_stand_in_has_the_wheel_installed_by_pip(wheel_release, tmp_path):
    image, wheel = wheel_release
    buildah = BUILDERS["buildah"]
    run = lambda *argv: buildah.run(image, list(argv), mounts=[], workdir="/", env={})  # noqa: E731
    show = run("python3", "-m", "pip", "show", "-f", "tensorrt_llm")
    assert show.returncode == 0 and "Version: 1.3.0rc25" in show.stdout, show.stderr
    assert f"Location: {SITE}" in show.stdout and "tensorrt_llm/libs/libtensorrt_llm.so" in show.stdout
    check = run("python3", "-m", "pip", "check")
    assert check.returncode == 0 and "No broken requirements found." in check.stdout, check.stdout + check.stderr
    said = run("python3", "-c", ASK)
    assert said.stdout.strip() == "RuntimeError: bad optional access", said.stderr

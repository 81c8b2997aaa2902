"""The miniature grows upstream's build (#32 item 5): a C++ library of our own under cpp/, built
by a scripts/build_wheel.py in upstream's shape (its flags differ between the tag and main, as
upstream's do) into tensorrt_llm/libs/libtensorrt_llm.so inside a real wheel, called from
Python through ctypes; PR 19450 guards the three unguarded dereferences, 19302 (squash-merged on
main) too, with a C++ unit test that ctest runs. Compiled for real with g++; the stand-in devel
image (this machine's toolchain) and the release image (the unpatched wheel installed by pip)
are built in make test-slow."""
from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers import sh
from wheels import SCRIPT, ask, build_wheel, ccache_env, tree_at
CPP = "cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp"
CPP_TEST = "cpp/tests/unit_tests/batch_manager/capacitySchedulerTest.cpp"
@pytest.mark.slow  # a cold build: make test keeps tests/wheel/test_wheel.py's, which builds through make wheel
def test_the_tags_wheel_is_built_by_its_own_script_and_its_library_fails_a_whisper_request(miniature_template, tmp_path,
                                                                                          compiler_cache):
    """v1.3.0rc25's library dereferences the empty encoder tokens: `RuntimeError: bad optional
    access`, as upstream's release does for every default Whisper request."""
    tree = tree_at(miniature_template, "v1.3.0rc25", tmp_path / "rc25")
    wheel = build_wheel(tree, tmp_path, compiler_cache, "--benchmarks", "--extra-cmake-vars", "NVRTC_DYNAMIC_LINKING=ON")
    assert wheel.name == "tensorrt_llm-1.3.0rc25-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        record = zf.read("tensorrt_llm-1.3.0rc25.dist-info/RECORD").decode().splitlines()
        for row in record:  # RECORD names every file of the wheel with its sha256 and size
            path, digest, size = row.rsplit(",", 2)
            if path.endswith("/RECORD"):
                continue
            data = zf.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (f"sha256={want}", len(data)), path
    assert "tensorrt_llm/libs/libtensorrt_llm.so" in names and len(record) == len(names)
    assert (tree / "cpp" / "build" / "benchmarks" / "capacitySchedulerBenchmark").is_file()  # --benchmarks, on the tag
    assert ask(wheel, tmp_path / "site") == {"archs": "120-real", "tokens": 47, "features": "RuntimeError: bad optional access"}


def test_the_tag_and_main_accept_different_flags(miniature_template, tmp_path):
    """As upstream's: --benchmarks and --trt_root are gone on main, --skip_requirements is new."""
    for rev, gone in (("v1.3.0rc25", "--skip_requirements"), ("main", "--benchmarks"), ("main", "--trt_root=/x")):
        script = sh("git", "-C", miniature_template, "show", f"{rev}:{SCRIPT}").stdout
        (tmp_path / "build_wheel.py").write_text(script)
        res = subprocess.run([sys.executable, tmp_path / "build_wheel.py", gone], text=True, capture_output=True)
        assert res.returncode == 2 and "unrecognized arguments" in res.stderr, (rev, gone, res.stderr)


@pytest.mark.slow  # two more compiles: make test keeps the tag's wheel above
def test_19450s_guard_reaches_the_library_and_19302s_unit_test_fails_without_its_guard(miniature_template, tmp_path,
                                                                                      compiler_cache):
    """19450 touches the C++ file alone: its wheel's library schedules the feature-fed request.
    19302's C++ unit test, on the tag with its test file alone, fails in ctest; with the fix it
    passes (the tree's own test runner)."""
    patch = tmp_path / "19450.patch"
    patch.write_text(sh("git", "-C", miniature_template, "diff", "refs/pull/19450/head~1", "refs/pull/19450/head").stdout)
    assert sh("git", "-C", miniature_template, "diff", "--name-only", "refs/pull/19450/head~1", "refs/pull/19450/head").stdout \
        .split() == [CPP]
    tree = tree_at(miniature_template, "v1.3.0rc25", tmp_path / "guarded", patch)
    assert ask(build_wheel(tree, tmp_path / "a", compiler_cache), tmp_path / "site")["features"] == 47
    squash = sh("git", "-C", miniature_template, "log", "-1", "--format=%H", "--grep=(#19302)", "main").stdout.strip()
    for name, extra in (("without", ()), ("with", (CPP,))):
        both = tmp_path / f"{name}.patch"
        both.write_text(sh("git", "-C", miniature_template, "diff", f"{squash}~1", squash, "--", CPP_TEST, *extra).stdout)
        tree = tree_at(miniature_template, "v1.3.0rc25", tmp_path / name, both)
        build, env = tree / "cpp" / "build", ccache_env(compiler_cache, tree)
        sh("cmake", "-S", tree / "cpp", "-B", build, "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", env=env)
        sh("cmake", "--build", build, "--target", "capacitySchedulerTest", env=env)
        res = sh("ctest", "--test-dir", build, "-R", "^capacitySchedulerTest$", "--output-on-failure", check=False)
        assert (res.returncode == 0) == (name == "with"), res.stdout
        if name == "without":
            assert "FeatureFedEncoderReusesNothing" in res.stdout and "bad optional access" in res.stdout

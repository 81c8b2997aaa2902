"""make wheel's flags (#32 item 1): read from the tree at the ref, never from a list kept here,
never by running the PR's code: scripts/build_wheel.py's argparse options found with ast, and how
docker/Makefile composes BUILD_WHEEL_ARGS. A setting the ref's script does not accept is never
passed, and the plan says what was passed and why."""
from __future__ import annotations

import pytest

from helpers import sh
from patchkit.errors import Conflict
from patchkit.wheel import flags

PLAN = dict(archs="120-real", archs_from="CUDA_ARCHS", jobs=2, jobs_why="JOBS=2", ccache="/ccache", ninja=True,
            reconfigure="")


def _at(miniature, rev: str, path: str) -> str | None:
    res = sh("git", "-C", miniature, "show", f"{rev}:{path}", check=False)
    return res.stdout if res.returncode == 0 else None


def _plan(miniature, rev: str, **kw) -> flags.Plan:
    script = flags.read_script(_at(miniature, rev, flags.SCRIPT))
    composed = flags.compose(_at(miniature, rev, flags.MAKEFILE), _at(miniature, rev, flags.DOCKERFILE), "120-real")
    return flags.plan(script, composed, **{**PLAN, **kw})


def test_the_tag_and_main_are_each_passed_only_what_their_script_accepts(miniature_template):
    rc25, main = _plan(miniature_template, "v1.3.0rc25"), _plan(miniature_template, "main")
    assert rc25.argv == ["--benchmarks", "--extra-cmake-vars", "NVRTC_DYNAMIC_LINKING=ON", "--cuda_architectures",
                         "120-real", "--job_count", "2", "--use_ccache", "--no-venv", "--generator", "Ninja"]
    assert main.argv == ["--extra-cmake-vars", "NVRTC_DYNAMIC_LINKING=ON", "--cuda_architectures", "120-real",
                         "--job_count", "2", "--use_ccache", "--no-venv", "--skip_requirements", "--generator", "Ninja"]
    said = {s.setting: s.why for s in rc25.skipped}
    assert said["--skip_requirements"] == flags.NOT_ACCEPTED  # main's script has it, the tag's does not
    assert said["--clean"].startswith("the build tree is kept between builds")
    why = {f.args[0]: f.why for f in rc25.passed}
    assert why["--benchmarks"] == "docker/Makefile's BUILD_WHEEL_ARGS (the Dockerfile's default)"
    assert why["--extra-cmake-vars"] == "docker/Makefile's BUILD_WHEEL_ARGS"
    assert {s.setting for s in main.skipped} == {"--clean"}


def test_options_are_found_by_reading_not_running(tmp_path):
    """The script is never run: a module that would do harm when imported is only read."""
    text = ("import os\nos.system('touch " + str(tmp_path / "ran") + "')\n"
            "def add_arguments(p):\n    p.add_argument('--job_count', '-j', nargs='?')\n"
            "    p.add_argument('--use_ccache', action='store_true')\n    p.add_argument('-D', '--extra-cmake-vars', action='append')\n")
    script = flags.read_script(text)
    assert not (tmp_path / "ran").exists()
    assert script.option("-j").takes_value and script.option("-j").optional_value
    assert not script.option("--use_ccache").takes_value and script.option("--extra-cmake-vars").long == "--extra-cmake-vars"
    with pytest.raises(Conflict, match="declares no option"):
        flags.read_script("print('no argparse here')\n")
    with pytest.raises(Conflict, match="is not Python"):
        flags.read_script("def (:\n")


@pytest.mark.parametrize("makefile, tokens, note", [
    ("BUILD_WHEEL_ARGS ?= $(shell grep '^ARG BUILD_WHEEL_ARGS=' Dockerfile.multi | grep -o '=.*' | tr -d '=\"') "
     "--extra-cmake-vars NVRTC_DYNAMIC_LINKING=ON$(if $(CUDA_ARCHS), --cuda_architectures $(CUDA_ARCHS))"
     "$(if $(BUILD_WHEEL_OPTS), $(BUILD_WHEEL_OPTS))\n",
     ["--clean", "--benchmarks", "--extra-cmake-vars", "NVRTC_DYNAMIC_LINKING=ON", "--cuda_architectures", "120-real"], ""),
    ("BUILD_WHEEL_ARGS ?= $(filter-out x,$(OTHER))\n", [], "is more make than make wheel reads"),
    ("IMAGE ?= x\n", [], "does not set BUILD_WHEEL_ARGS"),
])
def test_docker_makefiles_composition_is_read_or_said_unread(makefile, tokens, note):
    composed = flags.compose(makefile, 'ARG BUILD_WHEEL_ARGS="--clean --benchmarks"\n', "120-real")
    assert [t for t, _o in composed.tokens] == tokens and note in composed.note

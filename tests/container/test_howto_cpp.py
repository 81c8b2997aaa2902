"""The how-to "Get a C++ fix into an image" runs as written (#32 item 7), as tests/test_howto.py
runs the others: its console block typed, step by step, into one shell in the project, on the
miniature: make backport of 19450 (the C++ guard), make wheel in the devel image, make container
over the release, make delta MODE=container. The set's container.base and container.devel are
NVIDIA's images; here BASE and DEVEL (make reads them from the environment, as a reader's make
would) are the stand-ins: the release with the tag's wheel installed by pip, and a devel image
with this machine's toolchain. Image builds: make test-slow."""
from __future__ import annotations

import pytest

import walkthrough
from cstore import needs_tools
from helpers import ROOT
from wheels import wheel_cache

pytestmark = [needs_tools, pytest.mark.slow]
PAGE = ROOT / "docs" / "how-to" / "get-a-cpp-fix-into-an-image.md"


def test_the_cpp_how_to_runs_as_written(devel_image, wheel_release, tmp_path, compiler_cache):
    base, _wheel = wheel_release
    wheel_cache(tmp_path / "build" / "wheel-cache", compiler_cache)  # the run's BUILD is tmp_path/build
    steps = walkthrough.steps(PAGE.read_text())
    assert [s.command.split()[1] for s in steps if s.command.startswith("make ")][-4:] == [
        "backport", "wheel", "container", "delta"]
    ran = walkthrough.run(steps, tmp_path, {"BASE": base, "DEVEL": devel_image, "BUILDER": "buildah"})
    assert len(ran) == len(steps) - 1 and all(r.as_shown() for r in ran), walkthrough.report(ran)
    # what the page says each step printed, it printed (the lines it explains, not the run's own paths)
    said = {r.step.command.split()[1]: r.stdout for r in ran if r.step.command.startswith("make ")}
    for step, line in [("backport", "run: make wheel TRTLLM=rc25 TRTLLM_SRC="),
                       ("backport", "rc25 now needs a wheel build: fix 19450 changes cpp/"),
                       ("wheel", "compiled 30 translation unit(s)"),
                       ("wheel", "  --skip_requirements  the ref's scripts/build_wheel.py does not accept it"),
                       ("container", "3 file(s) differ from the base's tensorrt_llm 1.3.0rc25"),
                       ("container", "  overlaid tensorrt_llm/libs/libtensorrt_llm.so"),
                       ("delta", "fail->pass  23"),
                       ("delta", "  capacitySchedulerTest  passed     passed"),
                       ("delta", "verdict: every fix matches the declared delta")]:
        assert line in PAGE.read_text() and line in said[step], (step, line, said[step][-1500:])

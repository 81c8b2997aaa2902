"""The builder registry: one interface, three command lines; choosing the first that works."""
from __future__ import annotations

from pathlib import Path

import pytest

from patchkit.container import builders
from patchkit.errors import BadInput, CommandError, ToolMissing


@pytest.mark.parametrize("name, expected", [
    ("docker", ["docker", "build", "--iidfile", "/i", "-f", "/ctx/Containerfile", "/ctx"]),
    ("podman", ["podman", "build", "--iidfile", "/i", "-f", "/ctx/Containerfile", "/ctx"]),
    ("buildah", ["buildah", "bud", "--isolation", "chroot", "--layers=false", "--iidfile", "/i",
                 "-f", "/ctx/Containerfile", "/ctx"]),
])
def test_each_builder_builds_the_rendered_context(name, expected):
    assert builders.BUILDERS[name].build_command(Path("/ctx"), Path("/i")) == expected


class _Fake:
    def __init__(self, name, works):
        self.name, self.works = name, works

    def problem(self):
        return None if self.works else f"{self.name}: Cannot connect to the daemon"


def test_default_is_the_first_builder_that_works(monkeypatch):
    monkeypatch.setattr(builders, "BUILDERS", {"docker": _Fake("docker", False), "podman": _Fake("podman", False),
                                               "buildah": _Fake("buildah", True)})
    assert builders.pick(None).name == "buildah"
    with pytest.raises(ToolMissing, match="docker does not work on this machine: docker: Cannot connect") as exc:
        builders.pick("docker")
    assert exc.value.setting == "builder"  # said as BUILDER or --builder by the CLI
    with pytest.raises(BadInput, match="unknown image builder 'kaniko'") as exc:  # exit 2, as a bad choice (#24)
        builders.pick("kaniko")
    assert exc.value.setting == "builder"


def test_none_works_says_why_for_each(monkeypatch):
    monkeypatch.setattr(builders, "BUILDERS", {"docker": _Fake("docker", False), "buildah": _Fake("buildah", False)})
    with pytest.raises(ToolMissing) as info:
        builders.pick(None)
    assert str(info.value) == ("no image builder works here (docker, podman or buildah); "
                               "docker: docker: Cannot connect to the daemon; buildah: buildah: Cannot connect to the daemon")


@pytest.mark.parametrize("stderr, stdout, said", [
    # buildah: retries as warnings, then its verdict; the reason is the verdict, not "Trying to pull"
    ("Trying to pull localhost/nope:1...\n"
     'time="2026-11-30T00:20:26Z" level=warning msg="Failed, retrying in 2s ... (1/3). Error: x"\n'
     'Error: initializing source docker://localhost/nope:1: pinging container registry localhost: connection refused\n',
     "", "initializing source docker://localhost/nope:1: pinging container registry localhost: connection refused"),
    ("Getting image source signatures\nCopying blob 1234\nError: writing blob: unauthorized\n", "",
     "writing blob: unauthorized"),
    ("Error response from daemon: manifest for nope:1 not found\n", "", "manifest for nope:1 not found"),
    ('time="x" level=error msg="Failed to GetDriver graph nope /g"\n', "", "Failed to GetDriver graph nope /g"),
    ("", "STEP 1/2: FROM x\nsomething broke\n", "something broke"),
    ("", "", "buildah exited 125"),
])
def test_the_reason_is_the_builders_own_last_word(stderr, stdout, said):
    assert builders.reason(CommandError(["buildah", "pull"], 125, stdout, stderr)) == said


def test_docker_runs_tests_without_network_with_the_mounts():
    cmd = builders.BUILDERS["docker"].run_command(
        "img:1", ["python3", "-m", "pytest"], mounts=[builders.Mount(Path("/t"), "/patchkit/tree"),
                                                     builders.Mount(Path("/o"), "/patchkit/out", False)],
        workdir="/patchkit/tree", env={"PYTHONPATH": "/p"})
    assert cmd == ["docker", "run", "--rm", "--network=none", "-v", "/t:/patchkit/tree:ro", "-v", "/o:/patchkit/out",
                   "-w", "/patchkit/tree", "-e", "PYTHONPATH=/p", "img:1", "python3", "-m", "pytest"]


class _Store:
    """A builder whose store holds the given images; runs nothing."""

    name = "buildah"

    def __init__(self, images):
        self.images = images

    def problem(self):
        return None

    def inspect(self, image):
        return self.images.get(image)


@pytest.mark.parametrize("changed, said", [
    ("io.patchkit.upstream.commit", "built for upstream commit 000000000000 (now cccccccccccc)"),
    ("io.patchkit.patchset.sha256", "built for patch set 000000000000 (now {hash})"),
    ("org.opencontainers.image.base.digest", "built for base digest 000000000000 (now dddddddddddd)"),
])
def test_an_image_built_from_other_inputs_is_stale(monkeypatch, changed, said):
    from patchkit import patchset
    from patchkit.container.build import image_name
    from patchkit.delta import images
    from patchkit.errors import Conflict
    from helpers import ROOT
    ps = patchset.load(ROOT, "rc25")
    base = builders.Image("localhost/b:1", "id0", "sha256:" + "d" * 64)
    labels = {"io.patchkit.upstream.commit": "c" * 40, "io.patchkit.patchset.sha256": ps.content_hash,
              "org.opencontainers.image.base.digest": base.digest}
    patched = builders.Image(image_name(ps, base.name), "id1", "sha256:" + "e" * 64, labels)
    monkeypatch.setattr(builders, "BUILDERS", {"buildah": _Store({base.name: base, patched.name: patched})})
    assert images.resolve(ps, commit="c" * 40, base=base.name, builder_name="buildah").patched == patched
    labels[changed] = ("sha256:" if "digest" in changed else "") + "0" * 40
    with pytest.raises(Conflict) as info:
        images.resolve(ps, commit="c" * 40, base=base.name, builder_name="buildah")
    assert str(info.value) == f"{patched.name} is stale: " + said.format(hash=ps.content_hash[:12])

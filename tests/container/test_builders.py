"""The builder registry: one interface, three command lines; choosing the first that works."""
from __future__ import annotations

from pathlib import Path

import pytest

from patchkit.container import builders
from patchkit.errors import ToolMissing


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

    def available(self):
        return self.works


def test_default_is_the_first_builder_that_works(monkeypatch):
    monkeypatch.setattr(builders, "BUILDERS", {"docker": _Fake("docker", False), "podman": _Fake("podman", False),
                                               "buildah": _Fake("buildah", True)})
    assert builders.pick(None).name == "buildah"
    with pytest.raises(ToolMissing, match="BUILDER=docker does not work on this machine"):
        builders.pick("docker")
    with pytest.raises(ToolMissing, match="unknown BUILDER 'kaniko'"):
        builders.pick("kaniko")

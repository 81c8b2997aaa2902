"""What the container tests share: a private buildah store (vfs storage, chroot isolation, no
daemon) for the whole session, and the images built in it once."""
from __future__ import annotations

import pytest

from cstore import SITE, in_store, missing
from helpers import sh


@pytest.fixture(scope="session")
def storage(tmp_path_factory):
    d = tmp_path_factory.mktemp("containers")
    conf = d / "storage.conf"
    conf.write_text(f'[storage]\ndriver = "vfs"\ngraphroot = "{d}/graph"\nrunroot = "{d}/run"\n')
    return conf


@pytest.fixture(autouse=True)
def container_env(storage, monkeypatch):
    monkeypatch.setenv("CONTAINERS_STORAGE_CONF", str(storage))
    monkeypatch.setenv("BUILDAH_ISOLATION", "chroot")


@pytest.fixture(scope="session")
def release_tree(miniature_template, tmp_path_factory):
    """The miniature at v1.3.0rc25, as the release image would have installed it."""
    tree = tmp_path_factory.mktemp("rc25tree")
    sh("git", "-C", miniature_template, "worktree", "add", "-q", "--detach", tree, "v1.3.0rc25")
    yield tree
    sh("git", "-C", miniature_template, "worktree", "remove", "--force", tree)


@pytest.fixture(scope="session")
def python_release(storage, release_tree):
    """A base image shaped like the rc25 release: Python with pytest, and the miniature's
    tensorrt_llm in the set's site_packages. Built once a session: the slow part."""
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    from patchkit.container.testbase import make_base
    with in_store(storage):
        return make_base("localhost/test-pyrelease:1.3.0rc25", release_tree, SITE, python=True)

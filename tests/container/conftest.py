"""What the container tests share: a private buildah store (overlay or vfs storage, chroot
isolation, no daemon) for the whole session, and the images built in it once."""
from __future__ import annotations

import shutil

import pytest

from patchkit.bench import store
from cstore import SITE, in_store, missing
from helpers import sh
from wheels import build_wheel, tree_at


@pytest.fixture(scope="session")
def storage(tmp_path_factory):
    """The session's store: overlay storage where this machine can mount it (vfs copies a whole
    image for every `buildah from`, most of these tests' time), else vfs."""
    d = tmp_path_factory.mktemp("containers")
    conf = d / "storage.conf"
    for driver in ("overlay", "vfs"):
        conf.write_text(f'[storage]\ndriver = "{driver}"\ngraphroot = "{d}/graph"\nrunroot = "{d}/run"\n')
        if driver == "vfs" or missing or _mounts(conf):
            break
        shutil.rmtree(d / "graph", ignore_errors=True)
        shutil.rmtree(d / "run", ignore_errors=True)
    yield conf
    # skopeo leaves an overlay store mounted: shut it down, or the session's folder stays
    # mounted under the temporary root and pytest cannot remove it (#24 item 8).
    store.shutdown(conf)


def _mounts(conf) -> bool:
    """Whether buildah can make and mount a container with this storage.conf."""
    with in_store(conf):
        made = sh("buildah", "from", "scratch", check=False)
        if made.returncode != 0:
            return False
        ctr = made.stdout.strip()
        ok = sh("buildah", "mount", ctr, check=False).returncode == 0
        sh("buildah", "rm", ctr, check=False)
    return ok


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
def python_base(storage, miniature_template, tmp_path_factory):
    """python_base(ref): an image shaped like a release built from that ref of the miniature:
    Python with pytest, and the miniature's tensorrt_llm in the sets' site_packages. Each is
    built once a session: the slow part."""
    from patchkit.container.bases import make_base
    built: dict[str, str] = {}

    def get(ref: str) -> str:
        if missing:
            pytest.skip(f"needs {', '.join(missing)}")
        if ref not in built:
            tree = tmp_path_factory.mktemp("tree")
            sh("git", "-C", miniature_template, "worktree", "add", "-q", "--detach", tree, ref)
            with in_store(storage):
                built[ref] = make_base(f"localhost/test-pyrelease:{ref.lstrip('v')}", tree, SITE, python=True)
            sh("git", "-C", miniature_template, "worktree", "remove", "--force", tree)
        return built[ref]
    return get


@pytest.fixture(scope="session")
def python_release(python_base):
    """The rc25 release, as python_base makes it."""
    return python_base("v1.3.0rc25")


@pytest.fixture(scope="session")
def devel_image(storage):
    """The stand-in devel image: this machine's toolchain, CMake, ccache and Python (#32 item 5),
    built once a session."""
    from patchkit.container.bases import make_devel
    from patchkit.errors import ToolMissing
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    with in_store(storage):
        try:
            return make_devel("localhost/test-devel:1.3.0rc25")
        except ToolMissing as exc:
            pytest.skip(exc.message)


@pytest.fixture(scope="session")
def wheel_release(storage, miniature_template, tmp_path_factory, compiler_cache):
    """The stand-in release image (#32 item 5): Python with pytest and pip, and the miniature's
    v1.3.0rc25 wheel, built by its own script on this machine, installed by pip in the sets'
    site_packages (its .dist-info and RECORD as upstream's release has them); and that wheel."""
    from patchkit.container.bases import make_base
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    work = tmp_path_factory.mktemp("releasewheel")
    tree = tree_at(miniature_template, "v1.3.0rc25", work / "tree")
    wheel = build_wheel(tree, work, compiler_cache)
    with in_store(storage):  # stand-ins for what the tree's tests import and the release has (tqdm, torch)
        return make_base("localhost/test-wheelrelease:1.3.0rc25", tree, SITE, python=True, wheel=wheel), wheel

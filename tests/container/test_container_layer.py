"""#31 item 1: the image kept a file a fix deletes or renames away. A backported PR that
`git rm`s a module of the package (or `git mv`s one) gave a Containerfile with no removal and no
drift guard for it: the image still imported the module (a rename left both names), and its
label said it carried the fix. Now a removal is laid over the base as a guarded change, and the
image's new layer holds exactly the files that differ from the base, deletions as whiteouts.

Real buildah builds on the stand-in base (busybox and the miniature's package, with the bytecode
pip would have compiled), inspected with skopeo and umoci."""
from __future__ import annotations

import compileall
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from patchkit import patchset
from patchkit.backport import command as backport
from patchkit.cli import main
from patchkit.container import build as cbuild
from patchkit.container.bases import make_base
from patchkit.errors import Conflict
from patchkit.git import Repo
from cstore import in_store, needs_tools, new_layer
from helpers import copy_project, sh

SITE = "usr/local/lib/python3.12/dist-packages"
PYEXEC = "tensorrt_llm/_torch/pyexecutor"
DAY = "2026-12-02"
pytestmark = needs_tools


def _pull(upstream: Path, number: str, message: str, *steps: tuple[str, ...] | dict[str, str]) -> None:
    """refs/pull/<number>/head of upstream: one commit on the release tag made by these steps (git
    commands, or files to write). On the tag: main's reuse_policy.py has #19302's guard, which a
    deletion made on main would carry as its preimage."""
    work = upstream.parent / f"pull-{number}"
    sh("git", "clone", "-q", upstream.as_uri(), work)
    sh("git", "-C", work, "checkout", "-q", "--detach", "v1.3.0rc25")
    for step in steps:
        if isinstance(step, dict):
            for path, text in step.items():
                (work / path).write_text(text)
        else:
            sh("git", "-C", work, *step)
    sh("git", "-C", work, "commit", "-q", "-m", message)
    sh("git", "-C", work, "push", "-q", "origin", f"HEAD:refs/pull/{number}/head")


def _backported(tmp_path: Path, upstream: Path, pulls: dict[str, tuple], after: str | None = None) -> tuple[Path, Path]:
    """A copy of the project whose rc25 carries these pull requests (made on upstream) as backports,
    written by make backport's own code; and the checkout it ran in."""
    root = copy_project(tmp_path / "project", "overlay")
    checkout = tmp_path / "trtllm"
    sh("git", "clone", "-q", upstream.as_uri(), checkout)
    for number, (message, *steps) in pulls.items():
        _pull(upstream, number, message, *steps)
        backport.backport(patchset.load(root, "rc25"), root=root, src=checkout, pr=number, after=after, today=DAY)
    return root, checkout


@pytest.fixture(scope="module")
def compiled_base(release_tree, storage, tmp_path_factory):
    """The rc25 release as pip installs it, the package with its compiled bytecode; and that package."""
    tree = tmp_path_factory.mktemp("compiled")
    shutil.copytree(release_tree / "tensorrt_llm", tree / "tensorrt_llm")
    assert compileall.compile_dir(tree / "tensorrt_llm", quiet=1)
    with in_store(storage):
        return make_base("localhost/test-release:compiled", tree, "/" + SITE), tree


def _rootfs(image: str, tmp: Path) -> Path:
    oci = tmp / "oci"
    sh("skopeo", "copy", "-q", f"containers-storage:{image}", f"oci:{oci}:img")
    sh("umoci", "unpack", "--image", f"{oci}:img", tmp / "bundle")
    return tmp / "bundle" / "rootfs"


DELETE = ("[#18609][fix] Retire the reuse policy module", ("rm", "-q", f"{PYEXEC}/reuse_policy.py"))
RENAME = ("[#18609][fix] Name the scheduler for what it schedules",
          ("mv", f"{PYEXEC}/scheduler.py", f"{PYEXEC}/cross_scheduler.py"))


def test_a_deleted_and_a_renamed_module_leave_the_image(compiled_base, upstream, tmp_path):
    root, checkout = _backported(tmp_path, upstream, {"30001": DELETE, "30002": RENAME})
    ps = patchset.load(root, "rc25")
    assert [f.id for f in ps.fixes] == ["30001", "30002", "19514"]
    base, tree = compiled_base
    res = cbuild.build(root, ps, Repo(checkout), context_dir=tmp_path / "ctx", base=base, builder_name="buildah")
    rootfs = _rootfs(res.image, tmp_path)
    site = rootfs / SITE
    # gone: the deleted module, the rename's old name, and the bytecode compiled from them
    assert not (site / PYEXEC / "reuse_policy.py").exists() and not (site / PYEXEC / "scheduler.py").exists()
    assert not list((site / PYEXEC / "__pycache__").glob("reuse_policy.*")) + \
        list((site / PYEXEC / "__pycache__").glob("scheduler.*"))
    # the new name holds the old one's bytes; the untouched modules and their bytecode stay
    released = sh("git", "-C", upstream, "show", f"v1.3.0rc25:{PYEXEC}/scheduler.py").stdout
    assert (site / PYEXEC / "cross_scheduler.py").read_text() == released
    assert list((site / PYEXEC / "__pycache__").glob("_util.*.pyc")) and (site / "tensorrt_llm/__init__.py").is_file()
    # the new layer: exactly the files that differ from the base, each removal a whiteout
    cache = tree / PYEXEC / "__pycache__"
    removed = ["reuse_policy.py", "scheduler.py"] + [p.name for stem in ("reuse_policy", "scheduler")
                                                     for p in cache.glob(f"{stem}.*.pyc")]
    layer = new_layer(res.image, tmp_path)
    assert {name for name, m in layer.items() if not m.isdir()} == {
        f"{SITE}/{PYEXEC}/{name}" for name in ("_util.py", "cross_scheduler.py")} | {
        f"{SITE}/{PYEXEC}/{'__pycache__/' if name.endswith('.pyc') else ''}.wh.{name}" for name in removed}
    # the build says what it removed, and the labels name every fix it carries
    assert [(f.path, f.removed) for f in res.files] == [
        (f"{PYEXEC}/_util.py", False), (f"{PYEXEC}/cross_scheduler.py", False),
        (f"{PYEXEC}/reuse_policy.py", True), (f"{PYEXEC}/scheduler.py", True)]
    assert [f["id"] for f in json.loads(res.labels["io.patchkit.fixes"])] == ["30001", "30002", "19514"]


@pytest.mark.slow  # make test keeps test_a_deleted_and_a_renamed_module_leave_the_image
def test_a_removal_is_guarded_like_a_change(compiled_base, release_tree, storage, upstream, tmp_path):
    """A stack whose only change is a deletion builds (no file to copy), and a base whose copy of
    the deleted file is not the ref's is refused with the drift line, as for a changed file."""
    root, checkout = _backported(tmp_path, upstream, {"30001": DELETE})
    ps = patchset.load(root, "rc25")
    alone = replace(ps, fixes=(ps.fix("30001"),))
    base, _tree = compiled_base
    res = cbuild.build(root, alone, Repo(checkout), context_dir=tmp_path / "ctx", base=base, builder_name="buildah")
    assert "COPY" not in (tmp_path / "ctx" / "Containerfile").read_text()
    assert {n for n, m in new_layer(res.image, tmp_path).items() if not m.isdir() and "__pycache__" not in n} == {
        f"{SITE}/{PYEXEC}/.wh.reuse_policy.py"}
    with in_store(storage):
        drifted = make_base("localhost/test-release:policy-drifted", release_tree, "/" + SITE, replace={
            f"{PYEXEC}/reuse_policy.py": (release_tree / PYEXEC / "reuse_policy.py").read_text() + "# local\n"})
    with pytest.raises(Conflict) as exc:
        cbuild.build(root, alone, Repo(checkout), context_dir=tmp_path / "ctx2", base=drifted, builder_name="buildah")
    assert exc.value.message == (f"drift: /{SITE}/{PYEXEC}/reuse_policy.py in {drifted} is not the file the patch set "
                                 "was made for (refs/tags/v1.3.0rc25 @ "
                                 f"{sh('git', '-C', upstream, 'rev-parse', 'v1.3.0rc25^{commit}').stdout[:12]}); "
                                 "use the matching BASE or rebase the patch set")
    assert sh("buildah", "inspect", "--type", "image", cbuild.image_name(alone, drifted), check=False).returncode != 0


@pytest.mark.slow  # make test keeps test_a_deleted_and_a_renamed_module_leave_the_image
def test_a_renamed_folder_leaves_no_folder_behind(compiled_base, release_tree, storage, upstream, tmp_path, capsys):
    """A folder the stack renames away is removed with its bytecode: an empty folder left in the
    package would still import (a namespace package). A base whose folder holds a file the ref
    does not have is refused, not kept."""
    moved = ("[#18609][fix] Move the executor", ("mv", PYEXEC, "tensorrt_llm/_torch/executor"))
    root, checkout = _backported(tmp_path, upstream, {"30003": moved}, after="19514")
    base, tree = compiled_base
    ps = patchset.load(root, "rc25")
    res = cbuild.build(root, ps, Repo(checkout), context_dir=tmp_path / "ctx", base=base, builder_name="buildah")
    site = _rootfs(res.image, tmp_path) / SITE
    assert not (site / PYEXEC).exists()
    assert sorted(p.name for p in (site / "tensorrt_llm/_torch/executor").iterdir()) == sorted(
        p.name for p in (tree / PYEXEC).iterdir() if p.name != "__pycache__")
    with in_store(storage):
        extra = make_base("localhost/test-release:extra-file", release_tree, "/" + SITE,
                          replace={f"{PYEXEC}/_native.so": "compiled, not in git"})
    code = main(["--root", str(root), "container", "--target", "rc25", "--src", str(checkout), "--base", extra,
                 "--builder", "buildah", "--context", str(tmp_path / "ctx2")])
    err = capsys.readouterr().err
    assert code == 3 and err == (f"patchkit: error: drift: /{SITE}/{PYEXEC} in {extra} holds files that "
                                 f"refs/tags/v1.3.0rc25 @ {res.labels['io.patchkit.upstream.commit'][:12]} does not "
                                 "have, and the stack removes that folder; use the matching BASE or rebase the "
                                 "patch set\n")


@pytest.mark.slow  # make test keeps test_a_deleted_and_a_renamed_module_leave_the_image
def test_a_file_name_from_a_pr_is_one_shell_word(compiled_base, upstream, tmp_path):
    """A backported PR may add `tensorrt_llm/$(touch PWNED)x.py` (make backport takes it): the
    drift guard's RUN line pasted the name into the shell unquoted, so the build ran it."""
    name = "tensorrt_llm/$(touch PWNED)x.py"
    root, checkout = _backported(tmp_path, upstream, {"30004": ("[#18609][fix] A module with an odd name",
                                                                  {name: "x = 1\n"}, ("add", "--", name))})
    base, _tree = compiled_base
    res = cbuild.build(root, patchset.load(root, "rc25"), Repo(checkout), context_dir=tmp_path / "ctx", base=base,
                       builder_name="buildah")
    rootfs = _rootfs(res.image, tmp_path)
    assert (rootfs / SITE / name).read_text() == "x = 1\n"
    assert not list(rootfs.rglob("PWNED"))

"""make container / container-push with a real builder (buildah: chroot isolation, vfs storage,
no daemon), inspected with skopeo and umoci, pushed to a docker-registry on 127.0.0.1."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from patchkit import patchset
from patchkit.cli import main
from patchkit.container import build as cbuild
from patchkit.container.bases import make_base
from patchkit.git import Repo
from cstore import in_store, needs_tools
from helpers import ROOT, copy_project, sh
from stacks import PY_PULL, python_pull, stacked

SITE = "usr/local/lib/python3.12/dist-packages"  # as the sets declare, without the leading /
UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"
REUSE_POLICY = "tensorrt_llm/_torch/pyexecutor/reuse_policy.py"
pytestmark = needs_tools


@pytest.fixture(scope="session")
def bases(storage, release_tree):
    tree = release_tree
    with in_store(storage):
        good = make_base("localhost/test-release:1.3.0rc25", tree, "/" + SITE)
        drifted = make_base("localhost/test-release:drifted", tree, "/" + SITE, replace={
            UTIL: (tree / UTIL).read_text().replace("GB = 1 << 30", "GB = 1 << 30  # a local change")})
    return good, drifted


def unpack(image: str, tmp: Path) -> tuple[Path, dict]:
    tmp.mkdir(parents=True, exist_ok=True)
    oci = tmp / "oci"
    sh("skopeo", "copy", "-q", f"containers-storage:{image}", f"oci:{oci}:img")
    sh("umoci", "unpack", "--image", f"{oci}:img", tmp / "bundle")
    config = json.loads(sh("skopeo", "inspect", "--config", f"oci:{oci}:img").stdout)
    return tmp / "bundle" / "rootfs", config["config"]["Labels"]


def build(tmp_path, base, **kw):
    ps = patchset.load(ROOT, "rc25")
    return ps, cbuild.build(ROOT, ps, Repo(kw.pop("upstream")), context_dir=tmp_path / "ctx", base=base,
                            builder_name="buildah", **kw)


def test_patched_image_has_the_fix_and_nothing_else_changed(bases, miniature_template, tmp_path):
    good, _ = bases
    ps, res = build(tmp_path, good, upstream=miniature_template)
    rootfs, labels = unpack(res.image, tmp_path)
    util = (rootfs / SITE / UTIL).read_text()
    # #25: the image carries the set's _util.py exactly: the tag's file with the fix patches applied
    released = sh("git", "-C", miniature_template, "show", f"v1.3.0rc25:{UTIL}").stdout
    expected = tmp_path / "expected"
    (expected / UTIL).parent.mkdir(parents=True)
    (expected / UTIL).write_text(released)
    sh("git", "-C", expected, "apply", *(str(p.file) for p in ps.patches if not p.tests_only))
    assert util == (expected / UTIL).read_text() and util != released
    assert '"max_source_positions", "max_position_embeddings", "n_positions"' in " ".join(util.split())
    # untouched: every other file of the package, and no tests or waivers installed
    assert (rootfs / SITE / "tensorrt_llm/__init__.py").read_text() == \
        sh("git", "-C", miniature_template, "show", "v1.3.0rc25:tensorrt_llm/__init__.py").stdout
    assert not list(rootfs.rglob("test_cross_kv_cache_layout.py")) and not list(rootfs.rglob("waives.txt"))
    assert labels["org.opencontainers.image.base.name"] == good
    assert labels["org.opencontainers.image.base.digest"].startswith("sha256:")
    assert labels["io.patchkit.upstream.ref"] == "refs/tags/v1.3.0rc25"
    assert labels["io.patchkit.patchset.sha256"] == ps.content_hash
    assert labels["io.patchkit.version"]
    assert res.image == f"localhost/patchkit/test-release:1.3.0rc25-{ps.content_hash[:12]}"


@pytest.mark.slow  # a second image build: make test keeps test_patched_image_has_the_fix_and_nothing_else_changed
def test_a_stacks_image_carries_every_fix_and_its_labels_list_them(bases, miniature_template, tmp_path):
    """rc25 with a Python-only pull request beneath our fix (#26): the image has both fixes'
    package files (reuse_policy.py from the backport, _util.py from ours), and its labels say
    which fixes it carries."""
    good, _ = bases
    root, upstream = copy_project(tmp_path / "project", "overlay"), tmp_path / "upstream"
    shutil.copytree(miniature_template, upstream, symlinks=True)
    python_pull(upstream)
    stacked(root, "rc25", upstream, tmp_path, pulls=(PY_PULL,))
    ps = patchset.load(root, "rc25")
    res = cbuild.build(root, ps, Repo(upstream), context_dir=tmp_path / "ctx", base=good,
                       builder_name="buildah")
    rootfs, labels = unpack(res.image, tmp_path)
    expected = tmp_path / "expected"
    for path in (UTIL, REUSE_POLICY):
        (expected / path).parent.mkdir(parents=True, exist_ok=True)
        (expected / path).write_text(sh("git", "-C", upstream, "show", f"v1.3.0rc25:{path}").stdout)
    sh("git", "-C", expected, "apply", *(str(p.file) for p in ps.patches if not p.tests_only))
    for path in (UTIL, REUSE_POLICY):
        assert (rootfs / SITE / path).read_text() == (expected / path).read_text(), path
    assert "reserved - 1, 0)" in (rootfs / SITE / REUSE_POLICY).read_text()
    assert not list(rootfs.rglob("test_reuse_reserve.py"))
    assert json.loads(labels["io.patchkit.fixes"]) == [
        {"id": PY_PULL, "kind": "backport", "origin": f"https://github.com/NVIDIA/TensorRT-LLM/pull/{PY_PULL}"},
        {"id": "19514", "kind": "ours", "origin": "https://github.com/NVIDIA/TensorRT-LLM/issues/19514"}]
    assert labels["io.patchkit.patchset.sha256"] == ps.content_hash


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_same_inputs_give_the_same_tag(bases, miniature_template, tmp_path):
    good, _ = bases
    _, first = build(tmp_path / "a", good, upstream=miniature_template)
    _, second = build(tmp_path / "b", good, upstream=miniature_template)
    assert first.image == second.image
    assert (tmp_path / "a/ctx/Containerfile").read_text() == (tmp_path / "b/ctx/Containerfile").read_text()


def test_drifted_base_fails_the_build_and_tags_nothing(bases, miniature_template, tmp_path, capsys):
    _, drifted = bases
    ps = patchset.load(ROOT, "rc25")
    code = main(["--root", str(ROOT), "container", "--target", "rc25", "--src", str(miniature_template),
                 "--base", drifted, "--builder", "buildah", "--context", str(tmp_path / "ctx")])
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1
    assert f"drift: /{SITE}/{UTIL} in {drifted} is not the file the patch set was made for" in err
    image = cbuild.image_name(ps, drifted)
    assert sh("buildah", "inspect", "--type", "image", image, check=False).returncode != 0


def test_without_a_builder_the_context_is_left_with_the_command(miniature_template, tmp_path, capsys, monkeypatch):
    from patchkit.container import builders
    monkeypatch.setattr(builders, "BUILDERS", {})
    code = main(["--root", str(ROOT), "container", "--target", "rc25", "--src", str(miniature_template),
                 "--context", str(tmp_path / "ctx")])
    err = capsys.readouterr().err
    assert code == 5 and "build it with: docker build -t localhost/patchkit/release:1.3.0rc25-" in err
    assert (tmp_path / "ctx" / "Containerfile").is_file() and (tmp_path / "ctx" / UTIL).is_file()


def test_a_refused_run_removes_the_context_of_another_stack(miniature_template, tmp_path, capsys, monkeypatch):
    """#31 item 11: after a refusal, make container left the previous stack's build context in
    place, which the earlier run's hint ("build it with: docker build ...") had told the user to
    build: it built the stack before the change the run refused."""
    from patchkit.container import builders
    monkeypatch.setattr(builders, "BUILDERS", {})
    root = copy_project(tmp_path / "project", "overlay")
    ctx = tmp_path / "ctx"
    args = ["--root", str(root), "container", "--target", "rc25", "--src", str(miniature_template), "--context", str(ctx)]
    assert main(args) == 5 and "build it with: docker build" in capsys.readouterr().err
    before = (ctx / "Containerfile").read_text()
    # refused before it renders, the same stack: its context stays, and is still this stack's
    assert main([*args, "--builder", "nope"]) == 2 and "context" not in capsys.readouterr().err
    assert (ctx / "Containerfile").read_text() == before
    # another stack (a C++ backport beneath our fix) is refused here (its wheel is laid over what
    # the base has installed, which only a builder reads): the old stack's context goes
    old = patchset.load(root, "rc25").content_hash
    stacked(root, "rc25", miniature_template, tmp_path, pulls=("19302",))
    assert main(args) == 5
    err = capsys.readouterr().err
    assert "the stack needs a wheel build" in err and err.count("\n") == 1, err
    assert err.endswith(f"; the build context in {ctx}, rendered for another version of the set ({old[:12]}), "
                        "is removed\n")
    assert not ctx.exists() and not list(tmp_path.glob(".ctx.*"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def registry(tmp_path):
    port = _free_port()
    cfg = tmp_path / "registry.yml"
    cfg.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {tmp_path}/registry\n"
                   f"http:\n  addr: 127.0.0.1:{port}\nlog:\n  level: error\n")
    proc = subprocess.Popen(["docker-registry", "serve", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


def test_push_to_a_registry_and_read_it_back(bases, miniature_template, tmp_path, registry, capsys):
    good, _ = bases
    ps, res = build(tmp_path, good, upstream=miniature_template)
    code = main(["--root", str(ROOT), "container-push", "--target", "rc25", "--base", good, "--builder", "buildah",
                 "--registry", f"{registry}/patched/release", "--tls-verify", "false"])
    out = capsys.readouterr().out
    tag = res.image.rsplit(":", 1)[1]
    assert code == 0 and f"pushed {registry}/patched/release:{tag}" in out
    remote = json.loads(sh("skopeo", "inspect", "--tls-verify=false", f"docker://{registry}/patched/release:{tag}").stdout)
    assert remote["Labels"]["io.patchkit.patchset.sha256"] == ps.content_hash
    rootfs, _ = unpack(res.image, tmp_path / "local")
    pulled = tmp_path / "pulled"
    sh("skopeo", "copy", "-q", "--src-tls-verify=false", f"docker://{registry}/patched/release:{tag}", f"oci:{pulled}:img")
    sh("umoci", "unpack", "--image", f"{pulled}:img", tmp_path / "pulled-bundle")
    back = tmp_path / "pulled-bundle" / "rootfs" / SITE / UTIL
    assert back.read_bytes() == (rootfs / SITE / UTIL).read_bytes()


def _container(tmp_path, *args):
    return main(["--root", str(ROOT), "container", "--target", "rc25", "--context", str(tmp_path / "ctx"), *args])


@pytest.mark.slow  # buildah's own retries take seconds: make test-slow (.ci/run)
def test_unpullable_base_is_not_found_with_the_builders_reason(miniature_template, tmp_path, capsys):
    code = _container(tmp_path, "--src", str(miniature_template), "--base", "localhost/nope:1", "--builder", "buildah")
    err = capsys.readouterr().err
    assert code == 4 and err.count("\n") == 1, err
    assert err.startswith("patchkit: error: cannot pull localhost/nope:1 with buildah: initializing source "
                          "docker://localhost/nope:1: ")  # buildah's verdict, not "Trying to pull ..."
    assert "connection refused" in err
    # #27 item 4: it wrote no context and suggested nothing; the context is there, and what to do
    ctx = tmp_path / "ctx"
    assert f"the build context is written to {ctx}: log in to the base's registry or pull it yourself" in err
    assert err.rstrip().endswith("; choose another --base an image you have, or can pull"), err
    assert "FROM localhost/nope:1" in (ctx / "Containerfile").read_text()


def test_missing_builder_is_tool_missing(miniature_template, tmp_path, capsys, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))
    monkeypatch.setenv("PATH", str(bin_dir))
    code = _container(tmp_path, "--src", str(miniature_template), "--builder", "podman")
    assert code == 5
    assert capsys.readouterr().err == ("patchkit: error: --builder: podman does not work on this machine: "
                                       "podman is not installed or not on PATH\n")


def test_broken_builder_is_tool_missing_with_its_reason(miniature_template, tmp_path, capsys, monkeypatch):
    conf = tmp_path / "storage.conf"
    conf.write_text(f'[storage]\ndriver = "nope"\ngraphroot = "{tmp_path}/g"\nrunroot = "{tmp_path}/r"\n')
    monkeypatch.setenv("CONTAINERS_STORAGE_CONF", str(conf))
    code = _container(tmp_path, "--src", str(miniature_template), "--builder", "buildah")
    err = capsys.readouterr().err
    assert code == 5 and err.count("\n") == 1, err
    assert err.startswith("patchkit: error: --builder: buildah does not work on this machine: ")
    assert "driver not supported" in err


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps the drifted base's failing build
def test_failing_build_step_names_the_step_and_what_it_said(release_tree, storage, miniature_template, tmp_path, capsys):
    with in_store(storage):
        shell_less = make_base("localhost/test-release:no-shell", release_tree, "/" + SITE, with_shell=False)
    code = _container(tmp_path, "--src", str(miniature_template), "--base", shell_less, "--builder", "buildah")
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1, err
    assert err.startswith("patchkit: error: buildah build failed at STEP 2/4 (RUN cd /usr/local/lib/python3.12/")
    assert err.endswith(": process failed to start with error: fork/exec /bin/sh: no such file or directory\n")
    ps = patchset.load(ROOT, "rc25")
    assert sh("buildah", "inspect", "--type", "image", cbuild.image_name(ps, shell_less), check=False).returncode != 0


@pytest.mark.slow  # buildah's own retries take seconds: make test-slow (.ci/run)
def test_failed_push_says_why(bases, miniature_template, tmp_path, capsys):
    good, _ = bases
    build(tmp_path, good, upstream=miniature_template)
    port = _free_port()  # nothing listens there
    code = main(["--root", str(ROOT), "container-push", "--target", "rc25", "--base", good, "--builder", "buildah",
                 "--registry", f"127.0.0.1:{port}/patched/release", "--tls-verify", "false"])
    err = capsys.readouterr().err
    assert code == 4 and err.count("\n") == 1, err
    assert err.startswith(f"patchkit: error: push to 127.0.0.1:{port}/patched/release:")
    assert err.rstrip().endswith("connect: connection refused")


def test_push_before_build_says_how_to_build(tmp_path, capsys):
    code = main(["--root", str(ROOT), "container-push", "--target", "rc25", "--base", "localhost/never-built:1",
                 "--builder", "buildah", "--registry", "127.0.0.1:9/x"])
    ps = patchset.load(ROOT, "rc25")
    assert code == 4 and capsys.readouterr().err == (
        f"patchkit: error: {cbuild.image_name(ps, 'localhost/never-built:1')} is not in buildah's store; "
        f"run: patchkit --root {ROOT} container --target rc25 --base localhost/never-built:1 --builder buildah\n")


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_delta_in_an_image_without_python_is_invalid_and_says_why(bases, miniature_template, tmp_path, capsys):
    good, _ = bases  # busybox and the package: no Python
    build(tmp_path, good, upstream=miniature_template)
    code = main(["--root", str(ROOT), "delta", "--target", "rc25", "--src", str(miniature_template), "--mode",
                 "container", "--base", good, "--builder", "buildah", "--report", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert code == 1
    for name, image in (("unpatched", good), ("patched", cbuild.image_name(patchset.load(ROOT, "rc25"), good))):
        assert (f"INVALID: {name}: pytest wrote no outcomes (exit 127): in {image}: python3: not found on the image's "
                "PATH (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)\n") in out


@pytest.mark.slow  # make test-slow (.ci/run): the case above is its end-to-end form
def test_why_a_command_cannot_start_survives_buildah_losing_its_output(bases, monkeypatch):
    """buildah's chroot runner exits without waiting for its stdio relay: under load, what the
    failed exec said ('executable file not found') was lost, and the delta's reason was empty (it
    failed 2 runs of 4). The reason is now found in the image's files, before the run."""
    from patchkit import proc
    from patchkit.container.builders import Buildah
    good, _ = bases
    real = proc.run

    def lossy(cmd, *a, **kw):  # buildah run, as it ends when its relay lost the race
        if cmd[:2] == ["buildah", "run"]:
            return proc.Result(cmd, 1, "", "")
        return real(cmd, *a, **kw)
    monkeypatch.setattr(proc, "run", lossy)
    res = Buildah().run(good, ["python3", "-m", "pytest"], mounts=[], workdir="/", env={})
    assert (res.returncode, res.stderr) == (127, "python3: not found on the image's PATH "
                                                 "(/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)")
    res = Buildah().run(good, ["sh", "-c", "exit 3"], mounts=[], workdir="/", env={})  # busybox's sh is there
    assert res.returncode == 1 and res.stderr == ""  # ran (and lost its words): not said to be missing

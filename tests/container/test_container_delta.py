"""MODE=container for real: make container, then make delta MODE=container in the base image and
the image it built (buildah, chroot isolation, vfs storage, no daemon, no network), then pr."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from patchkit import patchset
from patchkit.cli import main
from patchkit.container import build as cbuild
from patchkit.delta import command
from patchkit.git import Repo
from cstore import in_store, needs_tools
from helpers import ROOT, copy_project, sh

REGRESSION = "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"
pytestmark = needs_tools


def make(*args, root: Path = ROOT):
    return sh("make", "-s", "-C", ROOT, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit --root {root}", *args,
              check=False)


def project_copy(tmp: Path) -> Path:
    """make container renders the context under the project's build/: a copy of the project
    for it to write in, not the checkout's own (a run of the suite leaves nothing in it)."""
    return copy_project(tmp / "root", "tests/fixtures/miniature", "overlay")


def per_file(tests: dict[str, str], file: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for tid, outcome in tests.items():
        if tid.split("::")[0] == file:
            out[outcome] = out.get(outcome, 0) + 1
    return out


REFS = {"rc25": "v1.3.0rc25", "main": "main"}


@pytest.fixture(scope="session")
def built(python_base, storage, miniature_template, tmp_path_factory):
    """built(target): make container for the target from a Python base made from its ref, once
    a session, as the user runs it; returns the BASE it was given. make container renders the
    context under the project's build/: here a copy of the project's, not the checkout's own."""
    root = project_copy(tmp_path_factory.mktemp("container-root"))
    done: dict[str, str] = {}

    def get(target: str) -> str:
        if target not in done:
            base = python_base(REFS[target])
            with in_store(storage):
                res = make("container", f"TRTLLM={target}", f"TRTLLM_SRC={miniature_template}", f"BASE={base}",
                           "BUILDER=buildah", root=root)
            assert res.returncode == 0, res.stderr
            done[target] = base
        return done[target]
    return get


@pytest.mark.slow  # two real images per target, both trees run in them: make test-slow (.ci/run)
@pytest.mark.parametrize("target", ["rc25", "main"])
def test_make_container_then_make_delta_in_the_images_then_pr(built, upstream, tmp_path, target):
    """The two commands in a row, with the same variables, measure the declared delta in the
    images; the neighbours, which source mode cannot run, pass before and after; the report
    names the images and the commit, and pr accepts it."""
    base = built(target)
    report = tmp_path / "delta" / f"{target}.json"
    res = make("delta", f"TRTLLM={target}", f"TRTLLM_SRC={upstream}", "MODE=container", f"BASE={base}",
               "BUILDER=buildah", f"REPORT={report}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "verdict: matches the declared delta" in res.stdout
    data = json.loads(report.read_text())
    ps = patchset.load(ROOT, target)
    commit = sh("git", "-C", upstream, "rev-parse", f"{REFS[target]}^{{commit}}").stdout.strip()
    assert data["mode"] == "container" and data["builder"] == "buildah" and data["upstream_commit"] == commit
    declared = ps.expected["container"][REGRESSION]
    [section] = data["fixes"]  # schema 2: one section per fix; without it = the base image, with = the stack's
    for tree in ("unpatched", "patched"):
        measured = per_file(section[tree]["tests"], REGRESSION)
        assert measured == {k: v for k, v in declared[tree].items() if v}, tree
    regression = [t for t in section["fail_to_pass"] + section["pass_to_pass"] if t.startswith(REGRESSION + "::")]
    assert len(regression) == sum(declared["patched"].values())
    assert not section["pass_to_fail"] and not section["fail_to_fail"] and not section["other"] and not section["not_run"]
    for neighbour in ps.tests.neighbours:
        ran = [t for t in section["pass_to_pass"] if t.startswith(neighbour + "::")]
        assert ran and per_file(section["patched"]["tests"], neighbour) == {"passed": len(ran)}, neighbour
    images = data["images"]
    assert images["unpatched"]["name"] == base
    assert images["patched"]["name"] == cbuild.image_name(ps, base)
    assert images["patched"]["labels"]["io.patchkit.upstream.commit"] == commit
    assert images["patched"]["labels"]["io.patchkit.patchset.sha256"] == ps.content_hash
    assert images["patched"]["labels"]["org.opencontainers.image.base.digest"] == images["unpatched"]["digest"]
    for name in ("unpatched", "patched"):
        assert "<testsuite" in Path(section["junit"][name]).read_text()

    # The same outcome for every regression case as source mode measures.
    src = command.delta(ps, repo=Repo(upstream), mode="source", report=tmp_path / "source" / f"{target}.json")
    for tree in ("unpatched", "patched"):
        mine = {t: o for t, o in section[tree]["tests"].items() if t.startswith(REGRESSION)}
        theirs = {t: o for t, o in getattr(src.fixes[0], tree)["tests"].items() if t.startswith(REGRESSION)}
        assert mine == theirs and len(mine) == 30, tree

    code = main(["--root", str(ROOT), "pr", "--target", target, "--src", str(upstream), "--report", str(report),
                 "--out", str(tmp_path / "pr"), "--signoff", "Test User <test@example.com>"])
    assert code == 0 and (tmp_path / "pr" / "body.md").is_file()


@pytest.mark.slow  # a second build of the image: make test-slow (.ci/run)
def test_labels_in_json_are_the_ones_the_image_carries(built, miniature_template, tmp_path, capsys):
    base = built("rc25")
    code = main(["--root", str(ROOT), "--json", "container", "--target", "rc25", "--src", str(miniature_template),
                 "--base", base, "--builder", "buildah", "--context", str(tmp_path / "ctx")])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    carried = json.loads(sh("skopeo", "inspect", "--config", f"containers-storage:{out['image']}").stdout)
    assert out["labels"] == carried["config"]["Labels"]
    assert out["labels"]["io.patchkit.upstream.commit"] == \
        sh("git", "-C", miniature_template, "rev-parse", "v1.3.0rc25^{commit}").stdout.strip()


@pytest.mark.slow  # needs the patched image the slow tier builds: make test-slow (.ci/run)
def test_delta_refuses_an_image_built_for_another_commit(built, upstream, tmp_path, capsys):
    base = built("rc25")
    sh("git", "-C", upstream, "commit", "-q", "--allow-empty", "-m", "rc25 re-tagged")
    sh("git", "-C", upstream, "tag", "-f", "v1.3.0rc25")
    code = main(["--root", str(ROOT), "delta", "--target", "rc25", "--src", str(upstream), "--mode", "container",
                 "--base", base, "--builder", "buildah", "--report", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    ps = patchset.load(ROOT, "rc25")
    now = sh("git", "-C", upstream, "rev-parse", "HEAD").stdout.strip()
    assert code == 3 and err.count("\n") == 1, err
    assert f"{cbuild.image_name(ps, base)} is stale: built for upstream commit " in err
    assert (f"(now {now[:12]}); run: patchkit --root {ROOT} container --target rc25 --src {upstream} --base {base} "
            "--builder buildah") in err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_delta_without_the_patched_image_says_how_to_build_it(python_release, miniature_template, tmp_path, capsys):
    ps = patchset.load(ROOT, "main")  # nobody built main's image from this base
    code = main(["--root", str(ROOT), "delta", "--target", "main", "--src", str(miniature_template), "--mode",
                 "container", "--base", python_release, "--builder", "buildah", "--report", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 4 and err == (f"patchkit: error: no patched image {cbuild.image_name(ps, python_release)} in buildah's "
                                 f"store; run: patchkit --root {ROOT} container --target main --src {miniature_template} "
                                 f"--base {python_release} --builder buildah\n")


def test_delta_without_the_base_says_so(miniature_template, tmp_path, capsys):
    code = main(["--root", str(ROOT), "delta", "--target", "rc25", "--src", str(miniature_template), "--mode",
                 "container", "--base", "localhost/nope:1", "--builder", "buildah", "--report", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 4 and err == ("patchkit: error: the base image localhost/nope:1 is not in buildah's store; "
                                 f"run: patchkit --root {ROOT} container --target rc25 --src {miniature_template} "
                                 "--base localhost/nope:1 --builder buildah (it pulls the base and builds the patched image)\n")


@pytest.fixture(scope="session")
def pythonpath_base(python_base, storage):
    """The rc25 release made so that its Python finds pytest only through the image's own
    PYTHONPATH (its config's Env), as some base images do."""
    from patchkit.container import runtime
    base = python_base("v1.3.0rc25")
    name = "localhost/test-pyrelease-pythonpath:1.3.0rc25"
    with in_store(storage):
        ctr = sh("buildah", "from", "--pull=never", "-q", base).stdout.strip()
        try:
            mnt = Path(sh("buildah", "mount", ctr).stdout.strip())
            site = mnt / runtime.interpreter().site.lstrip("/")
            deps = mnt / "opt" / "pydeps"
            deps.mkdir(parents=True)
            for entry in site.iterdir():
                if entry.suffix != ".pth":  # .pth files work only in a site directory
                    shutil.move(entry, deps / entry.name)  # overlay: a lower layer's folder cannot be renamed
            sh("buildah", "umount", ctr)
            sh("buildah", "config", "--env", "PYTHONPATH=/opt/pydeps", ctr)
            sh("buildah", "commit", "-q", ctr, name)
        finally:
            sh("buildah", "rm", ctr, check=False)
    return name


@pytest.mark.slow  # a third image, built for this test alone: make test-slow (.ci/run)
def test_container_delta_keeps_the_images_own_pythonpath(pythonpath_base, storage, miniature_template, upstream,
                                                         tmp_path):
    """#17.14: the delta set PYTHONPATH to its plugin folder alone, so a base whose Python finds
    pytest through PYTHONPATH found no pytest: 0 outcomes in both trees."""
    with in_store(storage):
        built = make("container", "TRTLLM=rc25", f"TRTLLM_SRC={miniature_template}", f"BASE={pythonpath_base}",
                     "BUILDER=buildah", root=project_copy(tmp_path))
        assert built.returncode == 0, built.stderr
        report = tmp_path / "rc25.json"
        res = make("delta", "TRTLLM=rc25", f"TRTLLM_SRC={upstream}", "MODE=container", f"BASE={pythonpath_base}",
                   "BUILDER=buildah", f"REPORT={report}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "verdict: matches the declared delta" in res.stdout
    data = json.loads(report.read_text())
    declared = patchset.load(ROOT, "rc25").expected["container"][REGRESSION]
    for tree in ("unpatched", "patched"):
        assert per_file(data["fixes"][0][tree]["tests"], REGRESSION) == {k: v for k, v in declared[tree].items() if v}, tree

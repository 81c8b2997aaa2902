"""make setup's environments with uv, pinned and fetched with the user's pip; pip the fallback (#34 item 1).

`python -m venv` + `pip install -e .` took 13.5 s where uv took 2.9 s. The tests build a small
project of their own with the real uv (the pinned wheel make setup fetched into .cache/, served
from a package index of the test's own, file://, as the user's pip configuration names it): the
user's index settings must reach uv, an index that cannot be reached must leave an offline
setup working from the caches, and where uv cannot be had, pip builds the environment, said in
one line.
"""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from helpers import ROOT, WHEELHOUSE, closed_port, tiered
from patchkit import envs, proc
from patchkit.errors import ToolMissing

UV_WHEELS = sorted((envs.cache_dir(ROOT) / f"uv-{envs.UV_VERSION}").glob("uv-*.whl"))
needs_uv_wheel = pytest.mark.skipif(not UV_WHEELS or not (WHEELHOUSE / ".fetched").exists(),
                                    reason=f"no uv {envs.UV_VERSION} wheel in .cache/: make setup's uv route fetches it")


def wheel(dest: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A small real wheel (its metadata and one module of its name), of a distribution no public index has."""
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    files = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                 + "".join(f"Requires-Dist: {r}\n" for r in requires),
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
             f"{name.replace('-', '_')}.py": f"NAME = {name!r}\n"}
    out = dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as z:
        record = []
        for path, text in files.items():
            z.writestr(path, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(text.encode())}")
        z.writestr(f"{info}/RECORD", "\n".join(record + [f"{info}/RECORD,,"]) + "\n")
    return out


def serve(index: Path, wheels: list[Path]) -> str:
    """A PEP 503 simple index (file://) of these wheels; its URL."""
    for w in wheels:
        name = w.name.split("-")[0].replace("_", "-").lower()
        (index / "files").mkdir(parents=True, exist_ok=True)
        if not (index / "files" / w.name).exists():
            (index / "files" / w.name).symlink_to(w.resolve())
        page = index / "simple" / name / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        links = page.read_text() if page.exists() else ""
        page.write_text(links + f'<a href="../../files/{w.name.replace("+", "%2B")}">{w.name}</a>\n')
    return (index / "simple").as_uri()


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A project of the test's own whose dependencies only the user's pip configuration can find:
    one on their index (PIP_INDEX_URL), one in a folder (PIP_FIND_LINKS); uv's cache of its own."""
    for k in [k for k in os.environ if k.startswith(("PIP_", "UV_"))]:
        monkeypatch.delenv(k)
    project = tmp_path / "project"
    (project / "tiny").mkdir(parents=True)
    (project / "tiny" / "__init__.py").write_text("")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tiny"\nversion = "0.1"\n'
        'dependencies = ["patchkit-only-on-the-index==1.0", "patchkit-only-in-a-folder==1.0"]\n'
        '[project.optional-dependencies]\nextra = ["tomli"]\n[tool.setuptools]\npackages = ["tiny"]\n')
    index = serve(tmp_path / "index", [*WHEELHOUSE.glob("*.whl"), *UV_WHEELS,
                                       wheel(tmp_path / "dist", "patchkit-only-on-the-index", "1.0")])
    wheel(tmp_path / "folder", "patchkit-only-in-a-folder", "1.0")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", index)
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "folder"))
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no uv.toml of the user's
    return project


def runs(venv: Path, code: str) -> bool:
    return subprocess.run([venv / "bin" / "python", "-c", code], capture_output=True).returncode == 0


def test_pips_index_settings_reach_uv_as_pip_combines_them(monkeypatch):
    """uv reads no pip.conf: the index settings pip would use are given to uv, the environment's
    over the install section's over global's, every index searched; a UV_* of the user's wins."""
    for k in [k for k in os.environ if k.startswith(("PIP_", "UV_"))]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", "/w1 /w2")
    monkeypatch.setenv("PIP_TRUSTED_HOST", "mirror.example")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    pip = envs.pip_config(sys.executable)  # pip's own reading of its settings
    env, flags = envs.uv_settings(pip, {})
    assert env == {"UV_DEFAULT_INDEX": "https://mirror.example/simple", "UV_FIND_LINKS": "/w1,/w2",
                   "UV_INSECURE_HOST": "mirror.example", "UV_INDEX_STRATEGY": "unsafe-best-match"}, pip
    assert flags == ["--no-index"]
    listing = ("global.index-url='https://g.example/simple'\nglobal.extra-index-url='file:///a file:///b'\n"
               "install.index-url='https://i.example/simple'\ndownload.index-url='https://d.example/simple'\n")
    assert envs.effective(listing) == {"index-url": "https://i.example/simple", "extra-index-url": "file:///a file:///b"}
    assert envs.effective(listing + ":env:.index-url='https://e.example/simple'\n")["index-url"] == "https://e.example/simple"
    env, _ = envs.uv_settings(envs.effective(listing), {"UV_INDEX_URL": "https://mine.example/simple"})
    assert "UV_DEFAULT_INDEX" not in env and env["UV_INDEX"] == "file:///a file:///b"


@needs_uv_wheel
def test_setup_builds_with_the_pinned_uv_from_your_index_and_offline_from_the_caches(world, monkeypatch):
    """The environment is uv's (the pinned one, fetched with pip from the user's index), with what
    only the user's pip configuration finds; with no index reachable afterwards (a closed port,
    PIP_NO_INDEX), it is built again from the caches, and a line says so."""
    venv = world / ".venv"
    built = envs.build(world, venv, sys.executable, with_uv=("pip",), own=(world / "tiny",))
    assert (built.route, built.said) == ("uv", [])
    assert f"uv = {envs.UV_VERSION}" in (venv / "pyvenv.cfg").read_text()
    assert_compiled(venv, world / "tiny")
    assert os.access(envs.cache_dir(world) / f"uv-{envs.UV_VERSION}" / "uv", os.X_OK)
    assert runs(venv, "import tiny, importlib.metadata as m; m.version('patchkit-only-on-the-index'); "
                      "m.version('patchkit-only-in-a-folder'); import pip")

    offline(monkeypatch)
    shutil.rmtree(venv)  # rm -rf .venv
    built = envs.build(world, venv, sys.executable, with_uv=("pip",))
    assert built.route == "uv" and len(built.said) == 1, built.said
    assert built.said[0].startswith("patchkit: the package index could not be used (") \
        and built.said[0].endswith("): installed offline, from uv's cache"), built.said
    assert runs(venv, "import tiny, importlib.metadata as m; m.version('patchkit-only-on-the-index')")
    assert envs.extra(world, venv, sys.executable, "extra").said[0].endswith("installed offline, from uv's cache")
    assert runs(venv, "import tomli")


def assert_compiled(venv: Path, own: Path) -> None:
    """#34: the environment's bytecode is written at setup, Python only reads it where
    PYTHONDONTWRITEBYTECODE is set (every command compiled its modules from source again):
    a dependency's and the project's own."""
    tag = sys.implementation.cache_tag
    packages = next(venv.glob("lib/python*/site-packages"))
    assert (packages / "__pycache__" / f"patchkit_only_on_the_index.{tag}.pyc").is_file()
    assert (own / "__pycache__" / f"__init__.{tag}.pyc").is_file()


def offline(monkeypatch) -> None:
    """No index reachable: the user's index at a closed port, and pip told to use none."""
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{closed_port()}/simple")
    monkeypatch.setenv("PIP_NO_INDEX", "1")


@needs_uv_wheel
@pytest.mark.slow  # make test-slow: make test keeps the environment built offline above
def test_the_hook_tools_wheels_outlive_the_environment_and_need_no_index_once_fetched(world, tmp_path, monkeypatch):
    """make setup's pip fetches the hook tools' wheels into .cache/wheelhouse while uv builds
    .venv; the wheelhouse step links them at .venv/wheelhouse. After rm -rf .venv and with no
    index, setup links them again; a list that changed meanwhile cannot be fetched offline: one
    line with pip's reason."""
    venv, wheels = world / ".venv", _list(tmp_path, "patchkit-only-on-the-index==1.0\n")
    envs.build(world, venv, sys.executable, with_uv=("pip",), wheels=wheels)
    offline(monkeypatch)  # from here on: the wheels were fetched while the environment was built
    house = envs.wheelhouse(world, venv, wheels)
    assert house.is_symlink() and house.resolve() == (envs.cache_dir(world) / "wheelhouse").resolve()
    assert (house / "patchkit_only_on_the_index-1.0-py3-none-any.whl").is_file()
    shutil.rmtree(venv)
    envs.build(world, venv, sys.executable, with_uv=("pip",), wheels=wheels)
    assert (envs.wheelhouse(world, venv, wheels) / "patchkit_only_on_the_index-1.0-py3-none-any.whl").is_file()
    with pytest.raises(ToolMissing, match=r"^the hook tools' wheels \(wheelhouse.txt\) could not be fetched into "
                                          r".*/\.cache/wheelhouse: ERROR: "):
        envs.wheelhouse(world, venv, _list(tmp_path, "patchkit-only-on-the-index==1.0\ntomli\n"))


def _list(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "wheelhouse.txt"
    path.write_text(text)
    return path


@needs_uv_wheel
@pytest.mark.parametrize("route", tiered("uv cannot be fetched", "pip builds the environment"))
def test_where_uv_cannot_be_had_pip_builds_the_environment_said_in_one_line(world, tmp_path, monkeypatch, route):
    """No uv on the user's index (a platform it has no wheel for, or no network) and none cached:
    make setup builds with `python -m venv` and pip, as before uv, and says why in one line."""
    index = serve(tmp_path / "no-uv", [w for w in WHEELHOUSE.glob("*.whl")]
                  + [wheel(tmp_path / "dist2", "patchkit-only-on-the-index", "1.0")])
    monkeypatch.setenv("PIP_INDEX_URL", index)
    with pytest.raises(envs.Unavailable, match=r"^pip could not fetch it: ERROR: .*uv==" + envs.UV_VERSION.replace(".", r"\.")):
        envs.find_uv(envs.cache_dir(world), sys.executable)
    assert not (envs.cache_dir(world) / f"uv-{envs.UV_VERSION}").exists()  # nothing half made
    if route == "uv cannot be fetched":
        return
    venv = world / ".venv"
    built = envs.build(world, venv, sys.executable, own=(world / "tiny",))
    assert built.route == "pip" and len(built.said) == 1
    assert built.said[0].startswith(f"patchkit: uv {envs.UV_VERSION} cannot run here (pip could not fetch it: ERROR: ")
    assert built.said[0].endswith(f"): building {venv} with pip instead")
    assert "uv = " not in (venv / "pyvenv.cfg").read_text() and runs(venv, "import tiny")
    assert_compiled(venv, world / "tiny")


def test_a_setup_that_fails_leaves_no_fetch_running(tmp_path):
    """The hook tools' wheels are fetched in the background while uv builds .venv: a build that
    fails (or Ctrl-C) ends that pip too, never leaving it writing into the wheelhouse."""
    pidfile = tmp_path / "pid"
    code = f"import os, time, pathlib; pathlib.Path({str(pidfile)!r}).write_text(str(os.getpid())); time.sleep(60)"
    with pytest.raises(ToolMissing), proc.background([sys.executable, "-c", code]):
        while not pidfile.exists() or not pidfile.read_text():
            time.sleep(0.01)
        raise ToolMissing("uv pip install failed: the test's own failure")
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


def test_the_environment_holds_the_bytecode_of_what_commands_and_pytest_import():
    """#34: where PYTHONDONTWRITEBYTECODE is set Python only reads bytecode, and every command,
    every pytest the delta and the tests start, compiled each module it imports from source:
    pygments' terminal writer and lexers and platformdirs' pytest plugin at each pytest start
    were left out of make setup's bytecode as if nothing imported them. Every module of
    site-packages this process imported (pytest, its plugins, patchkit's dependencies) has its
    bytecode there, and none is of a package envs.UNCOMPILED says no command imports."""
    import importlib.util
    import sysconfig

    import git, jinja2, unidiff, yaml  # noqa: F401 - what the commands import
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    imported = {name: Path(m.__file__) for name, m in list(sys.modules.items())
                if (getattr(m, "__file__", None) or "").endswith(".py") and Path(m.__file__).resolve().is_relative_to(site)}
    assert "pygments.lexers.python" in imported  # pytest's terminal writer, at every start
    assert sorted({name.split(".")[0] for name in imported} & set(envs.UNCOMPILED)) == []
    assert [name for name, file in imported.items() if not Path(importlib.util.cache_from_source(file)).exists()] == []


def test_the_suite_keeps_its_modules_bytecode_as_pytest_rewrites_them():
    """#34 item 2: pytest reads the bytecode of a test module it rewrote (its asserts) at an
    earlier run, but where PYTHONDONTWRITEBYTECODE is set (the shared machine, CI) it wrote none:
    each worker rewrote and compiled every test module at every run, 1.5 CPU-s of each. The
    conftest lets pytest write it while collecting: this module's is there."""
    here = Path(__file__)
    assert (here.parent / "__pycache__" / f"{here.stem}.{sys.implementation.cache_tag}-pytest-{pytest.__version__}.pyc").is_file()

"""make setup's environments: .venv built with uv, pinned and fetched with your pip; pip the fallback.

`python -m venv` and `pip install -e .` took 13.5 s on the 2-core machine where `uv venv` and
`uv pip install -e .` took 2.9 s (#34), and pre-commit then built each hook environment with
pip. So make setup runs uv at one exact version (UV_VERSION), never a system-wide install: its
wheel is fetched once with your own pip (`pip download`, so your pip configuration picks the
index) into the project's .cache/, and its binary is run from there. The environment gets
pre-commit-uv beside pre-commit, so the hook environments of make lint are built with uv too
(lint/run.py keeps them offline, from the wheelhouse). Where uv cannot run (no network for
its first fetch and none cached, a platform it has no wheel for) the environment is built
as before, with `python -m venv` and pip, and a line says so.

Either way the environment gets its bytecode at setup (compile_bytecode()): where
PYTHONDONTWRITEBYTECODE is set (this machine, and CI), Python never writes it, so every command
compiled each module it imports from source again (0.18 s of a 0.3 s `patchkit check`); it
still reads what is there.

uv does not read pip's configuration, so the index settings of yours that pip would use
(pip.conf and PIP_* as `pip config list` shows them: index-url, extra-index-url, find-links,
no-index, trusted-host, cert, proxy, timeout, constraint, pre) are given to uv as its own, the
way pip would combine them (the environment over the install section over global, every
index searched for the best version); a UV_* setting you give yourself wins. When the index
cannot be reached, uv runs again offline, from its cache, with the settings of the last
install that reached one, and a line says so.

A ground-floor module, run by make setup before .venv exists (tools/setup-env.py, with the
system Python): the standard library only.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import re
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import atomic, proc, progress
from .errors import ToolMissing, UserError

UV_VERSION = "0.13.9"
# What the environment gets with uv, beside the project: pip (make setup's and make lint's
# `pip download` into the wheelhouse), and pre-commit-uv, which makes pre-commit build the hook
# environments with uv (it needs uv itself in the environment, at our pin).
WITH_UV = ("pip", f"uv=={UV_VERSION}", "pre-commit-uv==4.4.1")
SETTINGS = "uv-settings.json"  # the index settings of the last install that reached an index
TRUE = ("1", "true", "yes", "on", "y", "t")
# What no command imports, left to compile when imported (the bytecode of the rest costs 1.7
# CPU-s at setup where all of site-packages cost 5.3): pip (a few runs at setup), virtualenv's
# own (pre-commit-uv makes the hook environments with uv instead), and of pygments' hundreds of
# lexers, formatters and styles all but the few every pytest start imports (its terminal writer:
# 30-75 ms of each start from source, where all of pygments would cost 0.9 CPU-s at setup).
# platformdirs is compiled: its pytest plugin is imported at every pytest start.
UNCOMPILED = ("pip", "virtualenv", "distlib", "filelock", "python_discovery", "uv")
PYGMENTS_IMPORTED = ("__init__", "_mapping", "diff", "python", "terminal")


@dataclass
class Built:
    route: str  # "uv" or "pip"
    said: list[str] = field(default_factory=list)  # the one-line notes for stderr (fallback, offline)


class Unavailable(Exception):
    """uv cannot run here: why, in one line."""


def cache_dir(root: Path) -> Path:
    """The project's own cache: the pinned uv, the hook tools' wheels, the last index settings."""
    return root / ".cache"


def pip_config(python: str) -> dict[str, str]:
    """Your pip configuration as pip itself reads it (`pip config list`: pip.conf files and PIP_*),
    the values an install uses: the environment's over the install section's over global.
    Asked once per process and environment (a pip start is half a second)."""
    key = (python, tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(("PIP_", "XDG_", "HOME")))))
    if key not in _PIP_CONFIG:
        res = proc.run([python, "-m", "pip", "config", "list"], check=False,
                       env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
        _PIP_CONFIG[key] = effective(res.stdout if res.returncode == 0 else "")
    return dict(_PIP_CONFIG[key])


_PIP_CONFIG: dict[tuple, dict[str, str]] = {}


def effective(listing: str, command: str = "install") -> dict[str, str]:
    """`pip config list` lines (`global.index-url='...'`, `:env:.find-links='...'`) folded as pip
    folds them for `pip <command>`."""
    ranks = {"global": 0, command: 1, ":env:": 2}
    best: dict[str, tuple[int, str]] = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        section, dot, name = key.rpartition(".")
        if not sep or not dot or section not in ranks:
            continue
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            continue
        name = name.lower().replace("_", "-")
        if not isinstance(value, str) or best.get(name, (-1, ""))[0] > ranks[section]:
            continue
        best[name] = (ranks[section], value)
    return {k: v for k, (_r, v) in best.items()}


# pip's index settings and the uv settings that say the same (several: uv's current and older
# name, or the two proxy variables pip's one proxy stands for); how uv separates a list.
PIP_TO_UV = (("index-url", ("UV_DEFAULT_INDEX", "UV_INDEX_URL"), " "),
             ("extra-index-url", ("UV_INDEX", "UV_EXTRA_INDEX_URL"), " "),
             ("find-links", ("UV_FIND_LINKS",), ","), ("trusted-host", ("UV_INSECURE_HOST",), " "),
             ("constraint", ("UV_CONSTRAINT",), " "), ("cert", ("SSL_CERT_FILE",), " "),
             ("client-cert", ("SSL_CLIENT_CERT",), " "), ("timeout", ("UV_HTTP_TIMEOUT",), " "),
             ("default-timeout", ("UV_HTTP_TIMEOUT",), " "), ("proxy", ("HTTPS_PROXY", "https_proxy"), " "),
             ("proxy", ("HTTP_PROXY", "http_proxy"), " "))
INDEX_NAMES = ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_INDEX", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS",
               "UV_INDEX_STRATEGY", "UV_PRERELEASE")


def uv_settings(pip: dict[str, str], environ: dict[str, str] | None = None) -> tuple[dict[str, str], list[str]]:
    """pip's settings as uv's: environment variables, and --no-index (which uv reads from no
    variable). A uv setting you gave yourself (UV_*) stays as you gave it."""
    environ = dict(os.environ if environ is None else environ)
    env: dict[str, str] = {}
    for key, names, sep in PIP_TO_UV:
        if pip.get(key, "").split() and not any(n in environ or n in env for n in names):
            env[names[0]] = sep.join(pip[key].split())
    if pip.get("pre", "").lower() in TRUE and "UV_PRERELEASE" not in environ:
        env["UV_PRERELEASE"] = "allow"
    if "UV_INDEX_STRATEGY" not in environ:
        env["UV_INDEX_STRATEGY"] = "unsafe-best-match"  # pip's way: the best version of every index
    flags = ["--no-index"] if pip.get("no-index", "").lower() in TRUE else []
    return env, flags


def find_uv(cache: Path, python: str) -> Path:
    """The pinned uv's binary: in the cache, else its wheel fetched with your pip and unpacked
    there. Unavailable when pip cannot fetch it or it does not run here."""
    home = cache / f"uv-{UV_VERSION}"
    binary = home / "uv"
    if os.access(binary, os.X_OK):
        return binary
    with progress.step(f"fetching uv {UV_VERSION} (pip download, your index)"), atomic.replace_dir(home) as new:
        res = proc.run([python, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                        "--only-binary", ":all:", "--dest", str(new), f"uv=={UV_VERSION}"], check=False)
        wheels = sorted(new.glob("uv-*.whl"))
        if res.returncode != 0 or not wheels:
            raise Unavailable(f"pip could not fetch it: {pip_reason(res.stdout + chr(10) + res.stderr)}")
        with zipfile.ZipFile(wheels[0]) as whl:
            try:
                data = whl.read(f"uv-{UV_VERSION}.data/scripts/uv")
            except KeyError:
                raise Unavailable(f"its wheel {wheels[0].name} holds no uv binary for this platform") from None
        (new / "uv").write_bytes(data)
        (new / "uv").chmod(0o755)
        ran = proc.run([str(new / "uv"), "--version"], check=False)
        if ran.returncode != 0:
            raise Unavailable(f"its binary from {wheels[0].name} does not run here "
                              f"({(ran.stderr or ran.stdout).strip()[:200] or f'exit {ran.returncode}'})")
    return binary


def build(root: Path, venv: Path, python: str, with_uv: tuple[str, ...] = WITH_UV,
          wheels: Path | None = None, own: tuple[Path, ...] = ()) -> Built:
    """The environment at venv with the project installed (editable): with uv, else with pip;
    its bytecode compiled, and that of the project's own folders own (see compile_bytecode()).
    Meanwhile, pip fetches the hook tools' wheels of the list at wheels (see wheelhouse())."""
    with _meanwhile(root, python, wheels):
        built = _build(root, venv, python, with_uv)
        compile_bytecode(venv, own)
        return built


def compile_bytecode(venv: Path, own: tuple[Path, ...] = ()) -> None:
    """The bytecode of what venv's packages hold (but UNCOMPILED) and of the folders own,
    written into their __pycache__ as Python itself writes it, on both cores. Python reads it
    even where PYTHONDONTWRITEBYTECODE keeps it from writing it. A file compiled already is
    left as it is."""
    packages = sorted(venv.glob("lib/python*/site-packages"))
    skip = "|".join(re.escape(str(p)) for p in packages)
    names = "|".join(map(re.escape, UNCOMPILED))
    kept = "|".join(PYGMENTS_IMPORTED)
    left = f"({names})/|pygments/(lexers|formatters|styles|filters)/(?!({kept})\\.py$)"
    with progress.step(f"compiling {venv}'s bytecode"):
        _run([_python(venv), "-m", "compileall", "-q", "-j", "0", "-x", f"^({skip})/({left})",
              *map(str, packages), *map(str, own)], "python -m compileall")


def _build(root: Path, venv: Path, python: str, with_uv: tuple[str, ...]) -> Built:
    cache = cache_dir(root)
    try:
        uv = find_uv(cache, python)
    except (Unavailable, OSError) as exc:
        why = f"uv {UV_VERSION} cannot run here ({exc})"
        with progress.step(f"building {venv} with pip"):
            try:
                _run([python, "-m", "venv", str(venv)], "python -m venv")
                _run([_python(venv), "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check",
                      "-e", str(root)], "pip install")
            except UserError as failed:
                raise UserError(f"{failed.message}; {why}", failed.code) from None
        return Built("pip", [f"patchkit: {why}: building {venv} with pip instead"])
    with progress.step(f"building {venv} with uv {UV_VERSION}"):
        if not (venv / "pyvenv.cfg").exists():
            _run([str(uv), "venv", "-q", "--allow-existing", "--no-project", "--python", python, str(venv)], "uv venv")
        # uv's own wheel is in the cache already (find_uv): the install takes it from there.
        said = install(uv, cache, venv, python, ["-e", str(root), *with_uv], cwd=root, links=[uv.parent])
    return Built("uv", said)


def extra(root: Path, venv: Path, python: str, name: str) -> Built:
    """pyproject's optional dependencies `name` into the environment (the project stays as installed)."""
    try:
        uv = find_uv(cache_dir(root), python)
    except (Unavailable, OSError) as exc:
        with progress.step(f"installing the {name} extra with pip"):
            _run([_python(venv), "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check",
                  "-e", f"{root}[{name}]"], "pip install")
        compile_bytecode(venv)
        return Built("pip", [f"patchkit: uv {UV_VERSION} cannot run here ({exc}): installing the {name} extra with pip"])
    with progress.step(f"installing the {name} extra with uv {UV_VERSION}"):
        said = install(uv, cache_dir(root), venv, python, ["-r", str(root / "pyproject.toml"), "--extra", name], cwd=root)
    compile_bytecode(venv)
    return Built("uv", said)


def install(uv: Path, cache: Path, venv: Path, python: str, args: list[str], cwd: Path,
            links: list[Path] = ()) -> list[str]:
    """`uv pip install args` into venv with your pip's index settings (and the folders links as
    more find-links); when that fails, once more offline, from uv's cache, with the index
    settings of the last install that reached an index (uv keeps what it fetched per index: an
    index of today's settings that it never reached has nothing cached)."""
    env, flags = uv_settings(pip_config(python))
    if links:
        given = env.get("UV_FIND_LINKS", os.environ.get("UV_FIND_LINKS", ""))
        env["UV_FIND_LINKS"] = ",".join([*filter(None, given.split(",")), *map(str, links)])
    cmd = [str(uv), "pip", "install", "-q", "--python", _python(venv), *args]
    base = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}
    online = proc.run([*cmd, *flags], env={**base, **env}, cwd=cwd, check=False)
    last = cache / SETTINGS
    if online.returncode == 0:
        used = {k: v for k, v in {**base, **env}.items() if k in INDEX_NAMES}
        if not flags and used != _recall(last):
            atomic.write_text(last, json.dumps(used, sort_keys=True) + "\n")
        return []
    reason = uv_reason(online.stderr or online.stdout)
    kept = _recall(last)
    if kept is None:
        raise UserError(f"uv pip install failed: {reason}", ToolMissing.code)
    quiet = {k: v for k, v in base.items() if k not in INDEX_NAMES}
    offline = proc.run(cmd, env={**quiet, **kept, "UV_OFFLINE": "1"}, cwd=cwd, check=False)
    if offline.returncode != 0:
        raise UserError(f"uv pip install failed: {reason} (and offline, from uv's cache: "
                        f"{uv_reason(offline.stderr or offline.stdout)})", ToolMissing.code)
    return [f"patchkit: the package index could not be used ({reason}): installed offline, from uv's cache"]


def wheelhouse(root: Path, venv: Path, requirements: Path) -> Path:
    """The hook tools' wheels for requirements, fetched with the environment's pip (your pip
    configuration) into .cache/wheelhouse, which outlives .venv, and linked at <venv>/wheelhouse.
    Fetched again only when the list changed: an offline setup with it filled needs no index."""
    store = cache_dir(root) / "wheelhouse"
    if not _current(store, requirements):
        with progress.step(f"fetching the hook tools' wheels into {store} (pip download, your index)"):
            res = proc.run(_fetch(_python(venv), store, requirements), check=False)
        if res.returncode != 0:
            raise ToolMissing(f"the hook tools' wheels ({requirements.name}) could not be fetched into {store}: "
                              f"{pip_reason(res.stdout + chr(10) + res.stderr)}")
        _fetched(store, requirements)
    link = venv / "wheelhouse"
    if link.is_symlink() and link.resolve() == store.resolve():
        return link
    if link.is_dir() and not link.is_symlink():  # an environment made before the wheelhouse moved: keep its wheels
        for wheel in link.glob("*.whl"):
            if not (store / wheel.name).exists():
                os.replace(wheel, store / wheel.name)
        shutil.rmtree(link)
    elif link.is_symlink():
        link.unlink()
    link.symlink_to(store.resolve(), target_is_directory=True)
    return link


@contextlib.contextmanager
def _meanwhile(root: Path, python: str, requirements: Path | None) -> Iterator[None]:
    """The hook tools' wheels fetched by your pip (of python) while the body builds the
    environment: a second core's work (pip's resolving and unpacking beside uv's). Kept only
    when it worked; else the wheelhouse step fetches them again, and says why when it fails."""
    store = cache_dir(root) / "wheelhouse"
    if requirements is None or _current(store, requirements):
        yield
        return
    with proc.background(_fetch(python, store, requirements)) as fetched:
        yield
        if fetched().returncode == 0:
            _fetched(store, requirements)


def _fetch(python: str, store: Path, requirements: Path) -> list[str]:
    store.mkdir(parents=True, exist_ok=True)
    return [python, "-m", "pip", "download", "-q", "--disable-pip-version-check", "-d", str(store), "-r", str(requirements)]


def _current(store: Path, requirements: Path) -> bool:
    """Whether the wheelhouse holds what this list fetched (its hash in the marker)."""
    try:
        return (store / ".fetched").read_text().strip() == hashlib.sha256(requirements.read_bytes()).hexdigest()
    except OSError:
        return False


def _fetched(store: Path, requirements: Path) -> None:
    atomic.write_text(store / ".fetched", hashlib.sha256(requirements.read_bytes()).hexdigest() + "\n")


def uv_reason(text: str) -> str:
    """uv's own account of a failure in one line: its error and the innermost cause."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    error = next((ln[len("error: "):] for ln in lines if ln.startswith("error: ")), lines[-1] if lines else "no output")
    causes = [ln[len("cause: "):] for ln in lines if ln.startswith("cause: ")]
    return (f"{error}: {causes[-1]}" if causes else error)[:600]


def pip_reason(text: str) -> str:
    """pip's own words in one line: its ERROR lines, else its last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    return " ".join(errors or lines[-1:])[:600] or "no output"


def _recall(path: Path) -> dict[str, str] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None


def _python(venv: Path) -> str:
    return str(venv.resolve() / "bin" / "python")


def _run(cmd: list[str], what: str) -> None:
    res = proc.run(cmd, check=False)
    if res.returncode != 0:
        said = uv_reason(res.stderr or res.stdout) if cmd[0].endswith("uv") else pip_reason(res.stdout + "\n" + res.stderr)
        raise UserError(f"{what} failed (exit {res.returncode}): {said}", ToolMissing.code)

"""Helpers the tests share: the project root, a subprocess shortcut, checkout state, root copies."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# make lint's hook environments and verdicts: one warm cache for every test (and the commands
# they run), as a user keeps theirs between runs: make lint's own default, beside the hook tools'
# wheels in .venv (never in the project's build/); make test's setup warms it (Makefile).
LINT_CACHE = Path(sys.prefix).resolve() / "lint-cache"


def _hook_tools_skip():
    from patchkit.lint.command import wheelhouse
    house = wheelhouse()
    return house, pytest.mark.skipif(not (house / ".fetched").exists(),
                                     reason=f"no wheelhouse at {house}: make setup fetches the hook tools")


# The pinned hook tools' wheels (make setup fetches them), and the mark of a test that needs them.
WHEELHOUSE, needs_hook_tools = _hook_tools_skip()
# Whether pre-commit builds the hook environments with uv here (make setup's uv route puts
# pre-commit-uv into .venv; its pip fallback does not): their tools' own words differ.
HOOK_ENVS_BY_UV = importlib.util.find_spec("pre_commit_uv") is not None

# A git URL that never sends a byte (git's ext transport, allowed by the test's own config),
# and that still ends on its own: `fd::17` hangs git forever on its own pipe, so a suite killed
# during such a test (no `finally` runs) left `git clone fd::17` behind for good; this one ends
# when its helper's sleep does, a minute later at most.
NEVER_ANSWERS = "ext::sleep 60"


def closed_port() -> int:
    """A 127.0.0.1 port nobody listens on: an index there is unreachable, at once (offline)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tiered(*values, fast: int = 1) -> list:
    """Parameters of a sweep: the first `fast` run in make test, the others are marked slow
    (make test-slow, which .ci/run runs after make test)."""
    def slow(v):  # a tuple is one case of several argnames
        return pytest.param(*v, marks=pytest.mark.slow) if isinstance(v, tuple) else pytest.param(v, marks=pytest.mark.slow)
    return [*values[:fast], *(slow(v) for v in values[fast:])]


def sh(*args, cwd=None, check=True, input=None, env=None):
    return subprocess.run([str(a) for a in args], cwd=cwd, check=check, text=True, input=input,
                          capture_output=True, env=env)


def build_once(tmp_path_factory, name: str, build: Callable[[Path], object], leaf: str = "upstream") -> Path:
    """A session's (or module's) template, built by build(dest) with a HOME of its own and no
    system git config, so that neither the user's nor a test's settings shape it."""
    dest = tmp_path_factory.mktemp(name) / leaf
    old = dict(os.environ)
    os.environ.update(HOME=str(tmp_path_factory.mktemp(f"{name}home")), GIT_CONFIG_NOSYSTEM="1")
    try:
        build(dest)
    finally:
        os.environ.clear()
        os.environ.update(old)
    return dest


def state_of(repo: Path) -> dict:
    """Everything a user could notice about a checkout: files (untracked too), refs, HEAD, index, stash."""
    files = {}
    for p in sorted(repo.rglob("*")):
        rel = p.relative_to(repo)
        if rel.parts[0] == ".git" or (p.is_dir() and not p.is_symlink()):
            continue
        data = ("link:" + str(p.readlink())).encode() if p.is_symlink() else p.read_bytes()
        files[str(rel)] = hashlib.sha256(data).hexdigest()
    git = lambda *a: sh("git", "-C", repo, *a, check=False).stdout  # noqa: E731
    index = sh("git", "-C", repo, "rev-parse", "--git-path", "index").stdout.strip()
    index_path = Path(index) if Path(index).is_absolute() else repo / index
    return {
        "files": files,
        "refs": git("for-each-ref", "--format=%(refname) %(objectname)"),
        "head": git("symbolic-ref", "-q", "HEAD") + git("rev-parse", "HEAD"),
        "index": hashlib.sha256(index_path.read_bytes()).hexdigest() if index_path.exists() else None,
        "index_entries": git("ls-files", "--stage"),
        "stash": git("stash", "list", "--format=%H %gs"),
        "worktrees": git("worktree", "list", "--porcelain"),
    }


def copy_project(dest: Path, *also: str) -> Path:
    """The tests' one way to copy the project (#31 item 14: three helpers copied it, each a little
    differently): its patch sets and waiver intents (patches/, waivers/), `also` (more of its files
    or folders: overlay, .github, Makefile, ...), and an empty tools/patchkit/, so that the copy is a
    project commands find (cli.find_root) and run on with --root or PATCHKIT_ROOT."""
    for rel in ("patches", "waivers", *also):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (ROOT / rel).is_dir() else shutil.copy2)(ROOT / rel, dest / rel)
    (dest / "tools" / "patchkit").mkdir(parents=True, exist_ok=True)
    return dest


def copy_root(tmp_path: Path) -> Path:
    """A private copy of the project (the miniature's scaffolding and the image's templates too)
    in tmp_path/root, for tests that edit it."""
    return copy_project(tmp_path / "root", "tests/fixtures/miniature", "overlay")


def render_waives(entries) -> str:
    """Parsed waives.txt lines back as text: parsing must lose nothing of a line (narrowing
    rewrites some lines and keeps every other byte)."""
    return "".join(e.text + e.end for e in entries)


def lint_of(checkout, target: str, root=ROOT) -> dict:
    """make lint's report of a set on a checkout, by the real hooks (their environments and the
    verdict memo are shared in .venv/lint-cache, so a repeat is quick): make pr ticks
    "coding guidelines" only from a lint of that series at that commit."""
    from patchkit import patchset
    from patchkit.git import Repo
    from patchkit.lint import command as lint_cmd
    report = Path(checkout).parent / f"lint-{target}.json"
    res = lint_cmd.lint(patchset.load(root, target), repo=Repo(checkout), report=report,
                        cache=LINT_CACHE)
    return lint_cmd.as_dict(res)


def push_pr(upstream: Path, number: str, make: Callable[[Path], str | None]) -> str:
    """refs/pull/<number>/head of upstream (a copy of the miniature): one commit on its main,
    made by make(work tree) (which returns the commit message, or None for a plain one), as
    anyone's fork can push it. Returns the commit's id."""
    work = upstream.parent / f"pr-{number}"
    sh("git", "clone", "-q", upstream.as_uri(), work)
    message = make(work)
    sh("git", "-C", work, "add", "-A")
    sh("git", "-C", work, "commit", "-q", "--allow-empty", "-m", message or "[None][fix] Something")
    sh("git", "-C", work, "push", "-q", "origin", f"HEAD:refs/pull/{number}/head")
    return sh("git", "-C", work, "rev-parse", "HEAD").stdout.strip()


UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"
# Two ways upstream moves under the fix's hunk of the main set, for the tests of what follows:
# (the line as the miniature has it, as upstream rewrites it, the commit's subject).
# A context line of the hunk reworded: a plain apply fails, a 3-way merge carries the patch.
REWORD = ("            head_dim = encoder_hidden_size // encoder_num_heads\n",
          "            head_dim = encoder_hidden_size // max(encoder_num_heads, 1)\n", "Guard the head size division")
# A line the fix removes rewritten: neither a plain nor a 3-way apply can work (a conflict to resolve).
REWRITE = ("        max_seq_len = fallback_max_seq_len or self._max_seq_len\n",
           "        max_seq_len = self._max_seq_len if fallback_max_seq_len is None else fallback_max_seq_len\n",
           "Treat a zero fallback as a fallback")


def upstream_moves(upstream: Path, change: tuple[str, str, str], date: str | None = None) -> None:
    """Upstream's next commit on main makes change (REWORD or REWRITE) to _util.py; dated date
    when given (else the suite's fixed date)."""
    old, new, subject = change
    util = upstream / UTIL
    text = util.read_text()
    assert text.count(old) == 1, old
    util.write_text(text.replace(old, new))
    env = dict(os.environ, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date) if date else None
    sh("git", "-C", upstream, "commit", "-qam", subject, env=env)

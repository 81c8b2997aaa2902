"""Fault injection at the fetch every judging command now makes first (#33 item 4): each git
call of `check` on a moved upstream fails, or patchkit is killed before or after it, in a
user's full clone and in apply's shallow partial clone (ls-remote, the depth-1 fetch and its
nested upload-pack, the ref update).

A failure is one line, exit 3 (a failing git is never mistaken for an offline origin, which
would carry on with a stale view; exit 5 when GitPython's own `git version` at start fails), and the checkout is as it was: HEAD, branches, index and
files; origin/main is where it was, or where the fetch put it (a fetch is kept, as git fetch
keeps it). After a kill the next plain run judges the moved upstream.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from patchkit import patchset
from patchkit.git import partial_clone
from helpers import ROOT, sh, state_of
from robust.faults import Injector, kill_points

MODES = ("fail", "kill-before", "kill-after")
TRACKING = "refs/remotes/origin/main"


@pytest.fixture(scope="module")
def moved(tmp_path_factory, miniature_template):
    """An upstream whose main moved after a full and a partial clone of it were made."""
    tmp = tmp_path_factory.mktemp("fetch-faults")
    upstream = tmp / "upstream"
    shutil.copytree(miniature_template, upstream, symlinks=True)
    full = tmp / "full"
    sh("git", "clone", "-q", upstream.as_uri(), full)
    partial = tmp / "partial"
    partial_clone(upstream.as_uri(), partial, "main", patchset.load(ROOT, "main").sparse_paths).close()
    old = sh("git", "-C", upstream, "rev-parse", "main").stdout.strip()
    readme = upstream / "README.md"
    readme.write_text(readme.read_text() + "\nMoved on.\n")
    sh("git", "-C", upstream, "commit", "-q", "-am", "Upstream moves on")
    new = sh("git", "-C", upstream, "rev-parse", "main").stdout.strip()
    return tmp, {"full": full, "partial": partial}, old, new


def look(work: Path) -> dict:
    seen = state_of(work)
    seen.pop("index")  # its stat data; the entries are compared
    return seen


def tracking(seen: dict) -> str:
    return next((line.split()[1] for line in seen["refs"].splitlines() if line.startswith(TRACKING + " ")), "")


def without_tracking(seen: dict) -> dict:
    return {**seen, "refs": "\n".join(line for line in seen["refs"].splitlines()
                                      if not line.startswith(("refs/remotes/origin/main ", "refs/remotes/origin/HEAD ")))}


def sweep(moved, kind: str, points: list[int] | None, tmp: Path) -> tuple[list[str], int]:
    """check --target main with a fault at each git call (or at points): the defects found, and
    how many git calls a clean run makes."""
    _tmp, templates, old, new = moved
    inj = Injector(tmp)

    def fresh_copy(n) -> Path:
        work = tmp / f"{kind}-{n}" / "trtllm"
        shutil.rmtree(work.parent, ignore_errors=True)
        shutil.copytree(templates[kind], work, symlinks=True)
        return work

    argv = lambda work: ["check", "--src", str(work), "--target", "main"]  # noqa: E731
    work = fresh_copy(0)
    log = tmp / f"{kind}.log"
    clean = inj.run(argv(work), mode="clean", log=log)
    assert clean.code == 0 and f"origin/main {new[:12]}, fetched now" in clean.stdout, clean.stdout + clean.stderr
    calls = clean.calls
    said = log.read_text()
    assert (" ls-remote " in said) == (kind == "partial") and " fetch " in said, said
    defects = []
    for mode in MODES:
        for n in kill_points(clean, points or range(1, calls + 1), mode):
            work = fresh_copy(n)
            before = look(work)
            res = inj.run(argv(work), n, mode)
            after = look(work)
            where = f"{kind} {mode} at git call {n}/{calls} (exit {res.code}): {res.stderr.strip()[:200]}"
            if res.code == 70 or "Traceback" in res.stderr:
                defects.append(f"{where}: a crash")
            elif res.code == 0:
                if tracking(after) != new or "fetched now" not in res.stdout:
                    defects.append(f"{where}: exit 0 on a stale view")
            elif res.code > 0:
                if res.code not in (3, 5) or res.stderr.count("\n") != 1:  # 5: GitPython's own `git version`
                    defects.append(f"{where}: not one line and exit 3 (or 5)")
                elif without_tracking(after) != without_tracking(before) or tracking(after) not in (old, new):
                    defects.append(f"{where}: the checkout changed")
            else:  # killed: the next plain run judges the moved upstream
                again = inj.run(argv(work))
                if again.code != 0 or f"origin/main {new[:12]}" not in again.stdout or tracking(look(work)) != new:
                    defects.append(f"{where}: not recovered (next run exit {again.code}: {again.stderr.strip()[:200]})")
                elif without_tracking(look(work)) != without_tracking(before):
                    defects.append(f"{where}: the checkout changed")
            shutil.rmtree(work.parent, ignore_errors=True)
    return defects, calls


def fetch_calls(log: Path) -> list[int]:
    """The numbers of the calls that talk to origin or move the ref (the fetch's own calls)."""
    return [int(line.split()[0]) for line in log.read_text().splitlines()
            if any(f" {w} " in f" {line} " for w in ("ls-remote", "fetch", "upload-pack", "update-ref"))]


def test_a_failing_fetch_is_git_failing_not_an_offline_origin(moved, tmp_path):
    """make test's case: the fetch itself fails (in the full clone): exit 3, one line, nothing
    changed; never "origin could not be reached" and a stale verdict."""
    _tmp, templates, old, _new = moved
    inj = Injector(tmp_path)
    copies = [tmp_path / name for name in ("counted", "failed")]
    for c in copies:
        shutil.copytree(templates["full"], c, symlinks=True)
    log = tmp_path / "calls.log"
    assert inj.run(["check", "--src", str(copies[0]), "--target", "main"], log=log).code == 0
    [at] = [int(line.split()[0]) for line in log.read_text().splitlines() if " fetch " in line]
    before = look(copies[1])
    res = inj.run(["check", "--src", str(copies[1]), "--target", "main"], at, "fail")
    assert res.code == 3 and res.stderr.count("\n") == 1 and "injected failure" in res.stderr, res.stderr
    assert "could not be reached" not in res.stdout + res.stderr
    assert look(copies[1]) == before and tracking(before) == old


@pytest.mark.slow  # every call of the fetch, in both kinds of clone; make test keeps the case above
@pytest.mark.sampled  # the exhaustive sweep below fails each of these calls too
@pytest.mark.parametrize("kind", ["full", "partial"])
def test_every_call_of_the_fetch_failed_or_killed(moved, tmp_path, kind):
    inj = Injector(tmp_path)
    work = tmp_path / "count" / "trtllm"
    shutil.copytree(moved[1][kind], work, symlinks=True)
    log = tmp_path / "count.log"
    assert inj.run(["check", "--src", str(work), "--target", "main"], log=log).code == 0
    points = fetch_calls(log)
    assert points, log.read_text()
    defects, _calls = sweep(moved, kind, points, tmp_path)
    assert defects == [], "\n".join(defects)


@pytest.mark.exhaustive
@pytest.mark.parametrize("kind", ["full", "partial"])
def test_every_git_call_of_a_fetching_check(moved, tmp_path, kind):
    defects, _calls = sweep(moved, kind, None, tmp_path)
    assert defects == [], "\n".join(defects)

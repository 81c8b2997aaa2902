"""A stacked copy of the project (#26): a target's own fix with pull requests of the miniature
carried beneath it as backports. The backports' patch files are made here, as a fixture, with
git format-patch from the miniature's refs/pull/<n>/head and DEP-3 trailers added by git
interpret-trailers (make backport is the command that does this for users)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from helpers import sh

STACK_PR = "19302"  # the miniature's PR whose squash commit rc25 carries under our fix in the stacked copy (conftest.stack_template)
PULL = "https://github.com/NVIDIA/TensorRT-LLM/pull/{}"
BUG_18609 = "https://github.com/NVIDIA/TensorRT-LLM/issues/18609"
LAST_UPDATE = "2026-12-01"
# What each miniature pull request is, as a fix of a stack: its title, and its test files.
PULLS = {
    "19450": ("Do not require encoder tokens for cross prefix reuse", []),  # the C++ guard alone
    "19302": ("Guard Whisper cross-KV reuse without encoder tokens",
              ["tests/unittest/_torch/executor/test_reuse_policy.py",
               "cpp/tests/unit_tests/batch_manager/capacitySchedulerTest.cpp"]),
    # A Python-only pull request of the tests' own (the miniature's are C++), which python_pull
    # pushes to a copy of the miniature.
    "20002": ("Keep one block of the reuse budget in reserve", ["tests/unittest/_torch/executor/test_reuse_reserve.py"]),
}
PY_PULL = "20002"
TARGET_FIELDS = ("upstream", "branch", "container", "extra_paths")
_INDEX = re.compile(r"^index [0-9a-f]+\.\.[0-9a-f]+( \d+)?\n", re.M)


def backport_files(miniature: Path, number: str, dest: Path, start: int, work: Path) -> list[str]:
    """The pull request's own commits (from its merge base with main) as format-patch files in
    dest, numbered from start, each message ending with the DEP-3 trailers of a backport."""
    git = work / f"pull-{number}.git"
    sh("git", "init", "-q", "--bare", git)
    sh("git", "-C", git, "fetch", "-q", miniature.as_uri(), f"refs/pull/{number}/head:refs/pull", "main:refs/main")
    base = sh("git", "-C", git, "merge-base", "refs/pull", "refs/main").stdout.strip()
    parent = base
    fields = [("Origin", f"backport, {PULL.format(number)}"), ("Bug", BUG_18609), ("Forwarded", "not-needed"),
              ("Last-Update", LAST_UPDATE)]
    for c in sh("git", "-C", git, "rev-list", "--reverse", f"{base}..refs/pull").stdout.split():
        message = sh("git", "-C", git, "log", "-1", "--format=%B", c).stdout
        message = sh("git", "-c", "trailer.separators=:", "interpret-trailers",
                     *(a for k, v in fields for a in ("--trailer", f"{k}: {v}")), input=message).stdout
        name, email, date, tree = sh("git", "-C", git, "log", "-1", "--format=%an%x00%ae%x00%aD%x00%T",
                                     c).stdout.rstrip("\n").split("\0")
        env = dict(os.environ, GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_AUTHOR_DATE=date)
        parent = subprocess.run(["git", "-C", str(git), "commit-tree", tree, "-p", parent], input=message, env=env,
                                text=True, capture_output=True, check=True).stdout.strip()
    return _format_patches(git, dest, start, f"{base}..{parent}")


def _format_patches(git: Path, dest: Path, start: int, revs: str) -> list[str]:
    """The commits of revs as format-patch files in dest from number start, as the project
    keeps them (no index lines); their names."""
    out = sh("git", "-C", git, "format-patch", "--zero-commit", "--no-signature", "--no-stat",
             f"--start-number={start}", "-o", dest, revs).stdout.split()
    names = []
    for path in map(Path, out):
        path.write_text(_INDEX.sub("", path.read_text()))
        names.append(path.name)
    return names


def entry(number: str, files: list[str]) -> str:
    """The backport's entry in the stack form of patchset.yaml."""
    title, tests = PULLS[number]
    return (f'  - id: "{number}"\n    kind: backport\n    title: "{title}"\n    bug: {BUG_18609}\n'
            f"    origin: {PULL.format(number)}\n    series:\n" + "".join(f"      - file: {f}\n" for f in files)
            + "    tests:\n      regression:" + ("".join(f"\n        - {t}" for t in tests) or " []") + "\n")


def stacked(root: Path, target: str, miniature: Path, work: Path, pulls=("19302",), ours_id: str = "19514",
            after: str = "") -> Path:
    """patches/<target>/patchset.yaml in the stack form: the pulls as backports, then our fix
    (then `after`, entries of further fixes). Returns the patch set's folder."""
    set_dir = root / "patches" / target
    meta = set_dir / "patchset.yaml"
    head, fix = [], []
    for block in top_level_blocks(meta.read_text()):
        (head if block.split(":", 1)[0] in TARGET_FIELDS else fix).append(block)
    backports, start = "", 1
    for n in pulls:
        files = backport_files(miniature, n, set_dir, start, work)
        start += len(files)
        backports += entry(n, files)
    ours = "".join("    " + line if line.strip() else line for b in fix for line in b.splitlines(keepends=True))
    meta.write_text("".join(head) + "fixes:\n" + backports + f'  - id: "{ours_id}"\n    kind: ours\n' + ours + after)
    return set_dir


def top_level_blocks(text: str) -> list[str]:
    """patchset.yaml's top-level blocks (a key and what is indented under it), comments left out."""
    blocks, cur = [], ""
    for line in text.splitlines(keepends=True):
        if line.startswith("#"):
            continue
        if line[:1] not in (" ", "-", "\n") and cur:
            blocks.append(cur)
            cur = ""
        cur += line
    return blocks + [cur]


ISSUE = "https://github.com/NVIDIA/TensorRT-LLM/issues/{}"


def own_fix(root: Path, target: str, miniature: Path, work: Path, fix_id: str, ref: str, edits: dict[str, tuple[str, str]],
            new: dict[str, str], start: int) -> list[str]:
    """A fix of our own made on top of the stack as it stands in patches/<target> (git am of its
    files on ref): a commit with each of edits' files with one text replaced, then one adding the
    new files, each with our DEP-3 trailers, written as patches/<target>/<start>-*.patch.
    Returns its file names."""
    set_dir = root / "patches" / target
    tree = work / f"own-{fix_id}"
    sh("git", "clone", "-q", miniature.as_uri(), tree)
    sh("git", "-C", tree, "checkout", "-q", "--detach", ref)
    ps_files = sorted(p for p in set_dir.glob("*.patch"))
    if ps_files:
        sh("git", "-C", tree, "am", "-q", *ps_files)
    url = ISSUE.format(fix_id)
    trailers = f"Origin: vendor, {url}\nBug: {url}\nForwarded: no\nLast-Update: {LAST_UPDATE}"
    commits = 0
    for kind, files in (("fix", edits), ("test", new)):  # the change, then its tests: a commit each
        if not files:
            continue
        for path, change in files.items():
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            if kind == "fix":
                text = (tree / path).read_text()
                assert change[0] in text, (path, change[0])
                change = text.replace(change[0], change[1], 1)
            (tree / path).write_text(change)
        sh("git", "-C", tree, "add", "-A")
        sh("git", "-C", tree, "commit", "-q", "-m", f"[#{fix_id}][{kind}] A {kind} of ours on the stack\n\n"
           f"Why it is needed.\n\n{trailers}")
        commits += 1
    return _format_patches(tree, set_dir, start, f"-{commits}")


def own_entry(fix_id: str, files: list[str], tests: list[str]) -> str:
    url = ISSUE.format(fix_id)
    return (f'  - id: "{fix_id}"\n    kind: ours\n    title: "A fix of ours on the stack"\n    bug: {url}\n'
            "    series:\n" + "".join(f"      - file: {f}\n" for f in files)
            + "    tests:\n      regression:\n" + "".join(f"        - {t}\n" for t in tests)
            + ("" if tests else "        []\n")
            + '    pr:\n      checklist:\n        - item: "documentation of the changed behaviour"\n'
            '          answer: n/a\n          why: "a change of the test stack that no documentation describes"\n')


def push_pull(upstream: Path, number: str, files: dict[str, str | tuple[str, str]], message: str,
              base: str = "main") -> str:
    """refs/pull/<number>/head on upstream (a repository of the test's own): one commit on base
    writing files (path -> its text, or (old, new): one text of it replaced). A pull request
    of the test's own, for a shape the miniature's own pulls do not have. Returns its commit."""
    work = upstream.parent / f"pull-{number}-work"
    sh("git", "clone", "-q", upstream.as_uri(), work)
    sh("git", "-C", work, "checkout", "-q", "--detach", base)
    for path, text in files.items():
        target = work / path
        if isinstance(text, tuple):
            old, new = text
            assert old in target.read_text(), (path, old)
            text = target.read_text().replace(old, new, 1)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    sh("git", "-C", work, "add", "-A")
    sh("git", "-C", work, "commit", "-q", "-m", message)
    sh("git", "-C", work, "push", "-q", "origin", f"HEAD:refs/pull/{number}/head")
    head = sh("git", "-C", work, "rev-parse", "HEAD").stdout.strip()
    shutil.rmtree(work)
    return head


def python_pull(upstream: Path) -> str:
    """PY_PULL on upstream (a copy of the tests' own): reuse_policy.py keeps a block in reserve,
    and a test of it that fails without the change. Returns its commit."""
    return push_pull(upstream, PY_PULL, {
        "tensorrt_llm/_torch/pyexecutor/reuse_policy.py": ("reserved, 0)", "reserved - 1, 0)"),
        PULLS[PY_PULL][1][0]: ("from tensorrt_llm._torch.pyexecutor.reuse_policy import reuse_budget\n\n\n"
                               "def test_one_block_stays_in_reserve():\n    assert reuse_budget(10) == 9\n")},
        f"[#20001][fix] {PULLS[PY_PULL][0]}")

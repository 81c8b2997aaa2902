"""The private index is slim (git/index.py): it loads only the paths it is asked about and lays
them over the base tree. Its trees must be exactly git's own: the same series applied in a
full index (read-tree, apply --cached, write-tree) gives the same tree ids, commit by commit,
for every kind of change a patch carries, and git refuses in it what git refuses in a full one."""
from __future__ import annotations

import os

from patchkit.git import Repo

from helpers import sh


def _repo(tmp_path):
    r = tmp_path / "r"
    sh("git", "init", "-q", r)
    files = {"a/b/keep.py": "k = 1\n", "a/b/gone.py": "g = 1\n", "a/only.py": "o = 1\n",
             "top.txt": "t\n", "tool.sh": "echo\n", "z/deep/er/x.py": "x = 1\n", "b-c/d.py": "d\n",
             "b.py": "b\n", "dir x/t\u00e9st \"q\".py": "q\n", "dir x/other.py": "o\n"}
    for name, text in files.items():
        (r / name).parent.mkdir(parents=True, exist_ok=True)
        (r / name).write_text(text)
    os.symlink("a", r / "link")
    sh("git", "-C", r, "add", "-A")
    sh("git", "-C", r, "commit", "-qm", "base")
    return r


def _diff(r, change) -> str:
    """The diff a change to the work tree makes, as format-patch would carry it."""
    change(r)
    sh("git", "-C", r, "add", "-A")
    out = sh("git", "-C", r, "diff", "--cached", "-M", "--binary", "HEAD").stdout
    sh("git", "-C", r, "commit", "-qm", "step")
    return out


def _full_index_trees(r, base: str, diffs: list[str]) -> list[str]:
    env = dict(os.environ, GIT_INDEX_FILE=str(r / ".git" / "full-index"))
    sh("git", "-C", r, "read-tree", base, env=env)
    trees = []
    for d in diffs:
        sh("git", "-C", r, "apply", "--cached", "-", input=d, env=env)
        trees.append(sh("git", "-C", r, "write-tree", env=env).stdout.strip())
    return trees


def test_the_slim_index_writes_gits_own_trees_for_every_kind_of_change(tmp_path):
    r = _repo(tmp_path)
    base = sh("git", "-C", r, "rev-parse", "HEAD").stdout.strip()

    def rm(p):
        return lambda r: (r / p).unlink()

    def write(p, text):
        def go(r):
            (r / p).parent.mkdir(parents=True, exist_ok=True)
            (r / p).write_text(text)
        return go

    def rename(a, b):
        return lambda r: (r / a).rename(r / b)

    changes = [
        write("a/b/keep.py", "k = 2\n"),              # a change deep down
        rm("a/b/gone.py"),                            # a removal; the folder stays
        write("new/dir/n.py", "n = 1\n"),             # a new file in new folders
        rename("a/only.py", "moved.py"),              # a rename across folders
        lambda r: (r / "tool.sh").chmod(0o755),       # a mode change alone
        rm("z/deep/er/x.py"),                         # the last file: three folders go
        write("b-c/d.py", "d2\n"),                    # git's order: 'b-c' sorts before 'b.py' and 'b/'
        write("b/e.py", "e\n"),
        lambda r: ((r / "link").unlink(), os.symlink("new", r / "link")),  # a symlink retargeted
        write("top.txt", "t\n" * 3),
        rename("dir x/t\u00e9st \"q\".py", "dir x/r\u00e9nam\u00e9.py"),  # names git quotes: UTF-8, a quote
    ]
    diffs = [_diff(r, c) for c in changes]
    repo = Repo(r)
    with repo.temp_index(base) as index:
        slim = []
        for d in diffs:
            ok, said = index.apply(d, atomic=True)
            assert ok, said + d
            slim.append(index.write_tree())
    assert slim == _full_index_trees(r, base, diffs)
    assert slim[-1] == sh("git", "-C", r, "rev-parse", "HEAD^{tree}").stdout.strip()


def test_the_slim_index_refuses_what_a_full_index_refuses(tmp_path):
    r = _repo(tmp_path)
    base = sh("git", "-C", r, "rev-parse", "HEAD").stdout.strip()
    creates_existing = ("diff --git a/a/b/keep.py b/a/b/keep.py\nnew file mode 100644\n--- /dev/null\n"
                        "+++ b/a/b/keep.py\n@@ -0,0 +1 @@\n+k = 3\n")
    beyond_link = ("diff --git a/link/new.py b/link/new.py\nnew file mode 100644\n--- /dev/null\n"
                   "+++ b/link/new.py\n@@ -0,0 +1 @@\n+n = 1\n")
    stale = ("diff --git a/top.txt b/top.txt\n--- a/top.txt\n+++ b/top.txt\n@@ -1 +1 @@\n-not this\n+t2\n")
    repo = Repo(r)
    env = dict(os.environ, GIT_INDEX_FILE=str(r / ".git" / "full-index"))
    sh("git", "-C", r, "read-tree", base, env=env)
    for d in (creates_existing, beyond_link, stale):
        full = sh("git", "-C", r, "apply", "--cached", "--check", "-", input=d, env=env, check=False)
        with repo.temp_index(base) as index:
            ok, said = index.apply(d, atomic=True)
            assert (ok, ok or said.strip().splitlines()[-1]) == (full.returncode == 0, full.returncode == 0 or
                                                                 full.stderr.strip().splitlines()[-1])
            assert not ok
            assert index.write_tree() == sh("git", "-C", r, "rev-parse", f"{base}^{{tree}}").stdout.strip()


def test_reading_adding_and_removing_a_file_see_the_tree_being_built(tmp_path):
    r = _repo(tmp_path)
    base = sh("git", "-C", r, "rev-parse", "HEAD").stdout.strip()
    repo = Repo(r)
    with repo.temp_index(base) as index:
        assert index.read("a/b/keep.py") == b"k = 1\n" and index.read("nowhere.py") is None
        index.add("a/b/keep.py", b"k = 9\n")
        index.remove("top.txt")
        index.add("c/new.py", b"c\n", "100755")
        assert index.read("a/b/keep.py") == b"k = 9\n" and index.read("top.txt") is None
        tree = index.write_tree()
    listed = sh("git", "-C", r, "ls-tree", "-r", tree).stdout
    assert "top.txt" not in listed and "100755 blob" in listed and "c/new.py" in listed
    assert sh("git", "-C", r, "show", f"{tree}:a/b/keep.py").stdout == "k = 9\n"
    assert sh("git", "-C", r, "fsck", "--no-dangling", "--connectivity-only").returncode == 0

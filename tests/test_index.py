"""The private index is slim (git/index.py): it loads only the paths it is asked about and lays
them over the base tree. Its trees must be exactly git's own: the same series applied in a
full index (read-tree, apply --cached, write-tree) gives the same tree ids, commit by commit,
for every kind of change a patch carries, and git refuses in it what git refuses in a full one."""
from __future__ import annotations

import os
from pathlib import Path
import subprocess

import pytest

from patchkit.git import GitError, Repo

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


def _full_index(r, base: str, diff: str) -> tuple[bool, str]:
    """What a full index makes of diff on base: (applied, its tree or git's last line of complaint)."""
    env = dict(os.environ, GIT_INDEX_FILE=str(r / ".git" / "full-index"))
    sh("git", "-C", r, "read-tree", base, env=env)
    res = sh("git", "-C", r, "apply", "--cached", "-", input=diff, env=env, check=False)
    if res.returncode:
        return False, res.stderr.strip().splitlines()[-1]
    return True, sh("git", "-C", r, "write-tree", env=env).stdout.strip()


def _slim_index(r, base: str, diff: str) -> tuple[bool, str]:
    with Repo(r).temp_index(base) as index:
        ok, said = index.apply(diff, atomic=True)
        return ok, index.write_tree() if ok else said.strip().splitlines()[-1]


def _mod(old_name: str, new_name: str, before: str = "t", after: str = "t2") -> str:
    """A hunk-only change of top.txt-like files, named as a hand-made diff names them."""
    return f"--- {old_name}\n+++ {new_name}\n@@ -1 +1 @@\n-{before}\n+{after}\n"


# Patches git applies (or refuses) by names diff_paths once missed or could not read: each must
# come out of the slim index exactly as out of a full one.
_NAMES_GIT_READS = {
    "a traditional diff's dates after spaces": _mod("a/top.txt 2020-01-01 00:00:00.000000000 +0000",
                                                    "b/top.txt 2020-01-02 00:00:00.000000000 +0000"),
    "a traditional diff of a name ending in a space": _mod("a/trail ", "b/trail ", "r", "r2"),
    "names with doubled slashes": "diff --git a/a//b/keep.py b/a//b/keep.py\n" + _mod("a/a//b/keep.py", "b/a//b/keep.py", "k = 1", "k = 2"),
    "a mode change, the names apart by a tab": "diff --git a/top.txt\tb/top.txt\nold mode 100644\nnew mode 100755\n",
    "a mode change, a quoted name after a tab": 'diff --git a/top.txt\t"b/top.txt"\nold mode 100644\nnew mode 100755\n',
    "a quote git cannot undo on the diff line": 'diff --git a/top.txt" b/top.txt"\nold mode 100644\nnew mode 100755\n',
    "an octal escape git cannot undo": 'diff --git "a/\\19" "b/\\19"\n' + _mod('"a/\\19"', '"b/\\19"'),
    "words after a quoted name": _mod('"a/top.txt" x', '"b/top.txt" x'),
    "a name with a line separator git leaves unquoted (core.quotepath=false)":
        "diff --git a/line\u2028sep.py b/line\u2028sep.py\n" + _mod("a/line\u2028sep.py", "b/line\u2028sep.py", "l", "l2"),
    "rename old and new, git's older words": "diff --git a/x b/x\nsimilarity index 100%\nrename old top.txt\nrename new moved.txt\n",
    "a traditional diff without folders, then a git diff read at -p0":
        _mod("top.txt.orig", "top.txt") + "diff --git a/only.py b/only.py\n" + _mod("a/only.py", "b/only.py", "o = 1", "o = 2"),
}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One base for the cases below (each only adds objects to it; its full index is its own)."""
    r = _repo(tmp_path_factory.mktemp("shared"))
    (r / "trail ").write_text("r\n")
    (r / "line\u2028sep.py").write_text("l\n")
    sh("git", "-C", r, "add", "-A")
    sh("git", "-C", r, "commit", "-qm", "a name ending in a space, a name with a line separator")
    return r


@pytest.mark.parametrize("diff", list(_NAMES_GIT_READS.values()), ids=list(_NAMES_GIT_READS))
def test_every_name_git_reads_in_a_header_is_in_the_slim_index(shared, diff):
    assert _slim_index(shared, "HEAD", diff) == _full_index(shared, "HEAD", diff)


def _create(path: str, mode: str = "100644") -> str:
    return f"diff --git a/{path} b/{path}\nnew file mode {mode}\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+n\n"


def _delete(path: str, text: str) -> str:
    return f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n--- a/{path}\n+++ /dev/null\n@@ -1 +0,0 @@\n-{text}\n"


_FILES_AND_FOLDERS = {
    "a file where a folder is": _create("a/b"),
    "a file where a folder was partly emptied": _delete("a/b/gone.py", "g = 1") + _create("a/b"),
    "a file where a folder was emptied": _delete("a/b/gone.py", "g = 1") + _delete("a/b/keep.py", "k = 1") + _create("a/b"),
    "a symlink where a folder is": _create("z/deep", "120000"),
    "a folder where a file was": _delete("top.txt", "t") + _create("top.txt/n.py"),
    "a folder where a file is": _create("top.txt/n.py"),
}


@pytest.mark.parametrize("diff", list(_FILES_AND_FOLDERS.values()), ids=list(_FILES_AND_FOLDERS))
def test_a_file_and_a_folder_at_one_path_as_a_full_index_has_them(shared, diff):
    assert _slim_index(shared, "HEAD", diff) == _full_index(shared, "HEAD", diff)


def test_adding_a_file_where_a_folder_is_is_refused_as_git_refuses_it(tmp_path):
    r = _repo(tmp_path)
    env = dict(os.environ, GIT_INDEX_FILE=str(r / ".git" / "full-index"))
    sh("git", "-C", r, "read-tree", "HEAD", env=env)
    blob = sh("git", "-C", r, "hash-object", "-w", "--stdin", input="n\n").stdout.strip()
    full = sh("git", "-C", r, "update-index", "--add", "--cacheinfo", f"100644,{blob},a/b", env=env, check=False)
    assert full.returncode != 0
    with Repo(r).temp_index("HEAD") as index, pytest.raises(GitError):
        index.add("a/b", b"n\n")


def test_a_folder_rewritten_writes_an_old_trees_modes_as_git_does(tmp_path):
    """A tree from an old git may hold 100664: git's index reads it as 100644, and a folder it
    rewrites says so; the slim index's rewrite of that folder must too."""
    r = _repo(tmp_path)
    inner = sh("git", "-C", r, "ls-tree", "HEAD:a/b").stdout.replace("100644 blob", "100664 blob", 1)
    sub = sh("git", "-C", r, "mktree", input=inner).stdout.strip()
    assert b"100664 " in subprocess.run(["git", "-C", r, "cat-file", "tree", sub], capture_output=True).stdout
    top = sh("git", "-C", r, "ls-tree", "HEAD:a").stdout.replace(sh("git", "-C", r, "rev-parse", "HEAD:a/b").stdout.strip(), sub)
    a = sh("git", "-C", r, "mktree", input=top).stdout.strip()
    root = sh("git", "-C", r, "mktree", input=sh("git", "-C", r, "ls-tree", "HEAD").stdout.replace(
        sh("git", "-C", r, "rev-parse", "HEAD:a").stdout.strip(), a)).stdout.strip()
    diff = "diff --git a/a/b/keep.py b/a/b/keep.py\n" + _mod("a/a/b/keep.py", "b/a/b/keep.py", "k = 1", "k = 2")
    assert _slim_index(r, root, diff) == _full_index(r, root, diff)


def test_a_users_split_index_setting_leaves_nothing_in_their_git_folder(tmp_path, monkeypatch):
    """core.splitIndex=true (or feature.manyFiles' index v4) in the user's config: the private
    index is neither split (its shared part would land in .git as sharedindex.*) nor unreadable."""
    r = _repo(tmp_path)
    base = sh("git", "-C", r, "rev-parse", "HEAD").stdout.strip()
    cfg = Path(os.environ["GIT_CONFIG_GLOBAL"])
    cfg.write_text(cfg.read_text() + "[core]\n\tsplitIndex = true\n[feature]\n\tmanyFiles = true\n")
    before = sorted(p.name for p in (r / ".git").iterdir())
    with Repo(r).temp_index(base) as index:
        index.add("a/b/keep.py", b"k = 5\n")
        tree = index.write_tree()
        assert index.read("a/b/keep.py") == b"k = 5\n"
    assert sorted(p.name for p in (r / ".git").iterdir()) == before
    assert sh("git", "-C", r, "show", f"{tree}:a/b/keep.py").stdout == "k = 5\n"


def _series(r, tmp_path: Path, changes) -> tuple[str, list, list[str]]:
    """Each change committed in r, then the commits as a series of patch files, parsed as a set's
    are: (the base, the patches, their diffs)."""
    from patchkit import patchset
    base = sh("git", "-C", r, "rev-parse", "HEAD").stdout.strip()
    diffs = [_diff(r, c) for c in changes]
    out = tmp_path / "series"
    sh("git", "-C", r, "format-patch", "-q", "--binary", "-M", "-o", out, f"{base}..HEAD")
    return base, [patchset.parse_patch(p) for p in sorted(out.glob("*.patch"))], diffs


def _applied(monkeypatch, r, base, patches) -> tuple[list[str], int]:
    """apply_series as make apply records it: the commits, and how many git apply it ran."""
    from patchkit import series
    from patchkit.git import Identity, Index
    calls = []
    real = Index.apply
    monkeypatch.setattr(Index, "apply", lambda self, diff, **kw: calls.append(1) or real(self, diff, **kw))
    res = series.apply_series(Repo(r), base, patches, committer=Identity("C", "c@example.com"),
                              committer_date="2026-01-01T00:00:00+00:00")
    monkeypatch.setattr(Index, "apply", real)
    assert all(o.status == series.APPLIED for o in res.outcomes)
    return [o.commit for o in res.outcomes], len(calls)


def test_a_series_on_files_apart_is_one_git_apply_and_each_patch_its_own_commit(tmp_path, monkeypatch):
    """#34 item 5: a stack's cold apply ran a git apply and a git commit-tree for each patch.
    When no two patches touch one file (nor a file where another has a folder), the series is
    applied in one git apply and each patch committed from it, of its own files: git's own trees
    commit by commit, the very commits the patch-by-patch way makes; a series that shares a file
    goes patch by patch, as before."""
    from patchkit import series
    r = _repo(tmp_path)

    def write(p, text):
        def go(r):
            (r / p).parent.mkdir(parents=True, exist_ok=True)
            (r / p).write_text(text)
        return go
    base, patches, diffs = _series(r, tmp_path / "apart", [
        write("a/b/keep.py", "k = 2\n"), lambda r: (r / "z/deep/er/x.py").unlink(), write("new/dir/n.py", "n\n"),
        lambda r: (r / "a/only.py").rename(r / "moved.py"), write("b-c/d.py", "d2\n"),
        lambda r: (r / "dir x/t\u00e9st \"q\".py").rename(r / "dir x/r\u00e9nam\u00e9.py")])
    commits, applies = _applied(monkeypatch, r, base, patches)
    trees = [sh("git", "-C", r, "rev-parse", f"{c}^{{tree}}").stdout.strip() for c in commits]
    assert (trees, applies) == (_full_index_trees(r, base, diffs), 1)
    monkeypatch.setattr(series, "_apart", lambda patches: False)  # the patch-by-patch way
    assert _applied(monkeypatch, r, base, patches) == (commits, len(patches))
    monkeypatch.undo()

    for name, shared in (("one file", [write("b.py", "b2\n"), write("top.txt", "t2\n"), write("b.py", "b3\n")]),
                         ("a file, then a folder there", [lambda r: (r / "top.txt").unlink(), write("top.txt/in.py", "i\n")])):
        base, patches, diffs = _series(r, tmp_path / name.replace(" ", "-"), shared)
        commits, applies = _applied(monkeypatch, r, base, patches)
        trees = [sh("git", "-C", r, "rev-parse", f"{c}^{{tree}}").stdout.strip() for c in commits]
        assert (trees, applies) == (_full_index_trees(r, base, diffs), len(patches)), name

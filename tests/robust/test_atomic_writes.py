"""Issue #17 item 6: every file we write is written beside its place, synced and renamed in.

A full disk is a real one: a small tmpfs mounted over the folder the command writes to, filled
to one free page (root only; skipped, with the reason, where mounting is not allowed).
"""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from patchkit import atomic
from patchkit.cli import main
from helpers import copy_root, sh

PAGE = 4096


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def full_disk(tmp_path):
    """mount(folder): folder on its own tmpfs holding what it held (files and folders), with one
    page left free."""
    mounted: list[Path] = []

    def mount(folder: Path) -> Path:
        if os.geteuid() != 0:
            pytest.skip("a real full disk needs a tmpfs mount, which needs root")
        keep = tmp_path / f"kept-{len(mounted)}"
        shutil.copytree(folder, keep)
        res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
        mounted.append(folder)
        shutil.copytree(keep, folder, dirs_exist_ok=True)
        filler = folder / ".filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while True:
                os.write(fd, b"\0" * PAGE)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        os.truncate(filler, filler.stat().st_size - PAGE)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_export_on_a_full_disk_leaves_every_patch_and_the_series_whole(capsys, tmp_path, checkout, full_disk):
    """#17.6: export on a full disk cut a patch file to 4 KB, its diff gone, and exited 3."""
    root = copy_root(tmp_path)
    assert main(["--root", str(root), "apply", "--target", "main", "--src", str(checkout)]) == 0
    # A longer message for one commit, and a new commit: a changed patch, a new one, a new series.
    origin = "Origin: vendor, https://github.com/NVIDIA/TensorRT-LLM/issues/19514\nForwarded: no"
    sh("git", "-C", checkout, "commit", "-q", "--amend", "-m", "[#19514][test] Reworded\n\n" + "why " * 3000
       + "\n\n" + origin)
    (checkout / "NEWFILE").write_text("new\n" * 2000)
    sh("git", "-C", checkout, "add", "NEWFILE")
    sh("git", "-C", checkout, "commit", "-q", "-m", "[#19514][fix] One more\n\n" + origin)
    patches = full_disk(root / "patches")  # the set is swapped in beside its place: the disk it is on is full
    folder = patches / "main"
    before = _files(folder)
    capsys.readouterr()
    code = main(["--root", str(root), "export", "--target", "main", "--src", str(checkout)])
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1, err
    assert "No space left on device" in err and str(folder) in err, err
    assert _files(folder) == before  # nothing cut, nothing added, nothing left behind
    assert not [p for p in patches.iterdir() if atomic.TMP_MARK in p.name]
    assert not [p for p in folder.iterdir() if atomic.TMP_MARK in p.name]


def test_pr_files_stay_whole_when_the_new_ones_cannot_be_written(tmp_path):
    """#17.6: make pr removed build/pr/<target>/ first, then wrote; a failure left nothing."""
    dest = tmp_path / "pr" / "rc25"
    dest.mkdir(parents=True)
    (dest / "title.txt").write_text("old title\n")
    with pytest.raises(RuntimeError):
        with atomic.replace_dir(dest) as fresh:
            (fresh / "title.txt").write_text("new title\n")
            raise RuntimeError("the PR body failed half way")
    assert (dest / "title.txt").read_text() == "old title\n"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["rc25"]
    with atomic.replace_dir(dest) as fresh:
        (fresh / "title.txt").write_text("new title\n")
    assert (dest / "title.txt").read_text() == "new title\n"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["rc25"]


def test_a_new_file_gets_the_mode_a_plain_write_would_give_and_an_old_one_keeps_its_own(tmp_path):
    """mkstemp makes 0600 files: a patch written through it would be unreadable to the group."""
    old_mask = os.umask(0o022)
    try:
        atomic.write_text(tmp_path / "new.patch", "x\n")
        assert (tmp_path / "new.patch").stat().st_mode & 0o777 == 0o644
        (tmp_path / "old.patch").write_text("y\n")
        (tmp_path / "old.patch").chmod(0o600)
        atomic.write_text(tmp_path / "old.patch", "z\n")
        assert (tmp_path / "old.patch").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old_mask)

"""Issue #17 item 7: apply on a work tree it cannot write must not say "applied".

git checkout exits 0 when it cannot unlink a file; apply then printed "applied" with HEAD on
the overlay branch and main's files on disk, after which apply and unapply both refused.
The unwritable file is made with chattr +i (works for root, as the suite runs in CI).
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from patchkit.cli import main
from helpers import ROOT, state_of

UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"


@pytest.fixture
def immutable():
    made = []

    def make(path):
        if not shutil.which("chattr"):
            pytest.skip("chattr is not installed")
        res = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if res.returncode != 0:
            pytest.skip(f"cannot make a file immutable here: {res.stderr.strip()}")
        made.append(path)

    yield make
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], check=False)


def test_apply_on_a_file_it_cannot_write_rolls_back_naming_the_file(capsys, checkout, immutable):
    immutable(checkout / UTIL)
    before = state_of(checkout)
    code = main(["--root", str(ROOT), "apply", "--target", "main", "--src", str(checkout)])
    out, err = capsys.readouterr()
    assert code == 3 and err.count("\n") == 1, (out, err)
    assert f"could not write {checkout / UTIL}" in err and "Operation not permitted" in err, err
    assert "applied" not in out
    assert state_of(checkout) == before
    # and the checkout is usable: once the file is writable again, apply works
    subprocess.run(["chattr", "-i", str(checkout / UTIL)], check=True)
    assert main(["--root", str(ROOT), "apply", "--target", "main", "--src", str(checkout)]) == 0


def test_unapply_on_a_file_it_cannot_write_keeps_the_overlay_checked_out(capsys, checkout, immutable):
    assert main(["--root", str(ROOT), "apply", "--target", "main", "--src", str(checkout)]) == 0
    immutable(checkout / UTIL)
    before = state_of(checkout)
    capsys.readouterr()
    code = main(["--root", str(ROOT), "unapply", "--target", "main", "--src", str(checkout)])
    out, err = capsys.readouterr()
    assert code == 3 and err.count("\n") == 1, (out, err)
    assert f"could not write {checkout / UTIL}" in err, err
    assert state_of(checkout) == before

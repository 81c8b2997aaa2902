"""Issue #17 item 12: names git refuses and YAML that says one thing twice are bad input (exit 2)."""
from __future__ import annotations

import pytest

from patchkit.cli import main
from helpers import copy_root, state_of


def run(capsys, root, *argv):
    code = main(["--root", str(root), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_branch_HEAD_in_patchset_yaml_is_refused(capsys, tmp_path, checkout):
    """#17.12: `branch: HEAD` was accepted and made refs/heads/HEAD, which `git check-ref-format
    --branch HEAD` refuses (git itself will not create a branch called HEAD)."""
    root = copy_root(tmp_path)
    meta = root / "patches" / "rc25" / "patchset.yaml"
    meta.write_text(meta.read_text().replace("branch: overlay/rc25\n", "branch: HEAD\n", 1))
    before = state_of(checkout)
    code, _, err = run(capsys, root, "apply", "--target", "rc25", "--src", str(checkout))
    assert (code, err.count("\n")) == (2, 1), err
    assert "patchset.yaml: branch: 'HEAD' is not a valid branch name" in err
    assert state_of(checkout) == before


@pytest.mark.parametrize("rel, old, new, key", [
    ("patches/rc25/patchset.yaml", "branch: overlay/rc25\n", "branch: overlay/rc25\nbranch: overlay/other\n",
     "branch"),
    ("patches/rc25/patchset.yaml", "  ref: v1.3.0rc25\n", "  ref: v1.3.0rc25\n  ref: main\n", "upstream.ref"),
    ("waivers/rc25.yaml", "waives_file:", "reason: twice\nwaives_file:", "reason"),
])
def test_a_duplicated_yaml_key_is_an_error_naming_file_and_key(capsys, tmp_path, rel, old, new, key):
    """#17.12: a key written twice was read as "the last one wins"; the user meant one of them."""
    root = copy_root(tmp_path)
    f = root / rel
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new, 1))
    code, _, err = run(capsys, root, "targets")
    assert (code, err.count("\n")) == (2, 1), err
    assert rel in err and f"{key}: duplicated key" in err, err

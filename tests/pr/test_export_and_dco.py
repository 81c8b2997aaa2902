"""make export / check-export round trips, and the DCO check and fix."""
from __future__ import annotations

import pytest

from patchkit import apply as apply_mod, patchset
from patchkit.cli import main
from patchkit.errors import BadInput
from patchkit.git import Identity, Repo
from patchkit.pr import dco, export as export_mod
from helpers import copy_root, sh


def test_export_of_an_unchanged_branch_is_byte_identical(checkout, tmp_path, capsys):
    root = copy_root(tmp_path)
    ps = patchset.load(root, "main")
    apply_mod.apply(ps, src=checkout)
    first = export_mod.export(ps, Repo(checkout), "overlay/main")  # the miniature's line numbers
    files = {p.name: p.read_bytes() for p in ps.root.glob("*.patch")}
    meta = (ps.root / "patchset.yaml").read_bytes()
    again = export_mod.export(patchset.load(root, "main"), Repo(checkout), "overlay/main")
    assert again.up_to_date and not again.changed
    assert {p.name: p.read_bytes() for p in ps.root.glob("*.patch")} == files
    assert (ps.root / "patchset.yaml").read_bytes() == meta
    assert not any(b"\nindex " in data for data in files.values())
    code = main(["--root", str(root), "check-export", "--target", "main", "--src", str(checkout)])
    assert code == 0 and "byte-identical" in capsys.readouterr().out
    assert first.written == sorted(files)


def test_exported_set_applies_and_exports_identically(checkout, tmp_path, upstream):
    root = copy_root(tmp_path)
    apply_mod.apply(patchset.load(root, "rc25"), src=checkout)
    export_mod.export(patchset.load(root, "rc25"), Repo(checkout), "overlay/rc25")
    exported = {p.name: p.read_bytes() for p in (root / "patches" / "rc25").glob("*.patch")}
    other = tmp_path / "other"
    sh("git", "clone", "-q", upstream.as_uri(), other)
    apply_mod.apply(patchset.load(root, "rc25"), src=other)  # the waiver commit is recomputed, not exported
    res = export_mod.export(patchset.load(root, "rc25"), Repo(other), "overlay/rc25", check_only=True)
    assert res.up_to_date
    res = export_mod.export(patchset.load(root, "rc25"), Repo(other), "overlay/rc25", waiver_out=tmp_path / "w")
    [waiver_patch] = (tmp_path / "w").glob("*.patch")
    assert res.waiver_patch == str(waiver_patch)
    assert "-unittest/_torch/executor SKIP (https://nvbugs/6800103)" in waiver_patch.read_text()
    assert {p.name: p.read_bytes() for p in (root / "patches" / "rc25").glob("*.patch")} == exported


def test_check_export_fails_when_the_branch_moved_on(checkout, tmp_path, capsys):
    root = copy_root(tmp_path)
    ps = patchset.load(root, "main")
    apply_mod.apply(ps, src=checkout)
    export_mod.export(ps, Repo(checkout), "overlay/main")
    message = sh("git", "-C", checkout, "log", "-1", "--format=%B").stdout.split("\n", 1)[1]  # its trailers kept
    sh("git", "-C", checkout, "commit", "-q", "--amend", "-m", "[#19514][doc] A reworded docs commit\n" + message)
    code = main(["--root", str(root), "check-export", "--target", "main", "--src", str(checkout)])
    out = capsys.readouterr().out
    assert code == 1 and "differs from overlay/main" in out and "changed: 0003-19514-doc-A-reworded" in out
    # The hint repeats the user's own checkout, so that it runs as printed.
    assert f"run: patchkit --root {root} export --target main --src {checkout}" in out


def _commit(repo, msg, author="Ann Author <ann@example.com>", committer=("Ann Author", "ann@example.com"),
            file="f.txt"):
    (repo / file).write_text(msg)
    sh("git", "-C", repo, "add", file)
    env_args = ["-c", f"user.name={committer[0]}", "-c", f"user.email={committer[1]}"]
    sh("git", "-C", repo, *env_args, "commit", "-q", "--author", author, "-m", msg)


@pytest.fixture
def dco_repo(checkout):
    sh("git", "-C", checkout, "checkout", "-q", "-b", "work")
    return checkout


def test_dco_cases(dco_repo):
    """#33 item 7: a sign-off that matches only the committer passed make dco; GitHub's DCO check
    asks for the author's (and make pr's branches are now authored by the sign-off)."""
    r = dco_repo
    _commit(r, "good\n\nSigned-off-by: Ann Author <ann@example.com>")
    _commit(r, "case differs\n\nSigned-off-by: ANN AUTHOR <Ann@Example.COM>")
    _commit(r, "by committer\n\nSigned-off-by: Carl Committer <carl@example.com>", committer=("Carl Committer", "carl@example.com"))
    _commit(r, "several trailers\n\nSigned-off-by: Someone Else <else@example.com>\nSigned-off-by: Ann Author <ann@example.com>")
    _commit(r, "missing trailer")
    _commit(r, "wrong email\n\nSigned-off-by: Ann Author <ann@other.example.com>")
    _commit(r, "wrong name\n\nSigned-off-by: Anne Author <ann@example.com>")
    sh("git", "-C", r, "checkout", "-q", "-b", "side", "HEAD~1")
    _commit(r, "side work\n\nSigned-off-by: Ann Author <ann@example.com>", file="g.txt")
    sh("git", "-C", r, "checkout", "-q", "work")
    sh("git", "-C", r, "merge", "-q", "--no-ff", "-m", "Merge without sign-off", "side")
    res = dco.check(Repo(r), "work")
    assert res.skipped_merges == 1 and res.checked == 8
    bad = {v.subject: v.reason for v in res.violations}
    assert set(bad) == {"by committer", "missing trailer", "wrong email", "wrong name"}
    assert bad["by committer"] == ("signed off by its committer (Carl Committer <carl@example.com>) only, not by its "
                                   "author (Ann Author <ann@example.com>)")
    assert bad["missing trailer"] == "no Signed-off-by trailer"
    assert "does not name its author" in bad["wrong email"]
    assert "name differs" in bad["wrong name"]


def test_dco_fix_rewrites_keeps_a_backup_and_refuses_merges(dco_repo, capsys):
    r = dco_repo
    _commit(r, "one")
    _commit(r, "two\n\nSigned-off-by: Ann Author <ann@example.com>")
    old = sh("git", "-C", r, "rev-parse", "work").stdout.strip()
    code = main(["dco", "--src", str(r), "--branch", "work"])
    assert code == 1 and "1 violation" in capsys.readouterr().out
    # #33 item 7: a sign-off is its author's to add: another's commits are refused, nothing moves
    with pytest.raises(BadInput, match=r"1 commit\(s\) of work to sign off are authored by Ann Author <ann@example.com>, "
                                       r"not by Fixer Person <fixer@example.com>") as exc:
        dco.fix(Repo(r), "work", Identity("Fixer Person", "fixer@example.com"))
    assert exc.value.hint.settings == (("fix", True), ("signoff", "Ann Author <ann@example.com>"))
    assert dco.check(Repo(r), "work").hints == [exc.value.hint]  # the check's own hint: sign off as the author
    assert sh("git", "-C", r, "rev-parse", "work").stdout.strip() == old
    res = dco.fix(Repo(r), "work", Identity("Ann Author", "ann@example.com"))
    assert res.ok and res.fixed
    assert sh("git", "-C", r, "rev-parse", res.backup_ref).stdout.strip() == old
    assert sh("git", "-C", r, "log", "-1", "--format=%an", "work~1").stdout.strip() == "Ann Author"
    assert "Signed-off-by: Ann Author <ann@example.com>" in sh("git", "-C", r, "log", "-1", "--format=%B", "work~1").stdout
    assert sh("git", "-C", r, "status", "--porcelain", "--untracked-files=no").stdout == ""
    sh("git", "-C", r, "checkout", "-q", "-b", "side", "HEAD~1")
    _commit(r, "side", file="g.txt")
    sh("git", "-C", r, "checkout", "-q", "work")
    sh("git", "-C", r, "merge", "-q", "--no-ff", "-m", "merge", "side")
    from patchkit.errors import Conflict
    with pytest.raises(Conflict, match="merge commits"):
        dco.fix(Repo(r), "work", Identity("Ann Author", "ann@example.com"))


def test_signoff_must_be_name_and_email():
    with pytest.raises(BadInput, match="must look like 'Name <email>'") as exc:
        dco.parse_identity("just a name")
    assert exc.value.setting == "signoff"

"""Issue #17 item 8: when the rollback itself fails, one line says where and why, and the
commands that finish the restore; run as printed, they do.

From a sampled git call on, every git command that writes fails (fault injection), so every
restoring step that writes fails too: the case of a failing reference-transaction hook or
read-only refs, where each later ref update fails as well.
"""
from __future__ import annotations

import re
import shutil
import shlex

import pytest

from helpers import ROOT, sh, state_of
from robust.faults import Injector


def same(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k != "index"} == {k: v for k, v in b.items() if k != "index"}


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_failed_rollback_is_one_line_with_the_cause_and_the_commands_that_finish_it(tmp_path, checkout):
    inj = Injector(tmp_path)
    template = tmp_path / "template"
    shutil.copytree(checkout, template, symlinks=True)
    argv = lambda work: ["apply", "--target", "rc25", "--src", str(work)]  # noqa: E731
    shutil.copytree(template, tmp_path / "count" / "trtllm", symlinks=True)
    total = inj.count(argv(tmp_path / "count" / "trtllm"), root=ROOT)
    seen_finish = 0
    for n in range(total, 0, -1):  # the last writes first: those that need a rollback
        work = tmp_path / f"run-{n}" / "trtllm"
        shutil.copytree(template, work, symlinks=True)
        before = state_of(work)
        res = inj.run(argv(work), n, "fail-writes-from", root=ROOT)
        if res.code == 0:  # no git command wrote after call n
            continue
        assert res.code != 70 and res.stderr.count("\n") == 1, (n, res.stderr)
        m = re.search(r"to finish the restore, run: (.+)$", res.stderr.strip())
        if not m:
            assert same(state_of(work), before), (n, res.stderr)  # nothing needed restoring
            continue
        seen_finish += 1
        assert "restoring " in res.stderr and "failed at: " in res.stderr
        restoring = res.stderr[res.stderr.index("restoring "):]
        assert "injected failure at git call" in restoring, (n, res.stderr)  # git's own words, not "exit 128"
        for cmd in m.group(1).split(" && "):
            assert sh(*shlex.split(cmd), check=False).returncode == 0, (n, cmd)
        assert same(state_of(work), before), (n, m.group(1))
        if seen_finish == 3:
            break
    assert seen_finish, "no sampled fault point reached the rollback"


def test_a_failing_smudge_filter_stops_apply_and_unapply_before_the_checkout(checkout, capsys):
    """#17 item 8: a required smudge filter that fails (git-lfs's, without git-lfs) made git
    checkout delete the file it could not write, and the rollback failed on the same filter,
    leaving tracked files deleted. The filter now runs first, on content only: one line that
    names the path and git's cause, nothing changed; once the filter works, the same command
    succeeds."""
    from patchkit.cli import main
    (checkout / ".git" / "info" / "attributes").write_text("tensorrt_llm/**/*.py filter=broken\n")
    g = lambda *a: sh("git", "-C", checkout, *a)  # noqa: E731
    g("config", "filter.broken.clean", "cat")
    g("config", "filter.broken.required", "true")

    def run(*argv: str) -> tuple[int, str]:
        code = main(["--root", str(ROOT), *argv, "--target", "rc25", "--src", str(checkout)])
        return code, capsys.readouterr().err

    for command in ("apply", "unapply"):
        g("config", "filter.broken.smudge", "false")
        before = state_of(checkout)
        code, err = run(command)
        assert code == 3 and err.count("\n") == 1, err
        assert "tensorrt_llm/_torch/pyexecutor/_util.py" in err and "smudge filter broken failed" in err, err
        assert state_of(checkout) == before
        g("config", "filter.broken.smudge", "cat")  # the filter works again
        assert run(command)[0] == 0
        assert g("status", "--porcelain").stdout == ""

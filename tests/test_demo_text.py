"""make demo's text, fast: what it suggests next is said in the user's vocabulary, as every hint is
(make test-slow runs the whole demo against tests/golden/demo.txt)."""
from __future__ import annotations

import pytest

from patchkit import demo
from patchkit.cli import _parser
from patchkit.cli.runs import demo_said
from patchkit.cli.table import voice


@pytest.mark.parametrize("via_make, said", [
    (True, ["PATCHKIT_ROOT={w}/project make summary REPORTS={w}/project/build", "make apply TRTLLM=main",
            "make delta TRTLLM=main", "make pr TRTLLM=main SIGNOFF='Jo Doe <jo@example.com>'"]),
    (False, ["patchkit --root {w}/project summary --reports {w}/project/build", "patchkit --root {r} apply --target main",
             "patchkit --root {r} delta --target main",
             "patchkit --root {r} pr --target main --signoff 'Jo Doe <jo@example.com>'"]),
])
def test_the_demos_next_steps_are_said_in_the_users_vocabulary_with_their_values(via_make, said, tmp_path,
                                                                                 monkeypatch):
    """#31 item 14: the demo's next lines were spelled by demo_text itself, not by the CLI's Voice:
    `patchkit --root <project> demo` was told `patchkit apply --target main` (another project's
    sets, or none), and the SIGNOFF given to the demo was dropped from `make pr`."""
    if via_make:
        monkeypatch.setenv("PATCHKIT_VIA_MAKE", "1")
    else:
        monkeypatch.delenv("PATCHKIT_VIA_MAKE", raising=False)
    work, root = tmp_path / "demo", tmp_path / "mine"
    args = _parser().parse_args([*(["--root", str(root)] if not via_make else []), "demo", "--workdir", str(work),
                                 "--signoff", "Jo Doe <jo@example.com>"])
    steps = demo.next_steps(work / "project")
    assert [demo_said(voice(args), st) for st in steps] == [s.format(w=work, r=root) for s in said]


def test_the_demos_delta_line_names_each_file_not_run_here_and_why():
    """#31 item 13: the demo said "1 file(s) not run here", naming neither the file nor why."""
    from types import SimpleNamespace

    from patchkit.demo_text import _fix_delta
    fix = SimpleNamespace(fail_to_pass=["a"], pass_to_pass=[], pass_to_fail=[], not_collected=["cpp/tests/kv_test.cpp"],
                          not_run={"tests/unittest/test_pool.py::test_one": "not runnable in source mode: "
                                   "ModuleNotFoundError: No module named 'torch'",
                                   "tests/unittest/test_pool.py::test_two": "the same file again"})
    assert _fix_delta(fix) == ("1 fail->pass, 0 pass->pass, 0 pass->fail; "
                               "not run here: kv_test.cpp (pytest does not collect it); "
                               "not run here: test_pool.py (it imports torch, which this machine lacks)")

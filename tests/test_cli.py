"""The CLI as a user meets it: one line on stderr and a named exit code for bad input."""
from __future__ import annotations

import pytest

from patchkit import patchset
from patchkit.cli import main
from helpers import ROOT, copy_root, sh, state_of


def run(capsys, *argv):
    code = main(["--root", str(ROOT), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_unknown_target(capsys, checkout):
    before = state_of(checkout)
    code, _, err = run(capsys, "apply", "--target", "nope", "--src", str(checkout))
    assert code == 4 and err.count("\n") == 1 and "unknown patch set 'nope'" in err
    assert state_of(checkout) == before


def test_src_that_is_not_a_checkout(capsys, tmp_path):
    (tmp_path / "plain").mkdir()
    code, _, err = run(capsys, "apply", "--target", "main", "--src", str(tmp_path / "plain"))
    assert code == 4 and err.count("\n") == 1 and "is not a git checkout" in err


def test_unreachable_url(capsys, tmp_path):
    code, _, err = run(capsys, "apply", "--target", "main", "--src", str(tmp_path / "new"), "--url", "file:///nonexistent/repo")
    assert code == 4 and err.count("\n") == 1 and "cannot clone main from file:///nonexistent/repo" in err
    assert not (tmp_path / "new").exists()



@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_clone_into_folders_that_do_not_exist_yet(capsys, tmp_path, upstream):
    """A fresh clone of this project has no build/: `make apply TRTLLM=main` (TRTLLM_SRC=
    build/trtllm-main) was refused with 'build does not exist'. Missing folders are made."""
    src = tmp_path / "build" / "deeper" / "trtllm-main"
    code, out, err = run(capsys, "apply", "--target", "main", "--src", str(src), "--url", upstream.as_uri())
    assert code == 0, err
    assert "(partial clone)" in out and (src / ".git").exists()


def test_failed_clone_leaves_no_folders_it_made(capsys, tmp_path):
    code, _, err = run(capsys, "apply", "--target", "main", "--src", str(tmp_path / "a" / "b" / "new"),
                       "--url", "file:///nonexistent/repo")
    assert code == 4 and err.count("\n") == 1 and "cannot clone main" in err
    assert list(tmp_path.iterdir()) == []


def test_broken_metadata(capsys, tmp_path, checkout):
    root = copy_root(tmp_path)
    (root / "patches" / "main" / "patchset.yaml").write_text("series: [\n")
    before = state_of(checkout)
    code = main(["--root", str(root), "apply", "--target", "main", "--src", str(checkout)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "not valid YAML" in err
    assert state_of(checkout) == before


def test_unapply_without_apply(capsys, checkout):
    code, _, err = run(capsys, "unapply", "--target", "main", "--src", str(checkout))
    assert code == 4 and "nothing to unapply" in err


def test_json_output_of_apply(capsys, checkout):
    import json
    code, out, _ = run(capsys, "--json", "apply", "--target", "main", "--src", str(checkout))
    data = json.loads(out)
    assert code == 0 and data["branch"] == "overlay/main"
    names = [p.name for p in patchset.load(ROOT, "main").patches]
    assert [(o["patch"]["file"].rsplit("/", 1)[-1], o["status"]) for o in data["outcomes"]] == [(n, "applied") for n in names]


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_check_changes_nothing_and_names_conflicts(capsys, upstream, tmp_path):
    from helpers import sh
    util = upstream / "tensorrt_llm/_torch/pyexecutor/_util.py"
    util.write_text(util.read_text().replace('"n_positions"),', '"n_positions", "n_ctx"),'))
    sh("git", "-C", upstream, "commit", "-qam", "Conflicting upstream change")
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", upstream.as_uri(), clone)
    before = state_of(clone)
    code, out, _ = run(capsys, "check", "--src", str(clone))
    assert code == 3  # CI gates on it
    lines = {line.split()[0]: line for line in out.splitlines() if line and not line.startswith(" ")}
    assert "conflicts" in lines["main"] and "applies cleanly" in lines["rc25"]
    assert "tensorrt_llm/_torch/pyexecutor/_util.py hunk #1" in out
    assert state_of(clone) == before


def test_internal_error_points_to_a_log(capsys, monkeypatch, checkout):
    from patchkit import apply as apply_mod

    def boom(*a, **k):
        raise RuntimeError("unexpected")
    monkeypatch.setattr(apply_mod, "apply", boom)
    code, _, err = run(capsys, "apply", "--target", "main", "--src", str(checkout))
    assert code == 70 and "internal error; the traceback is in" in err
    log = err.strip().rsplit(" ", 1)[-1]
    assert "RuntimeError: unexpected" in open(log).read()


def test_src_under_a_file_is_bad_input(capsys, tmp_path):
    (tmp_path / "file").write_text("x")
    code, _, err = run(capsys, "apply", "--target", "main", "--src", str(tmp_path / "file" / "src"),
                       "--url", "file:///nonexistent/repo")
    assert code == 2 and err.count("\n") == 1 and f"{tmp_path / 'file'} is not a folder" in err


def test_delta_refuses_a_report_it_cannot_write_before_measuring(capsys, tmp_path, checkout):
    """REPORT=<a folder> or under a file ran both trees, then ended in exit 70."""
    (tmp_path / "afile").write_text("x")
    before = state_of(checkout)
    for report, says in ((tmp_path, "is a folder"), (tmp_path / "afile" / "r.json", "a file is in the way")):
        code, out, err = run(capsys, "delta", "--target", "main", "--src", str(checkout), "--report", str(report))
        assert (code, out) == (2, "") and err.count("\n") == 1 and says in err and "choose another --report" in err
    assert state_of(checkout) == before and (tmp_path / "afile").read_text() == "x"


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_apply_that_fails_after_cloning_leaves_no_folders_it_made(capsys, tmp_path, upstream):
    """The clone goes on a failed apply, and so do the folders made for it (and the clone's lock file)."""
    util = upstream / "tensorrt_llm/_torch/pyexecutor/_util.py"
    util.write_text(util.read_text().replace("if head_dim is None:", "if not head_dim:"))
    sh("git", "-C", upstream, "commit", "-qam", "Upstream rewords a context line")
    code, _, err = run(capsys, "apply", "--target", "main", "--src", str(tmp_path / "a" / "b" / "src"),
                       "--url", upstream.as_uri())
    assert code == 3 and err.count("\n") == 1, err
    assert not (tmp_path / "a").exists()


def _exit_of(capsys, *argv):
    """main() for a command line argparse refuses: its exit code and what it printed."""
    import pytest
    with pytest.raises(SystemExit) as exc:
        main(["--root", str(ROOT), *argv])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_an_empty_src_is_refused_not_taken_as_the_current_directory(capsys, monkeypatch, checkout):
    """`make apply TRTLLM_SRC=` passed --src "" and patchkit applied to whatever repo it stood in."""
    monkeypatch.chdir(checkout)
    before = state_of(checkout)
    code, _, err = _exit_of(capsys, "apply", "--target", "main", "--src", "")
    assert code == 2 and err == "patchkit: error: argument --src: must not be empty (see: patchkit apply --help)\n"
    assert state_of(checkout) == before


def test_an_empty_branch_is_bad_input_not_a_missing_branch(capsys, checkout):
    code, _, err = _exit_of(capsys, "dco", "--src", str(checkout), "--branch", "")
    assert code == 2 and err.count("\n") == 1 and "argument --branch: must not be empty" in err


def test_a_bad_choice_is_one_line(capsys):
    code, out, err = _exit_of(capsys, "delta", "--target", "main", "--mode", "bogus")
    assert code == 2 and out == "" and err.count("\n") == 1 and "invalid choice: 'bogus'" in err


def test_json_is_taken_after_the_command_too(capsys):
    import json
    code, out, _ = run(capsys, "targets", "--json")
    assert code == 0 and [s["target"] for s in json.loads(out)] == sorted(p.name for p in (ROOT / "patches").iterdir())


def test_targets_says_a_fix_without_tests_has_nothing_to_measure(capsys, tmp_path, upstream, checkout):
    """#31 item 10: make targets printed an empty "expected delta (source): " for a backport
    whose change touches no test file."""
    from patchkit.backport import command
    from helpers import push_pr

    def no_tests(work):
        with open(work / "tensorrt_llm/_torch/pyexecutor/scheduler.py", "a") as fh:
            fh.write("\n\ndef five(x):\n    return 5 * x\n")
        return "[None][fix] No tests"
    push_pr(upstream, "4260", no_tests)
    root = copy_root(tmp_path)
    command.backport(patchset.load(root, "rc25"), root=root, src=checkout, pr="4260", today="2026-12-02")
    code = main(["--root", str(root), "targets"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    at = out.index("rc25  fix 4260: [None][fix] No tests")
    assert out[at + 2] == "      expected delta: nothing to measure (it changes no test file)"
    assert not [line for line in out if line.rstrip().endswith(":")]


def test_targets_says_what_each_set_carries(capsys):
    """#27 item 4: make targets listed ref, patches and branch, and not which fix a set carries,
    for which bug, or what delta it expects. Read from the sets on disk, as the loader reads them."""
    import yaml
    code, out, _ = run(capsys, "targets")
    assert code == 0
    for target in patchset.targets(ROOT):
        ps = patchset.load(ROOT, target)
        for fix in ps.fixes:
            at = out.index(f"{target}  fix {fix.id}: {fix.title}\n")
            block = out[at:].split("\n")[1:3]
            assert block[0].strip() == f"bug: {fix.bug}"
            raw = yaml.safe_load((ROOT / "patches" / target / "patchset.yaml").read_text())
            for mode, files in raw["expected"].items():
                for test, trees in files.items():
                    said = ", ".join(f"{n} {k}" for k, n in trees["unpatched"].items())
                    assert mode in block[1] and f"{test}: {said} -> " in block[1], block


def test_version_is_said_before_the_cli_loads_and_as_argparse_says_it(capsys):
    """#34 item 4: --version took 0.1 s, importing every command's text module to print one
    line; the entry point now says it first. The line is argparse's own, and nothing more loaded."""
    import subprocess
    import sys
    from patchkit import cli
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    said = capsys.readouterr().out
    probe = "import sys, patchkit.__main__ as m; c = m.main(['--version']); print(sorted(n for n in sys.modules if n.startswith('patchkit.cli')))"
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert res.stdout == said + "[]\n"

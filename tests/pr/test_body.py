"""make pr renders upstream's PR template as it is at the target ref, answers its checklist
from what was measured, and refuses (writing nothing) when upstream's checks would fail."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchkit import patchset
from patchkit.errors import ExitCode, UserError
from patchkit.git import Repo
from patchkit.model import ChecklistAnswer
from patchkit.pr import branch as pr_branch, checklist, checks, template
from helpers import ROOT, copy_root, lint_of, sh
from test_pr import SIGNOFF, make_pr, measured

TEMPLATE = ".github/pull_request_template.md"


def upstream_commit(upstream: Path, checkout: Path, files: dict[str, str | None], message: str) -> None:
    """Change files on upstream's main (None deletes), and fetch that into the user's checkout."""
    for path, text in files.items():
        dest = upstream / path
        if text is None:
            sh("git", "-C", upstream, "rm", "-q", path)
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
        sh("git", "-C", upstream, "add", path)
    sh("git", "-C", upstream, "commit", "-q", "-m", message)
    sh("git", "-C", checkout, "fetch", "-q", "origin")


def template_with(upstream: Path, old: str, new: str) -> str:
    text = (upstream / TEMPLATE).read_text()
    assert old in text
    return text.replace(old, new)


def refused(checkout: Path, tmp_path: Path, target: str = "main", root: Path = ROOT) -> str:
    report = measured(checkout, target, tmp_path)
    out = tmp_path / "pr" / target
    with pytest.raises(UserError) as exc:
        pr_branch.pr(patchset.load(root, target), repo=Repo(checkout), report=report, out_dir=out, signoff=SIGNOFF,
                     lint=lint_of(checkout, target, root))
    assert exc.value.code == ExitCode.MISMATCH
    assert not out.exists(), "nothing may be written when the body would fail upstream's checks"
    assert Repo(checkout).rev_parse(f"refs/heads/pr/{target}") is None
    return exc.value.message


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_checkout_without_a_template_gets_the_builtin_one_and_is_told(upstream, checkout, tmp_path):
    upstream_commit(upstream, checkout, {TEMPLATE: None}, "Drop the PR template")
    res = make_pr(checkout, "main", tmp_path, measured(checkout, "main", tmp_path), signoff=SIGNOFF)
    assert res.template == f"built-in template ({TEMPLATE} does not exist at main)"
    assert res.body.startswith("@coderabbitai summary\n\n## Description\n")
    assert checks.checklist_problems(res.body, reviewer_left=True) == []
    # every item answered but the last box, the reviewer of record's (#33 item 7)
    assert template.builtin().count("- [ ]") == res.body.count("- [x]") + res.body.count("- [ ] ~~") + 1


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_new_item_nobody_answers_refuses_and_a_declared_answer_settles_it(upstream, checkout, tmp_path):
    item = "The release notes list every change to a public API."
    upstream_commit(upstream, checkout, {TEMPLATE: template_with(upstream, "- [ ] Please check", f"- [ ] {item}\n- [ ] Please check")},
                    "Ask about release notes")
    message = refused(checkout, tmp_path)
    assert (f"item '{item}' is open: nothing measured settles it; answer it under pr.checklist in "
            "patches/main/patchset.yaml; nothing written") in message

    root = copy_root(tmp_path)
    meta = root / "patches" / "main" / "patchset.yaml"
    meta.write_text(meta.read_text().replace("  checklist: []\n", "  checklist:\n    - item: release notes\n"
                                             "      answer: n/a\n      why: no public API changes\n", 1))
    assert patchset.load(root, "main").pr.checklist[0] == ChecklistAnswer("release notes", "n/a", "no public API changes")
    res = pr_branch.pr(patchset.load(root, "main"), repo=Repo(checkout), report=measured(checkout, "main", tmp_path),
                       out_dir=tmp_path / "out", signoff=SIGNOFF, lint=lint_of(checkout, "main", root))
    assert f"- [ ] ~~{item}~~" in res.body
    assert (tmp_path / "out" / "body.md").read_text() == res.body


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_docs_that_describe_the_changed_behaviour_must_be_updated(upstream, checkout, tmp_path):
    """The set's docs phrases found under docs/ at the ref: the documentation item is open."""
    guide = "docs/source/features/encoder-decoder.md"
    upstream_commit(upstream, checkout, {guide: "# Encoder-decoder\n\nThe cross-KV pool is sized from `max_input_len`.\n"},
                    "Add a guide")
    message = refused(checkout, tmp_path)
    assert f"{guide} at main describes the changed behaviour and the series does not update it: add that update to the series" in message


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_existing_tests_are_ticked_only_from_a_container_mode_report(upstream, checkout, tmp_path):
    item = "Existing tests around the change pass with it."
    upstream_commit(upstream, checkout, {TEMPLATE: template_with(upstream, "- [ ] Please check", f"- [ ] {item}\n- [ ] Please check")},
                    "Ask about existing tests")
    message = refused(checkout, tmp_path)  # the source-mode report could not run the dual-pool tests
    assert f"item '{item}' is open: only a container-mode delta shows it; this report is source mode" in message

    report = measured(checkout, "main", tmp_path)
    data = json.loads(report.read_text())
    neighbour = patchset.load(ROOT, "main").tests.neighbours[0]
    [fix] = data["fixes"]
    assert fix["patched"]["tests"][neighbour] == "not_run"
    data["mode"] = "container"  # as a container-mode run reports it, with the existing test run and passed
    for tree in ("unpatched", "patched"):
        fix[tree]["tests"][neighbour] = "passed"
    fix["not_run"] = {}
    data["builder"] = "podman"
    data["images"] = {"unpatched": {"name": "registry.example/trtllm:1"}, "patched": {"name": "localhost/patchkit/trtllm:1-abc"}}
    report.write_text(json.dumps(data))
    res = make_pr(checkout, "main", tmp_path, report, signoff=SIGNOFF)
    assert f"- [x] {item}" in res.body
    assert f"`{neighbour}` (existing): 1 passed with the fix, none failed." in res.body
    assert ("in the base image `registry.example/trtllm:1` and in the same image with the fix laid over its installed "
            "package (`localhost/patchkit/trtllm:1-abc`), run with podman." in res.body)


def facts(**kw) -> checklist.Facts:
    base = dict(explained=True, new_tests=("t.py",), mode="source", neighbours={}, ref="main")
    return checklist.Facts(**{**base, **kw})


@pytest.mark.parametrize("item, kw, state", [
    ("Have you introduced any new dependencies? If so, scan them.", {}, checklist.NA),
    ("Have you introduced any new dependencies? If so, scan them.", {"dependency_files": ("requirements.txt",)}, checklist.OPEN),
    ("Have you updated .github/CODEOWNERS?", {"new_dirs": ("tensorrt_llm/new",)}, checklist.OPEN),
    ("Have you updated .github/CODEOWNERS?", {"new_dirs": ("x",), "codeowners_changed": True}, checklist.DONE),
    ("Have you updated .github/CODEOWNERS?", {}, checklist.NA),
    ("Do you have test cases for new code paths?", {"new_tests": ()}, checklist.OPEN),
    ("Have you updated any documentation?", {}, checklist.OPEN),  # no phrases and no answer: nobody knows
    ("Have you updated any documentation?", {"docs_phrases": ("x",)}, checklist.NA),
    ("Have you updated any documentation?", {"docs_changed": ("docs/a.md",)}, checklist.DONE),
    ("Is the PR description explaining what and why?", {"explained": False}, checklist.OPEN),
])
def test_answers_from_facts(item, kw, state):
    assert checklist.answer(item, facts(**kw), ()).state == state


def test_a_declaration_never_overrides_a_measured_no():
    said = (ChecklistAnswer("existing tests", "done", "trust me"),)
    a = checklist.answer("Existing tests pass.", facts(neighbours={"n.py": False}), said)
    assert a.state == checklist.OPEN and a.by == "measured"


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_the_cli_refuses_with_one_line_and_exit_1(upstream, checkout, tmp_path, capsys):
    from patchkit.cli import main
    upstream_commit(upstream, checkout, {"docs/guide.md": "Cross-KV pool capacity: set max_input_len.\n"}, "Add a guide")
    report = measured(checkout, "main", tmp_path)
    out = tmp_path / "out"
    code = main(["--root", str(ROOT), "pr", "--target", "main", "--src", str(checkout), "--report", str(report),
                 "--out", str(out), "--signoff", SIGNOFF])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == ExitCode.MISMATCH and len(err) == 1
    assert err[0].startswith("patchkit: error: main: the PR body would fail upstream's PR checks: item ")
    assert "docs/guide.md at main describes the changed behaviour" in err[0]
    assert not out.exists()


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_supported_models_footnote_that_requires_max_input_len_keeps_the_docs_item_open(upstream, checkout,
                                                                                         tmp_path, capsys):
    """Upstream's Whisper PR #16141 documented `max_input_len >= 1500` in supported-models.md as
    well; the fix makes that wrong, and 0003 changes only encoder-decoder.md, so a PR must not
    tick the documentation box while such a page stands (our own words in the footnote's shape)."""
    from patchkit.cli import main
    page = "docs/source/models/supported-models.md"
    upstream_commit(upstream, checkout, {page: "[^9]: Whisper needs a cross-KV fraction and `max_input_len >= 1500`.\n"},
                    "Document Whisper's limits")
    report = measured(checkout, "main", tmp_path)
    out = tmp_path / "out"
    code = main(["--root", str(ROOT), "pr", "--target", "main", "--src", str(checkout), "--report", str(report),
                 "--out", str(out), "--signoff", SIGNOFF])
    err = capsys.readouterr().err
    assert code == ExitCode.MISMATCH and f"{page} at main describes the changed behaviour" in err, err
    assert not out.exists()

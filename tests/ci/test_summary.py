"""make summary (#20): delta reports of both targets and both modes as one table; a report of
another upstream commit is its own row and flagged; a file that is not a report is one line."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from patchkit import patchset
from patchkit.cli import main
from patchkit.delta import command
from patchkit.delta.run import ContainerRunner
from patchkit.git import Repo
from helpers import ROOT, sh

GOLDEN = ROOT / "tests" / "golden"
REGRESSION = "tests/unittest/_torch/executor/test_cross_kv_cache_layout.py"
IMAGES = ("nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc25", "localhost/patchkit/release:1.3.0rc25-0123456789ab")


class ImageLikeBuilder:
    """Stands in for buildah, which this test does not need: answers as pytest in the release
    image (23 of the 30 cases fail) and in the patched image (all pass) would, and passes the
    neighbours' two cases in both. The real
    container delta is tests/container/test_container_delta.py; here only its report matters."""

    name = "stand-in"

    def inspect(self, image):
        """The image's config as the run reads it for its environment (#17 item 14): no Env."""
        from patchkit.container.builders import Image
        return Image(image, "id", "sha256:" + "e" * 64, env={})

    def run(self, image, argv, *, mounts, workdir, env):
        out = next(m.host for m in mounts if not m.read_only)
        failing = 23 if image == IMAGES[0] else 0
        tests = {f"{REGRESSION}::case{i}": {"outcome": "failed" if i < failing else "passed", "reason": ""}
                 for i in range(30)}
        tests |= {f"{f}::case{i}": {"outcome": "passed", "reason": ""} for f in argv
                  if f.endswith(".py") and f != REGRESSION for i in range(2)}
        name = "unpatched" if failing else "patched"
        (out / f"{name}.json").write_text(json.dumps({"exitstatus": 1 if failing else 0, "collected": len(tests),
                                                      "tests": tests, "collect_errors": {}}))
        return SimpleNamespace(returncode=1 if failing else 0, stdout="", stderr="")


def measure(upstream: Path, target: str, mode: str, report: Path) -> Path:
    ps = patchset.load(ROOT, target)
    kw = {"runner": ContainerRunner(ImageLikeBuilder()), "images": IMAGES} if mode == "container" else {}
    res = command.delta(ps, repo=Repo(upstream), mode=mode, report=report, **kw)
    assert res.ok, [m for f in res.fixes for m in f.mismatches]
    return report


@pytest.fixture(scope="module")
def reports(miniature_template, tmp_path_factory):
    """Reports laid out as the workflow's artifacts are: one folder per job and target."""
    d = tmp_path_factory.mktemp("reports")
    for target in ("rc25", "main"):
        measure(miniature_template, target, "source", d / f"reports-verify-{target}" / "delta" / f"{target}.json")
        measure(miniature_template, target, "container", d / f"reports-container-{target}" / f"{target}.container.json")
        assert main(["--root", str(ROOT), "radar", "--target", target, "--src", str(miniature_template),
                     "--out", str(d / f"reports-radar-{target}")]) == 0
        # make lint's report, as the verify job uploads it (build/lint/<target>.json), from a
        # clone of its own: upstream's hooks at their pinned revs on the series' files
        clone = d / f"clone-{target}"
        sh("git", "clone", "-q", miniature_template.as_uri(), clone)
        assert main(["--root", str(ROOT), "lint", "--target", target, "--src", str(clone),
                     "--report", str(d / f"reports-verify-{target}" / "lint" / f"{target}.json")]) == 0
        shutil.rmtree(clone)
    return d


def make(*args):
    return sh("make", "-s", "--no-print-directory", "-C", ROOT, "SETUP=", f"PATCHKIT={sys.executable} -m patchkit", *args, check=False)


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PATCHKIT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from tests/golden (PATCHKIT_UPDATE_GOLDEN=1 to accept)"


def test_both_targets_and_modes_give_the_golden_table(reports, tmp_path):
    res = make("summary", f"REPORTS={reports}", f"BUILD={tmp_path}")
    assert res.returncode == 0, res.stderr
    md = (tmp_path / "summary" / "summary.md").read_text()
    golden("summary.md", md)
    assert md.strip() in res.stdout
    data = json.loads((tmp_path / "summary" / "summary.json").read_text())
    assert data["ok"] and [(r["target"], r["check"]) for r in data["rows"]] == [
        (t, c) for t in ("main", "rc25") for c in ("delta source", "delta container", "lint", "radar")]
    for row in data["rows"]:  # each row says what its report says
        report = json.loads((reports / row["reports"][0]).read_text())
        if row["check"] == "radar":
            assert row["upstream_commit"] == report["until"]["commit"] and not report["changed"]
        elif row["check"] == "lint":
            assert row["upstream_commit"] == report["upstream_commit"] and report["ran"] and not report["failures"]
            assert row["counts"] == f"{len(report['ran'])} hooks ran, 0 failing" and row["verdict"] == "clean"
        else:
            assert row["upstream_commit"] == report["upstream_commit"] and report["matches_expected"]


def test_github_step_summary_gets_the_table(reports, tmp_path, monkeypatch):
    page = tmp_path / "step.md"
    page.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(page))
    assert main(["summary", "--reports", str(reports), "--out", str(tmp_path / "out")]) == 0
    text = page.read_text()
    assert text.startswith("earlier step\n" + (tmp_path / "out" / "summary.md").read_text())
    for target in ("main", "rc25"):  # and the radar's own Markdown, from beside its report
        assert (reports / f"reports-radar-{target}" / f"{target}.md").read_text() in text


@pytest.mark.slow  # make test-slow (.ci/run): make test keeps one case of this kind
def test_a_report_for_another_upstream_commit_is_its_own_row_and_flagged(reports, upstream, tmp_path, capsys):
    """main moved by one commit between two runs: the two reports are never one row."""
    mixed = tmp_path / "mixed"
    shutil.copytree(reports, mixed)
    sh("git", "-C", upstream, "checkout", "-q", "main")
    (upstream / "NOTES.md").write_text("upstream moved on\n")
    sh("git", "-C", upstream, "add", "NOTES.md")
    sh("git", "-C", upstream, "commit", "-q", "-m", "Move on")
    later = sh("git", "-C", upstream, "rev-parse", "HEAD").stdout.strip()
    measure(upstream, "main", "source", mixed / "reports-verify-main-nightly" / "delta" / "main.json")
    assert main(["--json", "summary", "--reports", str(mixed), "--out", str(tmp_path / "out")]) == 1
    rows = [r for r in json.loads(capsys.readouterr().out)["rows"] if (r["target"], r["check"]) == ("main", "delta source")]
    assert len(rows) == 2 and later in [r["upstream_commit"] for r in rows]
    first = [c for c in (r["upstream_commit"] for r in rows) if c != later][0]
    for row in rows:  # each names the other commit, and says nothing of its verdict: both match
        other = first if row["upstream_commit"] == later else later
        assert row["verdict"] == "matches" and not row["ok"]
        assert row["flags"] == [f"main also measured at {other[:12]}: rows of different upstream commits"]
    md = (tmp_path / "out" / "summary.md").read_text()
    assert md.count(f"main also measured at {later[:12]}") == 4  # main's container, lint and radar rows too
    assert "mismatched" not in md and "not all as declared" in md


def test_a_report_made_for_other_expectations_is_flagged_stale(reports, tmp_path, capsys):
    stale = tmp_path / "stale"
    shutil.copytree(reports, stale)
    path = stale / "reports-verify-rc25" / "delta" / "rc25.json"
    data = json.loads(path.read_text())
    data["fixes"][0]["expected"][REGRESSION]["unpatched"]["failed"] = 22  # as an older patchset.yaml declared it
    path.write_text(json.dumps(data))
    assert main(["summary", "--reports", str(stale), "--out", str(tmp_path / "out")]) == 1
    assert "stale: the set's expected delta changed since" in capsys.readouterr().out


@pytest.mark.parametrize("content, says", [
    (lambda text: text[: len(text) // 2], "truncated: the JSON ends at line"),
    (lambda text: text[: text.index('"mode"') + 3], "truncated: the JSON ends at line"),  # inside a string
    (lambda text: text.replace('"mode"', '"mode" "', 1), "not valid JSON (line"),
    (lambda text: text.replace('"valid": true', '"valid": "yes"', 1), "valid: must be true or false"),
])
def test_a_report_that_is_not_sound_is_one_line_and_exit_2(reports, tmp_path, capsys, content, says):
    bad = tmp_path / "bad"
    shutil.copytree(reports, bad)
    path = bad / "reports-verify-main" / "delta" / "main.json"
    path.write_text(content(path.read_text()))
    out = tmp_path / "out"
    assert main(["summary", "--reports", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and str(path) in err and says in err, err
    assert not out.exists()


def test_no_reports_is_exit_4_and_an_empty_reports_is_exit_2(tmp_path):
    (tmp_path / "empty").mkdir()
    res = make("summary", f"REPORTS={tmp_path / 'empty'}", f"BUILD={tmp_path}")
    assert "no reports (*.json) under" in res.stderr and res.stderr.count("\n") == 2  # ours, then make's
    res = make("summary", f"BUILD={tmp_path}")
    assert res.stderr.startswith("patchkit: error: REPORTS: must not be empty")  # the variable, through make (#24)


def test_what_is_no_report_is_skipped_and_named_and_several_folders_are_read(reports, tmp_path):
    """#27 item 6: `make summary REPORTS=build` after make demo stopped (exit 2) on
    build/demo/trtllm-main/.git/patchkit/main.json, a checkout's own record; foreign JSON and a
    git checkout under the folders are no reports: skipped, each named, and the rest summarized.
    Two folders (REPORTS="a b", as make lists) give the rows of both."""
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(reports / "reports-verify-main", first / "reports-verify-main")
    shutil.copytree(reports / "reports-verify-rc25", second / "reports-verify-rc25")
    checkout = first / "trtllm-main"
    sh("git", "init", "-q", checkout)
    (checkout / ".git" / "patchkit").mkdir()
    (checkout / ".git" / "patchkit" / "main.json").write_text('{"branch": "overlay/main"}')
    (checkout / "package.json").write_text('{"name": "upstream-data"}')
    (first / "bench.json").write_text('{"schemaVersion": 2, "manifests": []}')
    (second / "list.json").write_text("[1, 2]")
    res = make("summary", f"REPORTS={first} {second}", f"BUILD={first}")  # its own output lands among them
    assert res.returncode == 0, res.stderr
    data = json.loads((first / "summary" / "summary.json").read_text())
    assert [(r["target"], r["check"]) for r in data["rows"]] == [
        (t, c) for t in ("main", "rc25") for c in ("delta source", "lint")]
    assert data["skipped"] == [f"{checkout}/ (a git checkout)",
                               f"{first / 'bench.json'} (not a delta, lint or radar report: its keys are manifests, "
                               "schemaVersion)",
                               f"{second / 'list.json'} (not a delta, lint or radar report: it is a JSON list)"]
    said = [line for line in res.stdout.splitlines() if line.startswith("skipped")]
    assert said == ["skipped, not reports (3): " + ", ".join(data["skipped"])]
    assert "4 reports, all as declared; 3 skipped, not reports" in res.stdout
    again = make("summary", f"REPORTS={first} {second}", f"BUILD={first}")  # summary.json: our own, skipped
    assert f"{first / 'summary' / 'summary.json'} (this command's own output)" in again.stdout, again.stdout

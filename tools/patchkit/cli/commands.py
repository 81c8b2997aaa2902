"""The commands, as a table: each one's settings, what it runs, how its result reads, its verdict."""
from __future__ import annotations

from pathlib import Path

from .. import apply_text, check_text, demo_text, targets_text
from ..ci import text as ci_text
from ..container import text as container_text
from ..delta import MODES as DELTA_MODES, text as delta_text
from ..errors import ExitCode
from ..lint import text as lint_text
from ..pr import text as pr_text
from ..waives import text as waivers_text
from . import parser
from .runs import (_apply, _backport, _described, _bench, _bench_text, _check, _container, _dco, _delta, _demo, _export, _lint, _miniature, _miniature_text, _new_fix, _new_set,
                   _pr, _push, _reorder, _radar, _radar_text, _summary, _targets, _unapply, _waivers, _wheel, _wheel_text,
                   _workflow)
from .table import (BASE, BRANCH, BUILDER, CUDA_ARCHS, FIX_ID, JOBS, NO_FETCH, REGISTRY, REPORT, SIGNOFF, SRC, SRC_REQUIRED,
                    TARGET, URL, DEVEL, WHEEL_BUILD, WHEEL_CACHE, WHEEL_OUT, WORKDIR, Command, _mismatch_unless, arg)

COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("apply", "apply a patch set's series as commits on its branch (all or nothing)",
            (TARGET, SRC, URL, arg("--threeway", "THREEWAY", "merge drifted patches 3-way (1); keep: leave a conflict as a "
                                   "git am -3 session, with markers in the files, to resolve by hand",
                                   nargs="?", const=True, type=parser.threeway), NO_FETCH),
            _apply, apply_text.apply_result,
            "make apply TRTLLM=main THREEWAY=1\npatchkit apply --target main --src build/trtllm-main --threeway keep",
            lambda res: _mismatch_unless(res.session is None)),
    Command("unapply", "return the checkout to where it was before apply", (TARGET, SRC), _unapply,
            apply_text.unapply_result, "make unapply TRTLLM=main\npatchkit unapply --target main --src build/trtllm-main"),
    Command("check", "report how every patch set applies, changing nothing (exit 1 when a patch needs 3-way or is "
            "already upstream, 3 on a conflict)",
            (SRC_REQUIRED, arg("--target", None, "only these patch sets (default: all)", action="append"), NO_FETCH),
            _check, check_text.check_results, "make check TRTLLM_SRC=build/trtllm-main\npatchkit check --src build/trtllm-main",
            lambda res: ExitCode.CONFLICT if any(r.conflicts for r in res) else _mismatch_unless(not any(r.stale for r in res))),
    Command("radar", "since which upstream commit each fix of a set breaks, and since which it is no longer needed "
            "(exit 1: a fix needs work at UNTIL)",
            (TARGET, SRC, URL, arg("--since", "SINCE", "first commit of the range (default: the set's upstream.base)"),
             arg("--until", "UNTIL", "last commit of the range (default: the set's ref)"), FIX_ID,
             arg("--out", None, "where to write <target>.json and <target>.md (default: build/radar)", type=Path),
             NO_FETCH),
            _radar, _radar_text,
            "make radar TRTLLM=main SINCE=v1.3.0rc25\npatchkit radar --target main --src build/trtllm-main --since v1.3.0rc25",
            lambda res: _mismatch_unless(res.action == "nothing")),
    Command("backport", "carry an upstream pull request (or commit) as a fix of the set's stack, before our own "
            "fixes, its expectations measured; nothing written unless the whole stack applies",
            (TARGET, SRC, URL, arg("--pr", "PR", "the pull request's number (its squash commit once merged)"),
             arg("--commit", "COMMIT", "an upstream commit's id, instead of a pull request"),
             arg("--before", "BEFORE", "put the fix before this one (default: before our own fixes)"),
             arg("--after", "AFTER", "put the fix after this one"), NO_FETCH),
            _backport, _described("backport.command"),
            "make backport TRTLLM=rc25 PR=19450\npatchkit backport --target rc25 --src build/trtllm-rc25 --pr 19450"),
    Command("new-fix", "make commits of yours on the set's branch (those in no fix, or COMMIT) a new fix of ours, "
            "last in the stack: DEP-3 trailers, its tests the test files it touches, measured; all or nothing",
            (TARGET, SRC, BRANCH, arg("--fix-id", "FIXID", "the new fix's id: its bug's number (e.g. 20001)", required=True),
             arg("--bug", "BUG", "the bug it fixes (default: the upstream issue numbered FIXID)"),
             arg("--title", "TITLE", "its PR's title (default: its first commit's subject, [..] tags left out)"),
             arg("--commit", "COMMIT", "its commits (default: the branch's commits that belong to no fix); "
                 "several: repeat it, or separate them by spaces", action="append"), NO_FETCH),
            _new_fix, _described("edit.newfix"),
            "make new-fix TRTLLM=rc25 FIXID=20001\npatchkit new-fix --target rc25 --src build/trtllm-rc25 --fix-id 20001"),
    Command("drop", "take a fix out of the set's stack, all or nothing: the rest must still apply; the other fixes' "
            "expectations are measured again (or marked stale)",
            (TARGET, SRC, URL, arg("--fix-id", "FIXID", "the fix to drop (e.g. 19450)", required=True), NO_FETCH),
            _reorder("drop"), _described("edit.reorder"),
            "make drop TRTLLM=rc25 FIXID=19450\npatchkit drop --target rc25 --src build/trtllm-rc25 --fix-id 19450"),
    Command("move", "put a fix of the set's stack before or after another, all or nothing: the stack must still apply",
            (TARGET, SRC, URL, arg("--fix-id", "FIXID", "the fix to move (e.g. 19514)", required=True),
             arg("--before", "BEFORE", "put it before this fix"), arg("--after", "AFTER", "put it after this fix"),
             NO_FETCH),
            _reorder("move"), _described("edit.reorder"),
            "make move TRTLLM=rc25 FIXID=19514 BEFORE=19450\n"
            "patchkit move --target rc25 --src build/trtllm-rc25 --fix-id 19514 --before 19450"),
    Command("new-set", "start a set for another upstream ref from an existing one: its fixes carried (3-way where "
            "they drifted), those the ref has left out with the upstream commit; all or nothing",
            (arg("--from", "FROM", "the set to start from (e.g. rc25)", required=True),
             arg("--ref", "REF", "the new set's upstream ref: a tag or a branch (e.g. v1.3.0rc26)", required=True),
             arg("--name", "NAME", "the new set's name (default: rc26 for v1.3.0rc26, else the ref's last part)"),
             arg("--src", "TRTLLM_SRC", "a TensorRT-LLM checkout (default: build/trtllm-<name>, cloned as apply does)",
                 type=Path), URL, NO_FETCH),
            _new_set, _described("edit.newset"),
            "make new-set FROM=rc25 REF=v1.3.0rc26\npatchkit new-set --from rc25 --ref v1.3.0rc26"),
    Command("waivers", "which waiver lines skip the set's tests at its ref and after the set; its edit as -/+ lines", (TARGET, SRC, URL, NO_FETCH),
            _waivers, waivers_text.waivers_result,
            "make waivers TRTLLM=rc25\npatchkit waivers --target rc25 --src build/trtllm-rc25"),
    Command("delta", "run each fix's tests without it and with the whole stack, and grade its delta",
            (TARGET, SRC, URL, arg("--mode", "MODE", "default: source unless tensorrt_llm is importable",
                                   choices=DELTA_MODES), FIX_ID,
             arg("--report", "REPORT", "where to write the JSON report (default: build/delta/<target>.json)", type=Path),
             arg("--base", "BASE", "container mode: the unpatched image (default: the set's container.base)"),
             arg("--builder", "BUILDER", "container mode: buildah, podman or docker (default: the first that works)"),
             NO_FETCH, WHEEL_BUILD, CUDA_ARCHS, JOBS, DEVEL, WHEEL_OUT, WHEEL_CACHE),
            _delta, delta_text.delta_result,
            "make delta TRTLLM=main REPORT=/tmp/main-delta.json\n"
            "patchkit delta --target main --src build/trtllm-main --report /tmp/main-delta.json",
            lambda res: _mismatch_unless(res.ok)),
    Command("lint", "upstream's own pre-commit hooks, at their pinned revs, on the files the series changes",
            (TARGET, SRC, URL,
             arg("--report", "REPORT", "where to write the JSON report (default: build/lint/<target>.json)", type=Path),
             arg("--fix", "FIX", "put the formatters' changes into the series' commits and patches/<target>",
                 action="store_true"),
             arg("--cache", None, "the hook environments, mirrors and verdicts (default: $PATCHKIT_LINT_CACHE, else .venv/lint-cache)", type=Path),
             NO_FETCH),
            _lint, lint_text.lint_result,
            "make lint TRTLLM=main FIX=1\npatchkit lint --target main --src build/trtllm-main --fix",
            lambda res: res.code),
    Command("pr", "a signed-off PR branch, title and body from the last delta report",
            (TARGET, SRC, REPORT, SIGNOFF,
             arg("--fork", "FORK", "your GitHub user, whose fork the PR comes from (default: git config github.user)"),
             arg("--author", "AUTHOR", "'Name <email>', the commits' author (default: the sign-off's, as "
                 "GitHub's DCO check wants)"),
             arg("--notes", "NOTES", "the body also carries the set's internal notes (how this form of the fix "
                 "differs from the one verified, how source mode stood in for what the machine lacks)",
                 action="store_true"),
             arg("--fix-id", "FIXID", "the own fix of the stack the PR is for (default: the only one)"),
             arg("--out", None, "where to write title, body and patches (default: build/pr/<target>)", type=Path)),
            _pr, pr_text.pr_result,
            'make pr TRTLLM=main SIGNOFF="Jane Developer <jane@example.com>"\n'
            "patchkit pr --target main --src build/trtllm-main --signoff 'Jane Developer <jane@example.com>'"),
    Command("dco", "check (or fix) DCO sign-offs on a branch",
            (SRC_REQUIRED, arg("--branch", "BRANCH", "the branch to check", required=True),
             arg("--base", None, "check base..branch (default: commits on no remote branch, tag or set's ref)"),
             arg("--fix", "FIX", "add missing sign-offs, keeping the old tip on a backup ref", action="store_true"),
             SIGNOFF),
            _dco, pr_text.dco_result, "make dco BRANCH=pr/main\npatchkit dco --src build/trtllm-main --branch pr/main",
            lambda res: _mismatch_unless(res.ok)),
    Command("export", "write a branch back into the target's patch set", (TARGET, SRC, BRANCH), _export(False),
            pr_text.export_result, "make export TRTLLM=main\npatchkit export --target main --src build/trtllm-main"),
    Command("check-export", "fail when patches/<target> differs from the branch", (TARGET, SRC, BRANCH),
            _export(True), pr_text.export_result,
            "make check-export TRTLLM=main\npatchkit check-export --target main --src build/trtllm-main",
            lambda res: _mismatch_unless(res.up_to_date)),
    Command("wheel", "build the wheel of the set's stack with upstream's own build at its ref (in the set's devel "
            "image, or on this machine)",
            (TARGET, SRC, URL, WHEEL_BUILD, CUDA_ARCHS, JOBS, BUILDER, DEVEL,
             arg("--out", None, "where <target>/ with the wheel and wheel.json goes (default: build/wheel)", type=Path),
             arg("--cache", None, "the build trees and compiler caches (default: build/wheel-cache)", type=Path)),
            _wheel, _wheel_text,
            "make wheel TRTLLM=rc25 CUDA_ARCHS=120-real\npatchkit wheel --target rc25 --src build/trtllm-rc25 --cuda-archs 120-real"),
    Command("container", "build the patched image of the set's container base",
            (TARGET, SRC, URL, BASE, BUILDER, WHEEL_BUILD, CUDA_ARCHS, JOBS, DEVEL, WHEEL_OUT, WHEEL_CACHE,
             arg("--context", None, "where to render the build context (default: build/container/<target>)", type=Path)),
            _container, container_text.container_result,
            "make container TRTLLM=rc25 BUILDER=buildah\npatchkit container --target rc25 --builder buildah"),
    Command("container-push", "push the set's patched image",
            (TARGET, arg("--registry", "REGISTRY", "host/repo to push to", required=True),
             arg("--base", "BASE", "base image the image was built from (default: the set's)"), BUILDER,
             arg("--tls-verify", "TLS_VERIFY", "verify the registry's certificate", choices=("true", "false"),
                 default="true")),
            _push, container_text.push_result,
            "make container-push TRTLLM=rc25 REGISTRY=registry.example.com/ml/trtllm\n"
            "patchkit container-push --target rc25 --registry registry.example.com/ml/trtllm"),
    Command("miniature", "build the miniature upstream repository",
            (arg("--dest", "DEST", "where (a new or empty directory)", type=Path, required=True),
             arg("--variant", "VARIANT", "add a variant's commits on main (e.g. fixed-upstream: upstream's own fix)")),
            _miniature, _miniature_text,
            "make miniature DEST=/tmp/mini\npatchkit miniature --dest /tmp/mini"),
    Command("targets", "list the patch sets", (), _targets, targets_text.targets, "make targets\npatchkit targets"),
    Command("workflow", "render .github/workflows/patchkit.yml: every patch set's jobs, from the sets on disk",
            (arg("--gpu-runner", "GPU_RUNNER", "the container job's runner labels (default: self-hosted,gpu)"),
             arg("--build-runner", "BUILD_RUNNER", "the wheel job's runner labels, the large build machine "
                 "(default: self-hosted,build)"),
             arg("--check", None, "change nothing; exit 1 when the file is stale", action="store_true")),
            _workflow, ci_text.workflow_result,
            "make workflow GPU_RUNNER=self-hosted,gpu\npatchkit workflow --gpu-runner self-hosted,gpu",
            lambda res: _mismatch_unless(res.ok)),
    Command("summary", "merge delta, lint and radar reports into one table (Markdown and JSON)",
            (arg("--reports", "REPORTS", "folders of reports, searched for *.json (repeat it, or separate them by spaces)",
                 type=Path, required=True, action="append"),
             arg("--out", None, "where to write summary.md and summary.json (default: build/summary)", type=Path)),
            _summary, ci_text.summary_result,
            "make summary REPORTS=reports\npatchkit summary --reports reports",
            lambda res: _mismatch_unless(res.ok)),
    Command("bench", "measure each speed goal beside its figure: commands against raw git (paired), make test, "
            "make demo, the cold start by clone method, the delta, the radar, lint, the image build, the waiver step",
            (WORKDIR, arg("--files", None, "files of the generated upstream (default 15,000)", type=int),
             arg("--commits", None, "commits of the generated upstream (default 5,000)", type=int),
             arg("--only", "SECTION", "only these sections, by name (commas or blanks between; default: all)",
                 action="append")),
            _bench, _bench_text, "make bench SECTION=check\npatchkit bench --workdir build/bench --only check"),
    Command("demo", "run the main job on the miniature upstream",
            (WORKDIR, arg("--signoff", "SIGNOFF", "'Name <email>' for the demo's PR branch (default: git config)")),
            _demo, demo_text.demo_result,
            "make demo\npatchkit demo --workdir build/demo", lambda res: _mismatch_unless(res.ok)),
)}
REGISTRY.update(COMMANDS)

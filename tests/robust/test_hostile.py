"""The user's machine is hostile ground (issue #17, items 1-5): their git config and hooks
never reach our results.

One hostile ~/.gitconfig combines every setting the attack used (format.*, diff.*, trailer.*
with a sign-off forging command) and user hooks that log, edit files and fail. Each of apply,
check, export, check-export, delta, pr, dco (check and --fix) and unapply runs under it once
with the hooks in core.hooksPath and once with them in .git/hooks; the named tests below
assert on what those runs did:
  - exports are byte-identical to the patch set, and check-export agrees right after apply;
  - the PR commits are the golden ones: our sign-offs exactly, `Fixes #19514` untouched, the
    patches' own authors and subjects;
  - no user hook fired in any step (patchkit runs none, README "Your git config and hooks");
  - check changes nothing.
Combining the settings still proves each: any one of them leaking breaks an assertion. The
per-setting sweep (`pytest -m exhaustive`) runs the same sequence under each setting alone and
under the hooks alone; on the code before #17 each of them failed it, except trailer.ifexists,
which our `--if-exists` flag already overrode (it stays here as a guard).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from patchkit.cli import main
from helpers import LINT_CACHE, ROOT, copy_root, sh, state_of

# Every command run twice under hostile config and hooks: make test-slow (.ci/run).
pytestmark = pytest.mark.slow

SIGNOFF = "Jane Developer <jane.developer@example.com>"
FORGED = "Forged <forged@example.invalid>"
REVIEWED = "Reviewed-by: Rita Reviewer <rita@example.com>"
DCO_FIXED = f"Add a note\n\nFixes #19514\n\n{REVIEWED}\nSigned-off-by: {SIGNOFF}\n"
BASE_CONFIG = ("[user]\n\tname = Test User\n\temail = test@example.com\n[commit]\n\tgpgsign = false\n"
               "[init]\n\tdefaultBranch = main\n[protocol]\n\tallow = never\n[protocol \"file\"]\n\tallow = always\n")
# Each setting the attack used, as a user would write it in ~/.gitconfig.
SETTINGS = {
    "format.signoff": "[format]\n\tsignoff = true\n",
    "format.subjectPrefix": "[format]\n\tsubjectPrefix = FOO\n",
    "format.headers": "[format]\n\theaders = \"X-Hostile: 1\\n\"\n",
    "format.from": "[format]\n\tfrom = Evil Exporter <evil@example.invalid>\n",
    "format.thread": "[format]\n\tthread = deep\n",
    "format.suffix": "[format]\n\tsuffix = .txt\n",
    "format.coverLetter": "[format]\n\tcoverLetter = true\n",
    "diff.context": "[diff]\n\tcontext = 10\n",
    "diff.suppressBlankEmpty": "[diff]\n\tsuppressBlankEmpty = true\n",
    # a diff driver for Python files in the user's attributes file, whose funcname matches nothing
    "core.attributesFile": "[core]\n\tattributesFile = ~/.hostile-attributes\n"
                           "[diff \"hostile\"]\n\txfuncname = ^(zzz-never-a-line)$\n",
    "trailer.sign.command": f"[trailer \"sign\"]\n\tkey = Signed-off-by\n\tcommand = echo '{FORGED}'\n",
    "trailer.separators": "[trailer]\n\tseparators = \":#\"\n",
    "trailer.where": "[trailer]\n\twhere = start\n",
    "trailer.ifexists": "[trailer]\n\tifexists = replace\n",
}
HOOKS = ("post-checkout", "reference-transaction", "post-index-change")
# Every hook logs that it ran; post-checkout then edits a tracked file and fails, as the stock
# git-lfs hook does without git-lfs; post-index-change leaves an untracked file behind.
HOOK = """#!/bin/sh
echo "$(basename "$0") $PWD" >> '{log}'
case "$(basename "$0")" in
  post-checkout) echo hooked >> README.md; echo "This repository is configured for Git LFS but 'git-lfs' was not found" >&2; exit 2 ;;
  post-index-change) echo hooked >> hook-was-here ;;
esac
exit 0
"""


@dataclass
class Step:
    code: int
    out: str
    err: str


@dataclass
class Findings:
    checkout: Path
    root: Path
    steps: dict[str, Step] = field(default_factory=dict)
    fired: dict[str, list[str]] = field(default_factory=dict)  # step -> hook log lines it caused
    exported: dict[str, bytes] = field(default_factory=dict)
    before_check: dict | None = None
    after_check: dict | None = None
    before_apply: dict | None = None
    after_unapply: dict | None = None
    dirty_after_apply: str = ""
    pr_authors: list[str] = field(default_factory=list)
    pr_patches: dict[str, bytes] = field(default_factory=dict)
    dco_fixed_message: str = ""


def hostile_run(tmp: Path, upstream_template: Path, settings: list[str], hooks_in: str | None) -> Findings:
    """The command sequence in a fresh clone, patchkit seeing the hostile config and hooks."""
    tmp.mkdir(parents=True)
    upstream = tmp / "upstream"
    shutil.copytree(upstream_template, upstream, symlinks=True)
    checkout = tmp / "trtllm"
    sh("git", "clone", "-q", upstream.as_uri(), checkout)
    f = Findings(checkout, copy_root(tmp))
    log = tmp / "hooks.log"
    log.write_text("")
    hooks = tmp / "hooks"
    hooks.mkdir()
    for name in HOOKS if hooks_in else ():
        for where in ([hooks] if hooks_in == "core.hooksPath" else [checkout / ".git" / "hooks"]):
            (where / name).write_text(HOOK.format(log=log))
            (where / name).chmod(0o755)
    (Path(os.environ["HOME"]) / ".hostile-attributes").write_text("*.py diff=hostile\n")
    hostile = tmp / "hostile.gitconfig"
    hostile.write_text(BASE_CONFIG + "".join(SETTINGS[s] for s in settings)
                       + (f"[core]\n\thooksPath = {hooks}\n" if hooks_in == "core.hooksPath" else ""))
    clean = os.environ["GIT_CONFIG_GLOBAL"]

    def pk(name: str, *argv: str) -> Step:
        out, err = io.StringIO(), io.StringIO()
        os.environ["GIT_CONFIG_GLOBAL"] = str(hostile)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["--root", str(f.root), *argv])
        finally:
            os.environ["GIT_CONFIG_GLOBAL"] = clean
        f.steps[name] = Step(code, out.getvalue(), err.getvalue())
        f.fired[name] = log.read_text().splitlines()
        log.write_text("")
        return f.steps[name]

    def g(*args, cwd=checkout):  # the test's own git: no hooks of the user's
        return sh("git", "-c", "core.hooksPath=/dev/null", "-C", cwd, *args)

    src = ["--src", str(checkout)]
    f.before_apply = state_of(checkout)
    pk("apply", "apply", "--target", "rc25", *src)
    f.dirty_after_apply = g("status", "--porcelain").stdout
    f.before_check = state_of(checkout)
    pk("check", "check", *src)
    f.after_check = state_of(checkout)
    pk("export", "export", "--target", "rc25", *src)
    f.exported = {p.name: p.read_bytes() for p in (f.root / "patches" / "rc25").iterdir()}
    pk("check-export", "check-export", "--target", "rc25", *src)
    report = tmp / "delta" / "rc25.json"
    pk("delta", "delta", "--target", "rc25", *src, "--mode", "source", "--report", str(report))
    out = tmp / "pr"
    pk("pr", "--json", "pr", "--target", "rc25", *src, "--report", str(report), "--out", str(out), "--signoff", SIGNOFF)
    if f.steps["pr"].code == 0:
        f.pr_authors = g("log", "--reverse", "--format=%an <%ae>", "v1.3.0rc25..pr/rc25").stdout.splitlines()
        f.pr_patches = {p.name: p.read_bytes() for p in (out / "patches").iterdir()}
    pk("dco", "dco", *src, "--branch", "pr/rc25", "--base", "v1.3.0rc25")
    # A branch of the user's with a commit that lacks the sign-off and has a trailer already
    # (trailer.where=start would put the sign-off before it).
    g("branch", "work", "v1.3.0rc25")
    g("worktree", "add", "-q", tmp / "work", "work")
    (tmp / "work" / "NOTES.txt").write_text("a note\n")
    g("add", "NOTES.txt", cwd=tmp / "work")
    # authored by who signs it off: a sign-off is its author's to add (#33 item 7)
    g("commit", "-q", "--author", SIGNOFF, "-m", f"Add a note\n\nFixes #19514\n\n{REVIEWED}", cwd=tmp / "work")
    g("worktree", "remove", tmp / "work")
    pk("dco-fix", "dco", *src, "--branch", "work", "--base", "v1.3.0rc25", "--fix", "--signoff", SIGNOFF)
    f.dco_fixed_message = g("cat-file", "commit", "work").stdout.split("\n\n", 1)[1]
    pk("unapply", "unapply", "--target", "rc25", *src)
    f.after_unapply = state_of(checkout)
    return f


COMBINED = list(SETTINGS)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, miniature_template):
    """The sequence under every setting at once, hooks in core.hooksPath and in .git/hooks."""
    tmp = tmp_path_factory.mktemp("hostile")
    with pytest.MonkeyPatch.context() as mp:
        _seal(mp, tmp)
        return {place: hostile_run(tmp / place.replace("/", "-"), miniature_template, COMBINED, place)
                for place in ("core.hooksPath", ".git/hooks")}


def _seal(mp: pytest.MonkeyPatch, tmp: Path) -> None:
    """conftest's hermetic seal, for a module-scoped fixture (which runs before it)."""
    # Not `from conftest import ...`: under the full suite, `conftest` may name another one.
    FIXED_DATE = "2026-11-29T12:00:00+00:00"
    MAKE_VARIABLES = {name for line in (ROOT / "Makefile").read_text().splitlines()
                      if line.startswith("export ") and "=" not in line for name in line.split()[1:]}
    home = tmp / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(BASE_CONFIG)
    (tmp / "tmpdir").mkdir()
    mp.setenv("TMPDIR", str(tmp / "tmpdir"))
    for k in list(os.environ):
        if k.startswith("GIT_") or k in ("PATCHKIT_ROOT", "PATCHKIT_VIA_MAKE") or k in MAKE_VARIABLES:
            mp.delenv(k)
    for k, v in {"HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_CONFIG_NOSYSTEM": "1",
                 "GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE, "LANG": "C", "TZ": "UTC",
                 # make pr's lint: the suite's warm hook environments (without them, each run
                 # installed every pinned tool again: 40 s of the module's setup)
                 "PATCHKIT_LINT_CACHE": str(LINT_CACHE)}.items():
        mp.setenv(k, v)


PLACES = ("core.hooksPath", ".git/hooks")


def _ok(f: Findings, *names: str) -> None:
    for name in names:
        s = f.steps[name]
        assert s.code == 0, f"{name}: exit {s.code}: {s.err.strip()}"


@pytest.mark.parametrize("place", PLACES)
def test_exports_under_format_and_diff_config_are_byte_identical(runs, place):
    """#17.1: format.signoff/subjectPrefix/headers/from/thread/suffix, diff.context=10 and
    diff.suppressBlankEmpty changed every exported byte, and check-export failed right after
    apply; format.suffix=.txt renamed the patches and rewrote `series:`."""
    f = runs[place]
    _ok(f, "apply", "check-export", "export")
    want = {p.name: p.read_bytes() for p in (ROOT / "patches" / "rc25").iterdir()}
    assert sorted(f.exported) == sorted(want)
    assert [n for n in want if f.exported[n] != want[n]] == []


@pytest.mark.parametrize("place", PLACES)
def test_cover_letter_config_neither_enters_the_set_nor_breaks_later_commands(runs, place):
    """#17.2: format.coverLetter=true wrote 0000-cover-letter.patch into the set, after which
    unapply, pr and check-export failed ("contains no diff")."""
    f = runs[place]
    assert not any("cover-letter" in n for n in f.exported)
    assert not any("cover-letter" in n for n in f.pr_patches)
    _ok(f, "check-export", "pr", "unapply")


@pytest.mark.parametrize("place", PLACES)
def test_pr_commits_keep_their_author_and_subjects(runs, place):
    """#17.3: format.from and format.subjectPrefix reached the PR commits: the author became
    the config's From, a stray From: line landed in the body, subjects read [FOO 1/2]. (#33
    item 7: the PR's commits are the sign-off's own, the computed waiver commit too.)"""
    f = runs[place]
    _ok(f, "pr")
    messages = json.loads(f.steps["pr"].out)["messages"]
    golden = (ROOT / "tests" / "golden" / "pr_commits_rc25.txt").read_text().split("\n-----\n")
    assert messages == golden
    assert f.pr_authors == [SIGNOFF] * len(messages)
    for name, data in f.pr_patches.items():
        text = data.decode()
        assert name.endswith(".patch") and "\nSubject: [PATCH " in text and "X-Hostile" not in text
        assert "\nIn-Reply-To:" not in text and "evil@example.invalid" not in text


@pytest.mark.parametrize("place", PLACES)
def test_trailer_config_cannot_forge_or_mangle_a_signoff(runs, place):
    """#17.4: trailer.sign.command forged every sign-off of make pr (exit 0) and survived
    dco --fix; trailer.separators/where/ifexists rewrote `Fixes #19514` to `Fixes: 19514`."""
    f = runs[place]
    _ok(f, "pr", "dco", "dco-fix")
    for message in json.loads(f.steps["pr"].out)["messages"]:
        assert message.endswith(f"\n\nSigned-off-by: {SIGNOFF}\n") and message.count("Signed-off-by:") == 1
        assert FORGED not in message
    assert f.dco_fixed_message == DCO_FIXED


@pytest.mark.parametrize("place", PLACES)
def test_no_user_hook_runs_inside_any_command(runs, place):
    """#17.5: post-checkout, reference-transaction and post-index-change hooks (core.hooksPath
    or .git/hooks) ran inside our operations: a failing post-checkout (the stock git-lfs hook
    without git-lfs) failed every apply, an editing one left apply dirty, so unapply refused."""
    f = runs[place]
    assert {step: lines for step, lines in f.fired.items() if lines} == {}
    _ok(f, "apply", "unapply")
    assert f.dirty_after_apply == ""
    keep = ("files", "head", "index_entries", "stash", "worktrees")
    assert {k: f.after_unapply[k] for k in keep} == {k: f.before_apply[k] for k in keep}


@pytest.mark.parametrize("place", PLACES)
def test_check_changes_nothing_under_hostile_config_and_hooks(runs, place):
    """#17.5: a post-index-change hook made `make check`, promised to change nothing, modify
    the checkout."""
    f = runs[place]
    _ok(f, "check")
    assert f.after_check == f.before_check


@pytest.mark.exhaustive
@pytest.mark.parametrize("setting", [*SETTINGS, *(f"hooks in {p}" for p in PLACES)])
def test_each_setting_alone(tmp_path, miniature_template, setting):
    """The sweep: each setting on its own (no hooks), and the hooks on their own (no settings),
    so that each is seen to matter by itself."""
    hooks = setting.removeprefix("hooks in ") if setting.startswith("hooks in ") else None
    f = hostile_run(tmp_path / "run", miniature_template, [] if hooks else [setting], hooks)
    for name in f.steps:
        _ok(f, name)
    want = {p.name: p.read_bytes() for p in (ROOT / "patches" / "rc25").iterdir()}
    assert f.exported == want
    golden = (ROOT / "tests" / "golden" / "pr_commits_rc25.txt").read_text().split("\n-----\n")
    assert json.loads(f.steps["pr"].out)["messages"] == golden
    assert f.dco_fixed_message == DCO_FIXED
    assert f.after_check == f.before_check and not any(f.fired.values())


def test_signing_config_neither_stops_nor_changes_the_miniature(tmp_path, miniature_template, monkeypatch):
    """commit.gpgSign and tag.gpgSign with a gpg that fails (a developer whose key lives on a
    card that is not plugged in): `make miniature` and `make demo` built nothing. Our commits
    and tags are never signed, so the miniature has the same ids as under a clean config."""
    from patchkit import miniature
    hostile = tmp_path / "signing.gitconfig"
    hostile.write_text(BASE_CONFIG + "[commit]\n\tgpgSign = true\n[tag]\n\tgpgSign = true\n\tforceSignAnnotated = true\n"
                       "[gpg]\n\tprogram = false\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(hostile))
    dest = tmp_path / "upstream"
    miniature.build(ROOT, dest)
    refs = ["for-each-ref", "--format=%(refname) %(objectname) %(objecttype)"]
    assert sh("git", "-C", dest, *refs).stdout == sh("git", "-C", miniature_template, *refs).stdout

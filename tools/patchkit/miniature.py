"""make miniature: build the small upstream repository the demo and the tests run on.

The scaffolding lives in tests/fixtures/miniature (a manifest of commits, each a directory
laid over the tree before it). It is data of this feature, read from the project root like
patches/ (make demo and make miniature run on it), and the tests' fixture too, hence where
it lives. Lines marked '#patchkit: preimage <target> <n>' become the
preimage of hunk n of that target's patches for the file, so the lines the real patches
touch are the patches' own. A line '#patchkit: filler' becomes generated code of our own,
as many lines as put the first preimage after it (or the line after '#patchkit: at <target>
<n>') at the line its hunk header names: the patches then apply with no offset, and
exporting them again is byte-identical. Variants (manifest 'variants') are further commits
on main, for the cases a user meets: upstream fixing the bug its own way, say; or a release
branch from a tag that took pull requests as squash commits and was tagged anew.

A commit is either a directory laid over the tree ('dir') or a change to the scaffolding as
it stands ('patch': a unified diff over the scaffold files, markers and all), so that a
variant says only what upstream changed, and several variants can land the same change.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import unidiff
import yaml

from . import minicpp, minihistory, patchset
from .errors import BadInput, Hint
from .git import Identity, init
from .upstream import make_parents

SCAFFOLD = Path("tests/fixtures/miniature")
MARKER = re.compile(r"^#patchkit: preimage (?P<target>\S+) (?P<n>\d+)$")
ANCHOR = re.compile(r"^#patchkit: at (?P<target>\S+) (?P<n>\d+)$")  # the next line sits where hunk n starts
FILLER = "#patchkit: filler"
IDENTITY = Identity("Miniature Upstream", "miniature@upstream.invalid")


@dataclass(frozen=True)
class MiniatureResult:
    path: Path
    tag: str
    branch: str
    commits: tuple[str, ...]
    variant: str | None = None


def variants(root: Path) -> list[str]:
    """The names of the miniature's variants: mains where upstream moved on in some way."""
    manifest = yaml.safe_load((root / SCAFFOLD / "manifest.yaml").read_text())
    return sorted(manifest.get("variants") or {})


def build(root: Path, dest: Path, variant: str | None = None) -> MiniatureResult:
    """Build the miniature at dest (which must not exist, or be an empty directory); with a
    variant, that variant's commits go on top of main."""
    dest = dest.resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BadInput(f"{dest} already exists and is not empty", hint=Hint.choose("dest"))
    made = make_parents(dest, "dest")  # DEST=build/x on a fresh clone: build/ is made, as apply makes it
    try:
        return _build(root, dest, variant)
    except BaseException:
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()
        raise


def _build(root: Path, dest: Path, variant: str | None) -> MiniatureResult:
    scaffold = root / SCAFFOLD
    manifest = yaml.safe_load((scaffold / "manifest.yaml").read_text())
    todo = list(manifest["commits"])  # then the pulls, then a variant's commits
    if variant is not None:
        known = manifest.get("variants") or {}
        if variant not in known:
            raise BadInput(f"no miniature variant {variant!r}; choose one of: {', '.join(sorted(known))}")
        todo += known[variant]
    tmp = Path(tempfile.mkdtemp(prefix=".miniature-", dir=dest.parent))
    try:
        branch = manifest.get("branch", "main")
        repo = init(tmp, branch)
        tag, commits = "", []
        sources: dict[str, str] = {}  # path -> its scaffold text as the commits so far left it
        at_tag: dict[str, dict[str, str]] = {}  # tag -> the scaffold text as it was there
        for c in manifest["commits"]:
            commits += _commit(root, scaffold, repo, tmp, c, sources)
            if c.get("tag"):
                tag = c["tag"]
                repo.tag(tag)
                at_tag[tag] = dict(sources)
        pulls = {str(p["number"]): p for p in manifest.get("pulls") or ()}
        for pull in pulls.values():
            commits += _pull(root, scaffold, repo, tmp, pull, sources, branch)
        for c in todo[len(manifest["commits"]):]:
            commits += (_release(root, scaffold, repo, tmp, c, at_tag, pulls, branch) if "release" in c
                        else _commit(root, scaffold, repo, tmp, c, sources))
        repo.close()
        if dest.exists():
            dest.rmdir()
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return MiniatureResult(dest, tag, manifest.get("branch", "main"), tuple(commits), variant)


def _commit(root: Path, scaffold: Path, repo, tree: Path, c: dict, sources: dict[str, str]) -> list[str]:
    """One commit of the manifest (or a variant's) on the branch checked out; its id(s)."""
    if c.get("generate") == "history":  # changes laid over the tree as it is (minihistory.py)
        def expand(layer: str, path: str) -> str:
            text = (_patched(root, scaffold / layer, sources)[path] if layer.endswith(".diff")
                    else (scaffold / layer / path).read_text())
            return _expand(root, path, text)
        return [repo.add_all_and_commit(message, IDENTITY, date) for message, date in minihistory.commits(expand, tree)]
    _change(root, scaffold, c, sources, tree)
    return [repo.add_all_and_commit(c["message"], IDENTITY, c["date"])]


def _change(root: Path, scaffold: Path, c: dict, sources: dict[str, str], tree: Path) -> None:
    """A commit's change to the tree: its directory laid over it (and the C++ modules the
    miniature generates, where it says `modules: cpp`), then its diff applied."""
    if "dir" in c:
        _lay(root, scaffold / c["dir"], sources, tree)
    if c.get("modules") == "cpp":
        minicpp.write(tree)
    if "patch" in c:
        _patch(root, scaffold / c["patch"], sources, tree)


def _pull(root: Path, scaffold: Path, repo, tree: Path, pull: dict, sources: dict[str, str], branch: str) -> list[str]:
    """A pull request as GitHub serves it: its commits on refs/pull/<number>/head, branched from
    its base; when merged, squashed onto the branch as one commit titled '<title> (#<number>)'."""
    repo.checkout(repo.rev_parse(pull["base"]))
    theirs = dict(sources)  # the PR's own scaffold text; the branch's stays as it is
    made = [c for commit in pull["commits"] for c in _commit(root, scaffold, repo, tree, commit, theirs)]
    repo.set_ref(f"refs/pull/{pull['number']}/head", made[-1])
    repo.checkout(branch)
    merged = pull.get("merged")
    if not merged:
        return made
    for commit in pull["commits"]:  # the PR's changes, laid over the branch as one commit
        _change(root, scaffold, commit, sources, tree)
    return made + [repo.add_all_and_commit(merged["message"], IDENTITY, merged["date"])]


def _release(root: Path, scaffold: Path, repo, tree: Path, c: dict, at_tag: dict[str, dict[str, str]],
             pulls: dict[str, dict], branch: str) -> list[str]:
    """A release branch (c['release']) from a tag of the manifest (c['from']) that took pull
    requests (c['squash']) as one squash commit each, as upstream's release branches take
    cherry-picks, the last one tagged c['tag']; main is left as it was."""
    if c["from"] not in at_tag:
        raise BadInput(f"miniature: release {c['release']} starts from {c['from']!r}, which is no tag of the manifest")
    sources = dict(at_tag[c["from"]])
    repo.checkout(repo.rev_parse(c["from"]))
    made = []
    for number, message, date in zip(c["squash"], c["messages"], c["dates"]):
        pull = pulls[str(number)]
        for commit in pull["commits"]:  # the PR's changes, laid over the release branch as one commit
            if "patch" in commit:
                _patch(root, scaffold / commit["patch"], sources, tree)
            else:
                _lay(root, scaffold / commit["dir"], sources, tree)
        made.append(repo.add_all_and_commit(message, IDENTITY, date))
    repo.set_ref(f"refs/heads/{c['release']}", made[-1])
    repo.tag(c["tag"], made[-1])
    repo.checkout(branch)
    return made


def _lay(root: Path, layer: Path, sources: dict[str, str], tree: Path) -> None:
    for src in sorted(layer.rglob("*")):
        if not src.is_dir():
            _write(root, src.relative_to(layer).as_posix(), src.read_text(), sources, tree)
            if os.access(src, os.X_OK):  # a script a local hook runs (language: script) stays executable
                (tree / src.relative_to(layer)).chmod(0o755)


def _write(root: Path, path: str, text: str, sources: dict[str, str], tree: Path) -> None:
    sources[path] = text
    out = tree / path
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(_expand(root, path, text))


def _patch(root: Path, diff: Path, sources: dict[str, str], tree: Path) -> None:
    """Lay a diff over the scaffolding as the commits so far left it (see _patched)."""
    for path, text in _patched(root, diff, sources).items():
        if text is None:
            sources.pop(path, None)
            (tree / path).unlink()
        else:
            _write(root, path, text, sources, tree)


def _patched(root: Path, diff: Path, sources: dict[str, str]) -> dict[str, str | None]:
    """The scaffold text of each file a unified diff changes, the diff applied to the text the
    commits so far left (None: the diff deletes it). Exactly: every hunk where its header
    says, its lines as they are (no fuzz, no offset), else BadInput naming file and hunk.

    unidiff, which reads the sets' patches, parses it; applying an exact diff to text is the
    few lines below (whatthepatch or patch-ng would add a dependency for them)."""
    where = diff.relative_to(root).as_posix()
    out: dict[str, str | None] = {}
    for pf in unidiff.PatchSet(diff.read_text()):
        path = pf.path
        if pf.is_removed_file:
            out[path] = None
            continue
        old = [] if pf.is_added_file else sources.get(path, "").splitlines(keepends=True)
        if not old and not pf.is_added_file:
            raise BadInput(f"miniature: {where}: {path} is not in the scaffolding before it")
        new, at = [], 0
        for n, hunk in enumerate(pf, 1):
            start = hunk.source_start - (1 if hunk.source_length else 0)
            want = [ln.value for ln in hunk if not ln.is_added]
            if start < at or old[start:start + len(want)] != want:
                raise BadInput(f"miniature: {where}: {path} hunk #{n} does not apply to the scaffolding before it")
            new += old[at:start] + [ln.value for ln in hunk if not ln.is_removed]
            at = start + len(want)
        out[path] = "".join(new + old[at:])
    return out


def _expand(root: Path, path: str, text: str) -> str:
    """The file's text with its preimage markers replaced and its filler sized."""
    lines: list[str] = []
    filler_at: int | None = None
    anchor: tuple[int, int] | None = None  # (index in lines, the line the hunk header names)
    for line in text.splitlines(keepends=True):
        m = MARKER.match(line.rstrip("\n"))
        a = ANCHOR.match(line.rstrip("\n"))
        if a:
            if filler_at is not None and anchor is None:
                anchor = (len(lines), _hunk(root, path, a["target"], int(a["n"])).old_start)
        elif m:
            hunk = _hunk(root, path, m["target"], int(m["n"]))
            if filler_at is not None and anchor is None and path.endswith(".md"):
                # A page may have a filler before each hunk: prose, sized as it comes.
                lines[filler_at:filler_at] = md_filler(hunk.old_start - 1 - len(lines), path)
                filler_at = None
            elif filler_at is not None and anchor is None:
                anchor = (len(lines), hunk.old_start)
            lines += hunk.preimage
        elif line.rstrip("\n") == FILLER:
            filler_at = len(lines)
        else:
            lines.append(line)
    if filler_at is None:
        return "".join(lines)
    if anchor is None:
        raise BadInput(f"miniature: {path} has a filler but no preimage or anchor marker after it")
    need = anchor[1] - 1 - anchor[0]
    return "".join(lines[:filler_at] + filler(need, path) + lines[filler_at:])


def _hunk(root: Path, path: str, target: str, n: int):
    ps = patchset.load(root, target)
    for patch in ps.patches:
        for fc in patch.files:
            if fc.old_path == path and len(fc.hunks) >= n:
                return fc.hunks[n - 1]
    raise BadInput(f"miniature: no hunk {n} for {path} in the {target} patch set")


_TOPICS = ("block", "page", "request", "token", "batch", "layer", "slot", "stream", "window", "beam",
           "sequence", "adapter", "prompt", "chunk", "draft")


def _plural(word: str) -> str:
    return word + ("es" if word.endswith(("ch", "sh", "s")) else "s")


def _function(i: int) -> list[str]:
    t = _TOPICS[i % len(_TOPICS)]
    return [f"def _{t}_budget_{i}(total: int, reserved: int = 0) -> int:\n",
            f'    """How many {_plural(t)} remain of total once reserved ones are set aside (miniature filler)."""\n',
            "    return max(total - reserved, 0)\n"]


def _class(i: int) -> list[str]:
    t = _TOPICS[i % len(_TOPICS)]
    return [f"class _{t.capitalize()}Tally{i}:\n",
            f'    """Counts {_plural(t)} as they are handed out, up to a limit (miniature filler)."""\n',
            "\n",
            "    def __init__(self, limit: int) -> None:\n",
            "        self.limit = limit\n",
            "        self.used = 0\n",
            "\n",
            "    def take(self, n: int = 1) -> bool:\n",
            "        if self.used + n > self.limit:\n",
            "            return False\n",
            "        self.used += n\n",
            "        return True\n"]


def md_filler(n: int, path: str = "the page") -> list[str]:
    """n lines of our own prose, in paragraphs, for a page's lines that no patch touches."""
    if n < 0:
        raise BadInput(f"miniature: {path} has {-n} line(s) too many before a hunk's line")
    return ["\n" if i % 4 == 3 or i == n - 1 else
            f"This line stands in for part {i + 1} of the guide that no patch touches.\n" for i in range(n)]


def filler(n: int, path: str = "the file") -> list[str]:
    """n lines of plausible module-level code of our own (functions, small classes, a tuple).

    Deterministic and prefix-stable: a longer filler starts with the blocks of a shorter
    one, so the miniature's later commits read as upstream adding code.
    """
    if n == 0:
        return []
    if n < 4:
        raise BadInput(f"miniature: {path} needs {n} filler line(s); a filler is 0 or at least 4 lines")
    out: list[str] = []
    i = 0
    while True:
        block = (_class(i) if i % 3 == 2 else _function(i)) + ["\n", "\n"]
        if n - len(out) - len(block) < 4:
            break
        out += block
        i += 1
    k = n - len(out) - 4  # the last block, a tuple, takes the rest: 2 + k lines and 2 blank ones
    if k == 0:  # an empty tuple on two lines is not yapf-clean (upstream lints this file with yapf)
        out += ["# The filler's names (none).\n", "_FILLER_NAMES = ()\n", "\n", "\n"]
    else:
        out += ["_FILLER_NAMES = (\n", *(f'    "{_TOPICS[j % len(_TOPICS)]}_{j}",\n' for j in range(k)), ")\n", "\n", "\n"]
    assert len(out) == n
    return out


def describe(r: MiniatureResult) -> str:
    """make miniature's result in one line."""
    return f"miniature upstream at {r.path} (tag {r.tag}, branch {r.branch}" + (f", variant {r.variant})" if r.variant else ")")

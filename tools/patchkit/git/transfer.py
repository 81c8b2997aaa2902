"""Transfer: fetching on demand (one commit, a ref, more history, a batch of blobs), partial
and sparse checkouts, what the object store holds, and the clone/fetch runner with git's own
progress and the network deadline: a room of Repo (repo.py). clone.py makes the clones.
"""
from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .. import progress
from ..errors import NotFound
from ..proc import TimeoutExpired
from .runner import GitError, Result, GitRunner, Sha, _kill_tree

_FULL_ID = re.compile(r"[0-9a-f]{40}")
FETCH_BATCH = 10_000  # object ids per fetch command line (410 kB of arguments; Linux allows 2 MB)
LOCAL_UPLOAD_PACK = "git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack"


@dataclass(frozen=True)
class ObjectStats:
    objects: int  # in packs: in a clone, the objects received
    pack_bytes: int  # the packs as received
    packs: int
    loose: int  # objects written here (commits and trees of the series, ...)



class TransferMixin:
    """Repo's fetching on demand and sparse checkouts (uses Repo's _run, _out, _runner,
    config_get, git_path)."""

    def _origin(self) -> str:
        """The remote we fetch from, as an error names it: origin (its URL)."""
        return f"origin ({self.config_get('remote.origin.url')})"

    def is_shallow(self) -> bool:
        return self._out("rev-parse", "--is-shallow-repository") == "true"

    # -- fetching on demand: one commit's worth, never the history between -----------------------
    def is_partial(self) -> bool:
        """A partial clone: origin promises the objects left out, and lazily fetches them."""
        return self.config_get("remote.origin.promisor") == "true"

    def present_commit(self, rev: str) -> Sha | None:
        """The commit rev names if it is here, without fetching it: in a partial clone,
        rev-parse of a missing commit id fetches it lazily, with all of its history."""
        res = self._run("rev-list", "-n1", "--no-walk", "--missing=allow-any", "--end-of-options", rev, check=False)
        return Sha(res.text.strip()) if res.returncode == 0 and res.text.strip() else None

    def fetch_commit(self, rev: str, trees: bool = True) -> Sha | None:
        """Make rev (a commit id, or a tag or branch name on origin) present with its trees.

        In a shallow clone it comes at depth 1, with the clone's filter: one commit and the
        trees that differ from what is here, not the history in between; with trees=False, in
        a partial clone, the commit alone (filter tree:0). None when origin has no such commit
        (or there is no origin).
        """
        absent = self.__dict__.setdefault("_absent_on_origin", set())
        if rev in absent:  # asked and refused in this run already (the probes ask once a patch)
            return None
        have = self.present_commit(rev)
        if have is not None or not self.config_get("remote.origin.url"):
            return have
        args = ["fetch", "--no-tags", "--no-write-fetch-head"] + (["--depth", "1"] if self.is_shallow() else [])
        filt = self.config_get("remote.origin.partialclonefilter")
        if filt:
            args.append("--filter=tree:0" if not trees and self.is_partial() else f"--filter={filt}")
        if _FULL_ID.fullmatch(rev):  # an id needs no ref: a run killed after the fetch leaves none
            res = _transfer(self._runner, [*args, "origin", rev], f"fetching {rev} (one commit)", check=False,
                            remote=self._origin())
            if res.returncode != 0:
                absent.add(rev)
                return None
            return self.present_commit(rev)
        # A name is fetched into FETCH_HEAD's place below refs/patchkit/ only for the moment of
        # reading its id: the user's refs are not ours to add to.
        tmp = "refs/patchkit/fetched"
        res = _transfer(self._runner, [*args, "origin", f"+{rev}:{tmp}"], f"fetching {rev} (one commit)",
                        check=False, remote=self._origin())
        if res.returncode != 0:
            return None
        sha = self.present_commit(tmp)
        self._run("update-ref", "-d", tmp)
        return sha

    def deepen(self, commits: int, trees: bool = True) -> bool:
        """commits more of history behind a shallow clone's edge; False when there is no more.
        With trees=False, in a partial clone, the commits alone (filter tree:0)."""
        before = self._out("rev-list", "--count", "--all")
        filt = self.config_get("remote.origin.partialclonefilter")
        args = [f"--filter={'tree:0' if not trees and self.is_partial() else filt}"] if filt else []
        res = _transfer(self._runner, ["fetch", "--no-tags", f"--deepen={commits}", *args, "origin"],
                        f"fetching {commits} more commits of history", check=False, remote=self._origin())
        return res.returncode == 0 and self._out("rev-list", "--count", "--all") != before

    def fetch_ref(self, ref: str) -> bool:
        """A ref that a single-ref clone lacks, at depth 1 in a shallow one, under the name a
        clone of it would give it (refs/tags/x or refs/remotes/origin/x); False when origin has none."""
        # A failing ls-remote is git's failure (exit 3, its words), not "origin has no such ref".
        listed = _transfer(self._runner, ["ls-remote", "origin", f"refs/tags/{ref}", f"refs/heads/{ref}"],
                           f"asking origin for {ref}", remote=self._origin(), progress_flag=False)
        names = [line.split("\t", 1)[1] for line in listed.text.splitlines() if "\t" in line]
        if not names:
            return False
        name = min(names)  # refs/heads/ sorts before refs/tags/; a tag wins over a branch, as in ref_candidates
        name = next((n for n in names if n.startswith("refs/tags/")), name)
        local = name if name.startswith("refs/tags/") else "refs/remotes/origin/" + name[len("refs/heads/"):]
        args = ["fetch", "--no-tags"] + (["--depth", "1"] if self.is_shallow() else [])
        return _transfer(self._runner, [*args, "origin", f"+{name}:{local}"], f"fetching {ref}",
                         check=False, remote=self._origin()).returncode == 0

    def refresh_ref(self, local: str) -> tuple[str, str]:
        """Bring one ref that the checkout has up to date with origin's, and nothing else:
        (the local ref written, '' or git's words when origin could not be reached).

        local: where the checkout has it. A tag (refs/tags/x) or remote-tracking branch
        (refs/remotes/origin/x) is fetched into itself; a local branch (refs/heads/x) into
        refs/remotes/origin/x, so that the user's branches and work tree never move. A full
        checkout fetches as git fetch would (nothing is sent when the tip is here). A shallow
        one asks origin for the tip first: a tip it has moves the ref without a transfer (a
        `fetch --depth 1` of it would cut the history radar deepened), a new one comes at depth
        1 with the clone's filter (one commit, its trees, blobs on demand). A failure of git
        other than an unreachable origin raises GitError (exit 3).
        """
        name = local.removeprefix("refs/remotes/origin/").removeprefix("refs/heads/")
        theirs = local if local.startswith("refs/tags/") else f"refs/heads/{name}"
        dest = local if local.startswith("refs/tags/") else f"refs/remotes/origin/{name}"
        remote = self._origin()
        base = ["fetch", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no"]
        if self.is_shallow():
            listed = _transfer(self._runner, ["ls-remote", "origin", theirs], f"asking origin for {name}",
                               check=False, remote=remote, progress_flag=False)
            said = _unreachable(listed)
            if said:
                return dest, said
            tips = [line.split("\t", 1)[0] for line in listed.text.splitlines() if line.endswith(f"\t{theirs}")]
            if not tips:
                return dest, f"{remote} has no {theirs}"
            tip = Sha(tips[0])
            if self.present_commit(tip):
                if self.rev_parse(dest) != tip:
                    self._run("update-ref", "-m", f"patchkit: fetch {theirs} from origin", dest, tip)
                return dest, ""
            base += ["--depth", "1"]
        res = _transfer(self._runner, [*base, "origin", f"+{theirs}:{dest}"], f"fetching {name} from origin",
                        check=False, remote=remote)
        return dest, _unreachable(res)

    def sparse_patterns(self) -> set[str]:
        """The sparse checkout's patterns; empty when the checkout is not sparse."""
        if self._run("config", "--bool", "core.sparseCheckout", check=False).text.strip() != "true":
            return set()
        return {ln.strip() for ln in self._run("sparse-checkout", "list").text.splitlines() if ln.strip()}

    def sparse_checkout_add(self, paths: Iterable[str]) -> None:
        """Widen a sparse checkout by these paths (non-cone patterns, anchored at the top)."""
        if self._run("config", "--bool", "core.sparseCheckout", check=False).text.strip() != "true":
            return
        self._run("sparse-checkout", "add", "--stdin", input="".join(f"/{p}\n" for p in sorted(set(paths))))

    def object_stats(self) -> "ObjectStats":
        """What the object store holds: objects, their bytes as packed or loose, and the packs'
        bytes (in a clone, what was received: git stores fetched packs as they arrive)."""
        kv = dict(line.split(": ", 1) for line in self._out("count-objects", "-v").splitlines() if ": " in line)
        packs = sorted(self.git_path("objects/pack").glob("*.pack"))
        return ObjectStats(int(kv.get("in-pack", 0)), sum(p.stat().st_size for p in packs), len(packs),
                           int(kv.get("count", 0)))

    def commit_objects(self, rev: str, paths: Iterable[str] = ()) -> list[str]:
        """The objects a checkout of rev needs at the least: the commit, all of its trees, and
        the blobs at paths, files or directories (the limit a one-commit fetch can reach)."""
        out = self._run("ls-tree", "-r", "-t", "-z", rev).text
        trees = [rec.split(" ")[2].split("\t")[0] for rec in out.split("\0") if rec and rec.split(" ")[1] == "tree"]
        want = tuple(paths)
        blobs = [meta.split(" ")[2] for meta, _, name in (rec.partition("\t") for rec in out.split("\0") if rec)
                 if meta.split(" ")[1] == "blob" and any(name == p or name.startswith(p + "/") for p in want)]
        return [self._out("rev-parse", f"{rev}^{{commit}}"), self._out("rev-parse", f"{rev}^{{tree}}"), *trees, *blobs]

    def packed_size(self, objects: Sequence[str]) -> int:
        """The bytes of one pack holding exactly these objects, as a server would send them."""
        return len(self._run("pack-objects", "--stdout", input="".join(f"{o}\n" for o in objects)).stdout)

    def prefetch(self, shas: Iterable[str], filter: str = "") -> None:
        """In a partial clone, fetch the objects among shas that are not here, in one batch
        (git's own lazy fetch would fetch them one process at a time). filter: the clone's
        unless given ('tree:0': a wanted tree comes without the trees below it)."""
        if not self.is_partial():
            return
        present = set(self._run("cat-file", "--batch-all-objects", "--batch-check=%(objectname)").text.split())
        missing = [s for s in dict.fromkeys(shas) if s not in present]
        filt = filter or self.config_get("remote.origin.partialclonefilter") or "blob:none"
        # As few batches as the command line allows: the server sends an object as a delta
        # against another only within one pack (measured: a radar's trees in batches of 4,000
        # took 2.0 MB, the same trees in one pack 1.1 MB).
        for at in range(0, len(missing), FETCH_BATCH):
            batch = missing[at:at + FETCH_BATCH]
            # As git's lazy fetch does: no negotiation (we hold the commits these objects are
            # in, so the server would think we have them), the filter, no tags.
            _transfer(self._runner, ["fetch", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
                                     f"--filter={filt}", "origin", *batch],
                      f"fetching {len(batch)} {'tree' if filt == 'tree:0' else 'file'}(s) of the set",
                      config=["fetch.negotiationAlgorithm=noop"], remote=self._origin())

    def sparse_checkout(self, paths: Iterable[str]) -> None:
        """Only these paths in the work tree (non-cone patterns, anchored at the top)."""
        self._run("sparse-checkout", "set", "--no-cone", "--stdin",
                  input="".join(f"/{p}\n" for p in sorted(set(paths))))



def _transfer(runner: GitRunner, args: Sequence[str], what: str, *, check: bool = True,
              config: Sequence[str] = (), remote: str = "", progress_flag: bool = True) -> Result:
    """clone, fetch or ls-remote, watched: git's own progress goes to our stderr as git draws
    it when progress is shown (its messages are kept for the error either way).

    A transfer that receives nothing for PATCHKIT_STALL_TIMEOUT seconds is stalled: git draws
    its progress at least once a second while bytes arrive, so silence on both of its outputs
    means the remote stopped sending (a dead connection, a hung server, a transport helper
    that never answers). It ends then, naming the remote (issue #17.15), rather than at the
    overall deadline (PATCHKIT_NETWORK_TIMEOUT), which stays as the last resort. Either way
    it raises TransferFailed, whatever check says: a remote that stalled is never "no such ref".
    """
    pre = [a for c in config for a in ("-c", c)]
    flag = ["--progress"] if progress_flag else []
    with progress.step(what):
        return _call_watched(runner, [*pre, args[0], *flag, *args[1:]], check, remote or "the remote", what)


# git's words (LC_ALL=C) when the remote cannot be reached at all: no network, no such host,
# a path or URL that is not (or no longer) a repository, a connection that broke. Any other
# failure of a fetch is git's failure, said as such (exit 3), never "offline".
_UNREACHABLE = ("could not resolve host", "could not resolve hostname", "could not resolve proxy",
                "failed to connect", "connection refused", "connection timed out", "network is unreachable",
                "no route to host", "operation timed out", "unable to access", "unable to connect",
                "could not read from remote repository", "does not appear to be a git repository",
                "connection reset", "connection closed", "the remote end hung up")


def unreachable(said: str) -> str:
    """git's first words when what it said (stderr) is that the remote could not be reached; ''."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    if any(marker in line.lower() for line in lines for marker in _UNREACHABLE):
        return lines[0].removeprefix("fatal: ")
    return ""


def _unreachable(res: Result) -> str:
    """'' when the transfer succeeded; git's first words when the remote could not be reached;
    GitError for any other failure."""
    if res.returncode == 0:
        return ""
    said = unreachable(res.stderr)
    if said:
        return said
    raise GitError(list(res.cmd), res.returncode, "", res.stderr)


class TransferFailed(NotFound):
    """A clone or fetch that stalled or outlived the deadline (exit 4: the URL is unreachable)."""


def network_timeout() -> float:
    """Seconds a clone or fetch may take (PATCHKIT_NETWORK_TIMEOUT, default 30 minutes):
    a URL that never answers (fd::17, a dead host) must end in an error, not a hang."""
    return _seconds("PATCHKIT_NETWORK_TIMEOUT", 1800.0)


def stall_timeout() -> float:
    """Seconds a clone or fetch may go without receiving anything (PATCHKIT_STALL_TIMEOUT,
    default 120: a server may think a while before its first progress line)."""
    return _seconds("PATCHKIT_STALL_TIMEOUT", 120.0)


def _seconds(name: str, default: float) -> float:
    try:
        return max(1.0, float(os.environ.get(name, default)))
    except ValueError:
        return default


def _call_watched(runner: GitRunner, args: Sequence[str], check: bool, remote: str, what: str) -> Result:
    cmd = ["git", *[str(a) for a in args]]
    proc = runner.start(args)
    show = progress.enabled()
    kept, out = bytearray(), bytearray()
    last = [time.monotonic()]

    def pump(stream, sink: bytearray, echo: bool) -> None:
        while chunk := stream.read1(65536):
            last[0] = time.monotonic()
            if echo:
                sys.stderr.buffer.write(chunk)
                sys.stderr.flush()
            sink += chunk
            if sink is kept:  # git's last words are enough for an error; stdout is the answer
                del sink[:-65536]

    readers = [threading.Thread(target=pump, args=(proc.stderr, kept, show), daemon=True),
               threading.Thread(target=pump, args=(proc.stdout, out, False), daemon=True)]
    for r in readers:
        r.start()
    started, deadline, stall = time.monotonic(), network_timeout(), stall_timeout()
    what = what.replace(f" from {remote}", "")  # the remote is named once
    failed = ""
    try:
        while True:
            try:
                proc.wait(timeout=0.05)  # back the moment git exits (a sleep made every fetch wait for its tick)
                break
            except TimeoutExpired:
                pass
            now = time.monotonic()
            if proc.poll() is None and now - last[0] >= stall:
                failed = (f"{remote} stalled: no data for {stall:g} s while {what} "
                          "(PATCHKIT_STALL_TIMEOUT)")
            elif proc.poll() is None and now - started >= deadline:
                failed = f"{remote}: {what} did not complete in {deadline:g} s (PATCHKIT_NETWORK_TIMEOUT)"
            if failed:
                break
    finally:
        if proc.returncode is None:  # stalled, too slow, or we were interrupted
            _kill_tree(proc.pid)
            proc.wait()
    for r in readers:
        r.join(timeout=5)  # a helper that escaped the kill must not hold us
    if failed:
        raise TransferFailed(failed)
    status = proc.returncode
    # Progress lines end in CR; keep git's messages for an error, its complaints first, as
    # git says them without --progress (no "Cloning into", no counters).
    lines = [part for line in kept.decode("utf-8", "replace").splitlines()
             for part in [line.rsplit("\r", 1)[-1].strip()] if part and "%" not in part]
    said = [ln for ln in lines if ln.startswith(("fatal:", "error:", "warning:", "hint:"))]
    err = "\n".join(said or [ln for ln in lines if not ln.startswith(("Cloning into", "remote: "))])
    result = Result(tuple(cmd), status, bytes(out), err)
    if check and status != 0:
        raise GitError(cmd, status, "", err, None if runner._working_dir is None else str(runner._working_dir))
    return result

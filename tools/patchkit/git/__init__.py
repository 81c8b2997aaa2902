"""The git facade: the one way this package talks to git, with GitPython as its object database.

`Repo` is its face (repo.py); its rooms, by concern:
- runner.py: the command runner (through proc.py) with our environment policy, GitError, the
  deadline; GitPython's repository, imported when a command first reads an object;
- refs.py: refs, the work tree, worktrees, history, finding a target's ref;
- objects.py: the persistent `cat-file --batch` reader, blobs, trees, commits, and the text
  operations git owns (trailers, merge-file, format-patch, archive); index.py: the private,
  slim Index trees are built in (only the paths asked about, laid over a base tree);
- transfer.py: fetching on demand, partial and sparse checkouts, git's progress, the network
  deadline; clone.py: the clones;
- history.py: a set's paths through history, slim commits to probe on (make radar);
- changes.py: a pull request's own commits, the files a commit changes, trailers, range-diff
  (make backport);
- baseline.py: raw git as a person types it, the command lines make bench measures ours against.

Every git command (apply --cached, format-patch, archive, interpret-trailers, merge-file,
sparse-checkout, fast-import, worktree ...) runs through the runner, so environment and errors
stay uniform; GitPython reads and writes objects (cat-file --batch, gitdb) and reads an index. Never
os.chdir, never a shell. No module outside this package imports GitPython or runs git
(tests/test_house.py). Callers import from `patchkit.git` only.
"""
from __future__ import annotations

from .changes import NotOnOrigin, TreeChange, squash_number
from .runner import POLICY, ZERO, GitError, Identity, Result, Sha, check_ref_format, identity_env, run_git
from .index import Index, diff_paths
from .objects import CommitInfo
from .refs import fetch_command, ref_candidates, resolve_target_ref, short_ref
from .transfer import LOCAL_UPLOAD_PACK, ObjectStats, network_timeout
from .repo import Repo, init
from .clone import clone, partial_clone
from . import baseline

__all__ = ["LOCAL_UPLOAD_PACK", "baseline", "POLICY", "ZERO", "CommitInfo", "TreeChange", "GitError", "Identity", "Index", "NotOnOrigin",
           "ObjectStats", "diff_paths",
           "fetch_command",
           "Repo", "Result", "Sha", "check_ref_format", "clone", "identity_env", "init", "network_timeout",
           "partial_clone", "ref_candidates", "resolve_target_ref", "run_git", "short_ref", "squash_number"]

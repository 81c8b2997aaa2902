"""make backport: carry an upstream pull request or commit as a fix of a target's stack.

- change.py: finds the change upstream (a PR's squash commit on the default branch when it is
  merged, else the PR's own commits; or one commit) and whether the target's ref has it,
  fetching commits alone and no history beyond the merge base;
- patches.py: the change as patch files with DEP-3 trailers, checked as untrusted input;
- metadata.py: the fix's entry in patchset.yaml, comments and key order kept;
- command.py: the command, all or nothing; the fix's expectations are measured by the
  delta's own machinery (delta/measure.py), as make delta grades each fix of a stack.
"""

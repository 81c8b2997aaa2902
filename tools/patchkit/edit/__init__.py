"""The verbs that change a set, and the one writer they share (DESIGN: the stack is edited
through verbs, never by hand): write.py stages the new set, loads it, refuses what make check
would refuse and swaps it in whole; patchfiles.py renders its patch files (an unchanged patch
keeps its bytes); metadata.py edits patchset.yaml as a round trip. make export (pr/export.py)
and make backport (backport/) write through them too.
"""

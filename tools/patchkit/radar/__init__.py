"""make radar: a patch set's status across a range of upstream commits (issue #18)."""

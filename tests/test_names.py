"""names.ref_format_ok against its judge, the real `git check-ref-format`: the model checks a set's
branch and ref without git, and must accept exactly what git accepts (plus refusing a leading '-')."""
from __future__ import annotations

import itertools

from patchkit.git import check_ref_format
from patchkit.names import ref_format_ok

# Pieces that break one rule each, and pieces that are fine; names are made of 1 to 3 of them.
PIECES = ["refs", "heads", "a", "v1.3.0rc25", "overlay", "é", "a.b", "a.", ".a", "a.lock", "a.lock.b", "lock",
          "@", "a@", "@{", "a@{u}", "a@b", "{", "..", "a..b", "", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[0]",
          "a\\b", "a\x7f", "a\tb", "-a", "a-", "a_b", "a}", "a{"]


def names() -> list[str]:
    out = list(PIECES) + ["/" + p for p in PIECES] + [p + "/" for p in PIECES]
    out += [f"refs/heads/{p}" for p in PIECES] + [f"refs/{p}/x" for p in PIECES]
    out += ["/".join(c) for c in itertools.product(["refs", "a", ".a", "a.lock", "@", "x."], repeat=3)]
    out += ["refs//heads", "refs/heads/", "refs/heads/a/", "@", "refs/@", "-refs/heads/a", "refs/heads/" + "x" * 990]
    return sorted(set(out))


def test_the_model_accepts_exactly_the_ref_names_git_accepts():
    cases = names()
    disagree = [(n, ref_format_ok(n)) for n in cases if ref_format_ok(n) != check_ref_format(n)]
    assert disagree == []
    assert sum(map(ref_format_ok, cases)) > 20 and sum(not ref_format_ok(n) for n in cases) > 100  # both sides tried


def test_a_name_git_would_take_as_an_option_is_refused():
    assert not ref_format_ok("-b") and not ref_format_ok("--orphan=x")

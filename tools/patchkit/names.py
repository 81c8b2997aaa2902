"""Ref names as git judges them, in plain Python, so that the model can check a set's branch and
ref without running git.

The rules are git's own (git-check-ref-format(1), refs.c check_refname_format, without
--allow-onelevel, --refspec-pattern or --normalize); tests/test_names.py holds this module to
the real `git check-ref-format` over names that break each rule. Stricter than git in one way,
as the facade's check was: a name that could be read as an option (a leading '-'), or an
absurdly long one, is refused.
"""
from __future__ import annotations

# Never in a ref name: ASCII control characters and DEL, space, ~ ^ : ? * [ and backslash.
_FORBIDDEN = frozenset(chr(c) for c in range(32)) | frozenset(" ~^:?*[\\\x7f")


def ref_format_ok(ref: str) -> bool:
    """Whether git accepts ref as a full ref name (refs/heads/x), and it cannot be read as an option."""
    if not ref or ref.startswith("-") or len(ref) > 1000:
        return False
    if any(c in _FORBIDDEN for c in ref) or ".." in ref or "@{" in ref or ref == "@" or ref.endswith("."):
        return False
    parts = ref.split("/")
    return len(parts) >= 2 and all(p and not p.startswith(".") and not p.endswith(".lock") for p in parts)

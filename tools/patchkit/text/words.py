"""Words every command's text uses: a value as one shell word, a ref as people name it."""
from __future__ import annotations

import os
import shlex

_C_ESCAPES = {"\n": "n", "\t": "t", "\r": "r", "\a": "a", "\b": "b", "\f": "f", "\v": "v"}


def shell_word(value: str) -> str:
    """value as one shell word that reads back byte for byte, on one line.

    shlex.quote where that is printable; otherwise ANSI-C quoting ($'h\\nb', bash, zsh,
    ksh and POSIX sh 2024), which spells control characters and undecodable bytes (kept by
    Python as surrogate escapes) as escapes: a newline printed raw would break the one-line
    error, and the hint would name another path (issue #17 item 13).
    """
    if value.isprintable() and not any("\udc80" <= c <= "\udcff" for c in value):
        return shlex.quote(value)
    out = []
    for byte in os.fsencode(value):
        c = chr(byte)
        if c in "\\'":
            out.append("\\" + c)
        elif 32 <= byte < 127:
            out.append(c)
        elif c in _C_ESCAPES:
            out.append("\\" + _C_ESCAPES[c])
        else:
            out.append(f"\\x{byte:02x}")
    return "$'" + "".join(out) + "'"


def short_ref(ref: str) -> str:
    """refs/tags/v1.3.0rc25 -> v1.3.0rc25, refs/remotes/origin/main -> origin/main."""
    for prefix in ("refs/tags/", "refs/remotes/", "refs/heads/"):
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref

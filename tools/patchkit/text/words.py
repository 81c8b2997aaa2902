"""Words every command's text uses: a value as one shell word, a ref as people name it, long
lines folded (prose after its clauses, a command between its shell words); and untrusted text
(a pull request's title, body, author or files) as a terminal may show it, and what no value
we keep may hold (#31 item 9)."""
from __future__ import annotations

import os
import re
import shlex
import unicodedata

# What no value we keep may hold, wherever it comes from (a PR's message, a patch's headers, a
# set's YAML): C0 controls and DEL; C1 controls (U+0080-U+009F: U+009B is the 8-bit CSI, which
# a terminal reads as the start of an escape sequence); the bidirectional overrides and
# isolates (U+202A-U+202E, U+2066-U+2069: text that reads other than it is, CVE-2021-42574).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What a terminal is never sent as itself: controls, format characters (bidi, zero-width, soft
# hyphen), line and paragraph separators, and the undecodable bytes Python keeps as surrogates.
_UNSHOWN = ("Cc", "Cf", "Zl", "Zp", "Cs")
_SUSPECT = re.compile("[^\x20-\x7e\n\t]")  # the characters worth a look up


def control(text: str, allow: str = "") -> str | None:
    """The first character of text that no value we keep may hold, as 'U+009B'; None when
    there is none. allow: those the caller keeps (a message's newlines and tabs)."""
    found = next((m.group() for m in _CONTROL.finditer(text) if m.group() not in allow), None)
    return None if found is None else f"U+{ord(found):04X}"


def visible(text: str) -> str:
    """text as a terminal may show it: newlines and tabs stay, and every character a terminal
    would act on or not show (controls, C1 among them; bidi overrides and isolates; zero-width
    and other format characters; line separators; undecodable bytes) becomes a visible escape,
    \\x9b, \\u202e, as Python writes them. Everything patchkit prints goes through it (cli)."""
    if text.isascii() and text.isprintable():
        return text
    return _SUSPECT.sub(_escape, text)


def _escape(m: re.Match) -> str:
    c = m.group()
    if unicodedata.category(c) not in _UNSHOWN:
        return c
    if "\udc80" <= c <= "\udcff":  # a byte that was not UTF-8: the byte
        return f"\\x{ord(c) - 0xdc00:02x}"
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"

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


def shown_ref(ref: str) -> str:
    """A ref as a report shows it, the remote's name kept: refs/tags/v1.3.0rc25 -> v1.3.0rc25,
    refs/remotes/origin/main -> origin/main (git.short_ref gives the name a person types: main)."""
    for prefix in ("refs/tags/", "refs/remotes/", "refs/heads/"):
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref



def shell_words(line: str) -> list[str]:
    """A shell command's words as written, quotes kept: a space inside '...', $'...' or "..."
    (or after a backslash) does not split a word."""
    words, word, quote, i = [], "", "", 0
    while i < len(line):
        c = line[i]
        if c == "\\" and quote != "'":  # the escaped character belongs to the word
            word, i = word + line[i:i + 2], i + 2
            continue
        if not quote and c == " ":
            if word:
                words.append(word)
            word, i = "", i + 1
            continue
        if not quote and c == "$" and line[i + 1:i + 2] == "'":
            quote, word, i = "$'", word + "$'", i + 2
            continue
        if not quote and c in "'\"":
            quote = c
        elif quote and c == quote[-1]:
            quote = ""
        word, i = word + c, i + 1
    return words + ([word] if word else [])


def fold_command(line: str, width: int, first: str = "$ ", rest: str = "    ") -> list[str]:
    """A shell command as lines of at most width characters where its words allow: the first after
    `first`, the others after `rest`, each but the last ending in ` \\`, broken only between
    shell words (a quoted value stays whole), so that copied whole it runs as printed."""
    lines: list[str] = []
    for word in shell_words(line):
        head = first if len(lines) == 1 else rest  # what the line being filled starts with
        if lines and len(head) + len(lines[-1]) + len(" " + word + " \\") <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return [(rest if i else first) + text + (" \\" if i < len(lines) - 1 else "") for i, text in enumerate(lines)]


def fold(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """Prose as lines of at most width characters where its words allow: the first after `first`,
    the others after `rest`, broken after a clause ("; "), else after a part of one (", "), else
    between words."""
    room = width - max(len(first), len(rest))
    pieces = [w for clause in re.split(r"(?<=; )", text)
              for part in (re.split(r"(?<=, )", clause) if len(clause) > room else [clause])
              for w in (re.split(r"(?<= )", part) if len(part) > room else [part])]
    lines = [""]
    for piece in pieces:
        if lines[-1] and len(lines[-1]) + len(piece.rstrip()) > room:
            lines.append("")
        lines[-1] += piece
    return [(rest if i else first) + text.rstrip() for i, text in enumerate(lines)]

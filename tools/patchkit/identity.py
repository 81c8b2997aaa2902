"""Who a commit or a sign-off names: exactly one line 'Name <email>', checked wherever it comes from.

A newline in a name (from --signoff, GIT_COMMITTER_NAME or git config) would otherwise
become a second trailer in every commit message: a forged 'Signed-off-by: Evil <e@e.com>'.
"""
from __future__ import annotations

import re

from .errors import BadInput
from .text.words import control

_IDENT = re.compile(r"^\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>\s]+@[^<>\s]+)>\s*$")


def _clean(text: str) -> bool:
    return control(text) is None


def check(name: str, email: str, source: str, setting: str | None = None) -> tuple[str, str]:
    """(name, email) if they form one honest 'Name <email>'; BadInput naming source (or the setting) otherwise."""
    if (not name.strip() or not _clean(name + email) or any(c in name for c in "<>")
            or not re.fullmatch(r"[^<>\s]+@[^<>\s]+", email) or len(name) + len(email) > 300):
        raise BadInput(f"{_said(source)}must be one line 'Name <email>' without control characters, "
                       f"not {f'{name} <{email}>'[:100]!r}", setting=setting)
    return name.strip(), email


def _said(source: str) -> str:
    return f"{source} " if source else ""


def parse(text: str, source: str, setting: str | None = None) -> tuple[str, str]:
    """'Name <email>' -> (name, email); BadInput naming source (or the setting: the CLI names it) otherwise."""
    m = _IDENT.match(text or "") if _clean(text or "") else None
    if not m:
        raise BadInput(f"{_said(source)}must look like 'Name <email>' (one line), not {(text or '')[:100]!r}",
                       setting=setting)
    return check(m["name"], m["email"], source, setting)

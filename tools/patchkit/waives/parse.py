"""Parse tests/integration/test_lists/waives.txt and the test-db yml files."""
from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from ..errors import BadInput

KINDS = ("SKIP", "XFAIL", "UNSTABLE", "TIMEOUT")
_ENTRY = re.compile(
    r"^(?P<ids>.+?)(?:\s+(?P<opt>-[mk])\s+\"(?P<expr>[^\"]*)\")?\s+(?P<kind>" + "|".join(KINDS) + r")\s+(?P<rest>.*)$")
_PREFIX = re.compile(r"^full:(?P<hw>[^/]+)/(?P<id>.+)$")


@dataclass(frozen=True)
class WaiveId:
    """One test id on a waiver line, with its hardware prefix if any."""

    raw: str
    test: str  # without the full:<hw>/ prefix
    hardware: str | None


@dataclass(frozen=True)
class Entry:
    lineno: int
    text: str  # the line exactly as in the file, without its newline
    ids: tuple[WaiveId, ...] = ()
    option: str | None = None  # "-m" or "-k"
    expr: str | None = None
    kind: str | None = None
    reason: str | None = None

    @property
    def is_waiver(self) -> bool:
        return self.kind is not None

    @property
    def selective(self) -> bool:
        """A -m/-k entry waives only part of what its ids name."""
        return self.option is not None


def parse_waives(text: str, name: str = "waives.txt") -> list[Entry]:
    """Every line of waives.txt as an Entry (comments and blanks too, for a byte-exact round trip)."""
    entries = []
    for n, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            entries.append(Entry(n, line))
            continue
        m = _ENTRY.match(stripped)
        if not m:
            raise BadInput(f"{name}:{n}: not a waiver line (want '<test id> [-m|-k \"expr\"] SKIP|XFAIL|UNSTABLE|TIMEOUT (reason)')")
        rest = m.group("rest").strip()
        if not (rest.startswith("(") and rest.endswith(")")):
            raise BadInput(f"{name}:{n}: the reason must be in parentheses")
        ids = []
        for raw in m.group("ids").split():
            pm = _PREFIX.match(raw)
            ids.append(WaiveId(raw, pm.group("id") if pm else raw, pm.group("hw") if pm else None))
        entries.append(Entry(n, line, tuple(ids), m.group("opt"), m.group("expr"), m.group("kind"), rest[1:-1]))
    return entries


def render(entries: list[Entry]) -> str:
    return "\n".join(e.text for e in entries)


@dataclass(frozen=True)
class Stage:
    name: str
    file: str
    condition: dict
    items: tuple[str, ...]

    @property
    def hardware(self) -> tuple[str, ...]:
        """The GPU names or sm versions in the stage's condition (empty: any/none)."""
        terms = self.condition.get("wildcards", {}) if isinstance(self.condition, dict) else {}
        gpu = terms.get("gpu", ()) if isinstance(terms, dict) else ()
        return tuple(str(g).strip("*").lower() for g in (gpu if isinstance(gpu, list) else [gpu]) if g)


def parse_test_db(text: str, file: str) -> list[Stage]:
    """The stages of one test-db yml: a condition and a list of test items each."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        raise BadInput(f"{file}: not valid YAML") from None
    if not isinstance(data, dict):
        raise BadInput(f"{file}: must be a YAML mapping")
    stages = []
    for key, blocks in data.items():
        if key == "version":
            continue
        if not isinstance(blocks, list):
            raise BadInput(f"{file}: stage {key!r} must be a list of blocks")
        for block in blocks:
            if not isinstance(block, dict) or not isinstance(block.get("tests", []), list):
                raise BadInput(f"{file}: stage {key!r}: each block needs a 'tests' list")
            items = tuple(str(t).split(" TIMEOUT")[0].strip() for t in block.get("tests") or ())
            stages.append(Stage(key, file, block.get("condition") or {}, items))
    return stages

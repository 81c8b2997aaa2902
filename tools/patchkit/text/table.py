"""Results as short aligned tables for people, or as JSON for machines."""
from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def table(rows: Sequence[Sequence[Any]], header: Sequence[str] | None = None) -> str:
    cells = [[str(c) for c in r] for r in ([header] if header else []) + list(rows)]
    if not cells:
        return ""
    widths = [max(len(r[i]) for r in cells if i < len(r)) for i in range(max(len(r) for r in cells))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)


def to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if f.name not in ("diff", "files", "hunks")}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (datetime.date, datetime.datetime)):
        return obj.isoformat()
    return obj


def as_json(obj: Any) -> str:
    return json.dumps(to_jsonable(obj), indent=2, sort_keys=True)



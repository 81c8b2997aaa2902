"""The miniature's `history` variant: about sixty commits on main after the tag, for make radar.

Generated, not copied: each commit is a change laid over the tree as it then is. Among
commits that touch unrelated files (and a few that touch the set's paths without changing
anything), three change the set's status, in this order:
- OFFSET: a method added above the patched one (the hunk applies 6 lines lower);
- REWORD: a context line of the fix's hunk reworded (a clean apply fails, 3-way merges it);
- FIX: upstream's own form of the fix, `... (#20918)`: the `fixed-upstream` variant's change
  over main, merged onto the file as it is by then (upstream's side wins where they touch).
"""
from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from pathlib import Path

UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"
DUAL_POOL = "tests/unittest/_torch/executor/test_dual_pool_kv_cache.py"
WAIVES = "tests/integration/test_lists/waives.txt"
TEST_DB = "tests/integration/test_lists/test-db/l0_a10.yml"
OFFSET_SUBJECT = "[None][feat] Look up the cross-attention window of encoder-decoder models (#20511)"
REWORD_SUBJECT = "[None][chore] Guard the head size division against a zero head count (#20650)"
FIX_SUBJECT = "[#19514][fix] Size the cross KV pool from the encoder's declared length (#20918)"
REWORD = ("            head_dim = encoder_hidden_size // encoder_num_heads\n",
          "            head_dim = encoder_hidden_size // max(encoder_num_heads, 1)\n")
OFFSET_METHOD = [
    "    def _get_cross_attention_window(self) -> Optional[int]:\n",
    '        """The attention window the model declares for cross attention, if any (miniature)."""\n',
    "        config = self._model_engine.model.model_config.pretrained_config\n",
    '        return self._get_config_int_attr(config, ("cross_attention_window",))\n',
    "\n",
    "\n",
]
_AREAS = ("speculative", "attention", "sampler", "scheduler", "lora")


def commits(expand: Callable[[str, str], str], tree: Path) -> Iterator[tuple[str, str]]:
    """Lay each commit's change over tree, then yield (message, date) for it to be committed.
    expand(layer, path): a scaffold file of the miniature as built (markers expanded); layer is a
    directory of the scaffolding, or a diff over it (the file as main's scaffolding plus the diff)."""
    plan = ([("unrelated", i) for i in range(12)] + [("offset", 0)]
            + [("unrelated", i) for i in range(12, 18)] + [("waives", 0), ("unrelated", 18), ("tail", 0)]
            + [("unrelated", i) for i in range(19, 24)] + [("reword", 0)]
            + [("unrelated", i) for i in range(24, 30)] + [("test-db", 0)] + [("unrelated", i) for i in range(30, 34)]
            + [("fix", 0)] + [("unrelated", i) for i in range(34, 40)] + [("tail", 1)]
            + [("unrelated", i) for i in range(40, 52)])
    for n, (kind, i) in enumerate(plan):
        yield _lay(kind, i, expand, tree), f"2026-12-{1 + n // 8:02d}T{10 + n % 8:02d}:00:00+00:00"


def _lay(kind: str, i: int, expand: Callable[[str, str], str], tree: Path) -> str:
    if kind == "unrelated":
        area = _AREAS[i % len(_AREAS)]
        path = tree / f"tensorrt_llm/_torch/{area}/budget_{i // len(_AREAS)}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        old = path.read_text() if path.exists() else f'"""Budgets of the {area} (miniature, our own code)."""\n'
        path.write_text(old + f"\n\ndef budget_{i}(total: int) -> int:\n    return max(total - {i}, 0)\n")
        return f"[None][feat] Add the {area} budget helper {i} (#{20100 + 7 * i})"
    if kind == "offset":
        _edit(tree / UTIL, lambda lines: _insert_before(lines, "    def _get_cross_kv_cache_layout(\n", OFFSET_METHOD))
        return OFFSET_SUBJECT
    if kind == "reword":
        _edit(tree / UTIL, lambda lines: [REWORD[1] if ln == REWORD[0] else ln for ln in lines])
        return REWORD_SUBJECT
    if kind == "tail":  # the set's file, far below the hunk: nothing changes for the set
        _edit(tree / UTIL, lambda lines: lines + ["\n", "\n", f"def _tail_helper_{i}() -> int:\n", f"    return {i}\n"])
        return f"[None][chore] Add a module helper {i} at the end of _util.py (#{20300 + i})"
    if kind == "waives":
        _edit(tree / WAIVES, lambda lines: lines + ["unittest/_torch/sampler/test_beam.py SKIP (https://nvbugs/6900001)\n"])
        return "[None][infra] Waive a flaky sampler test (#20400)"
    if kind == "test-db":
        _edit(tree / TEST_DB, lambda lines: lines + ["  - unittest/_torch/sampler\n"])
        return "[None][infra] Run the sampler tests on A10 (#20700)"
    if kind == "fix":
        for path in (UTIL, DUAL_POOL):
            main, fixed = expand("main", path), expand("variants/fixed-upstream.diff", path)
            _edit(tree / path, lambda lines: theirs_wins(main.splitlines(True), fixed.splitlines(True), lines))
        return FIX_SUBJECT
    raise ValueError(kind)


def _edit(path: Path, change: Callable[[list[str]], list[str]]) -> None:
    lines = path.read_text().splitlines(keepends=True)
    new = change(lines)
    if new == lines:
        raise ValueError(f"miniature history: the change to {path.name} changed nothing")
    path.write_text("".join(new))


def _insert_before(lines: list[str], anchor: str, new: list[str]) -> list[str]:
    at = lines.index(anchor)
    return lines[:at] + new + lines[at:]


def theirs_wins(base: list[str], theirs: list[str], ours: list[str]) -> list[str]:
    """The change base -> theirs laid over ours: each changed region of base is found in ours
    by the unchanged lines around it, and replaced by theirs' text (their side wins)."""
    to_ours = {}
    for a, b, size in difflib.SequenceMatcher(None, base, ours, autojunk=False).get_matching_blocks():
        to_ours.update({a + k: b + k for k in range(size)})
    out, pos = [], 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, base, theirs, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        start = to_ours[i1 - 1] + 1 if i1 > 0 else 0
        end = to_ours[i2] if i2 < len(base) else len(ours)
        out += ours[pos:start] + theirs[j1:j2]
        pos = end
    return out + ours[pos:]

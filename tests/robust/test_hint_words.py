"""#17.13: every value a hint prints reads back, through a real shell, as the value itself."""
from __future__ import annotations

import os
import subprocess

from patchkit.text.words import shell_word


def test_every_byte_a_path_can_hold_survives_the_printed_word():
    """A newline came back as a space (another directory); here every byte 1..255 goes through bash."""
    values = [os.fsdecode(bytes([b])) + "x" for b in range(1, 256)] + ["-d", "h\nb", "it's", "a b", "é", ""]
    words = [shell_word(v) for v in values]
    assert all("\n" not in w and w.isprintable() for w in words)
    out = subprocess.run(["bash", "-c", "printf '%s\\0' " + " ".join(words)], capture_output=True, check=True).stdout
    assert out.split(b"\0")[:-1] == [os.fsencode(v) for v in values]

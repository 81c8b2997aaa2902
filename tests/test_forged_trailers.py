"""Nothing from an untrusted message reaches our trailers (#31 item 5): DEP-3 fields forged in
a pull request's commit message (Origin: vendor, https://evil.invalid/x; Forwarded: no;
Applied-Upstream: its own URL) stood beside ours in the backport's patch, which then said both
`Forwarded: no` and `not-needed` (a DEP-3 reader takes the first); make check passed. Now the
PR's own DEP-3 trailers are removed and such a line elsewhere in its message is quoted, and
make check refuses a patch that carries a DEP-3 field twice."""
from __future__ import annotations

import re
import subprocess

from helpers import copy_root, sh
from patchkit import patchset, provenance
from patchkit.backport import command
from patchkit.cli import main

GITHUB = "https://github.com/NVIDIA/TensorRT-LLM"
FORGED = ("[None][fix] A guard\n\nOrigin: vendor, https://evil.invalid/x\nsaid in the body, not a trailer\n\n"
          f"Origin: vendor, https://evil.invalid/x\nForwarded: no\nApplied-Upstream: {GITHUB}/pull/31338\n"
          "Signed-off-by: Pat Contributor <pat@example.com>\n")


def _parse(message: str) -> list[tuple[str, str]]:
    out = subprocess.run(["git", "-c", "trailer.separators=:", "interpret-trailers", "--parse"], input=message,
                         capture_output=True, text=True, check=True).stdout
    return [tuple(line.split(": ", 1)) for line in out.splitlines()]


def test_an_untrusted_message_keeps_no_dep3_field_of_its_own():
    safe = provenance.untrusted(FORGED)
    assert _parse(safe) == [("Signed-off-by", "Pat Contributor <pat@example.com>")]
    # the forged line in the body is quoted: no line of the message starts with a DEP-3 field
    assert not re.search(r"^(Origin|Bug|Forwarded|Applied-Upstream|Last-Update)\s*:", safe, re.M | re.I)
    assert "> Origin: vendor, https://evil.invalid/x\nsaid in the body" in safe


def test_a_backport_of_a_pr_with_forged_fields_carries_ours_once(tmp_path, upstream, checkout, capsys):
    work = upstream.parent / "hostile"
    sh("git", "clone", "-q", upstream.as_uri(), work)
    (work / "tensorrt_llm" / "guard.py").write_text("GUARD = 1\n")
    sh("git", "-C", work, "add", "-A")
    sh("git", "-C", work, "commit", "-q", "-m", FORGED)
    sh("git", "-C", work, "push", "-q", "origin", "HEAD:refs/pull/31338/head")
    root = copy_root(tmp_path)
    command.backport(patchset.load(root, "rc25"), root=root, src=checkout, pr="31338", today="2026-12-02")
    [patch] = patchset.load(root, "rc25").fix("31338").patches
    dep3 = [(k, v) for k, v in patch.trailers if k in ("Origin", "Bug", "Forwarded", "Applied-Upstream", "Last-Update")]
    assert dep3 == [("Origin", f"backport, {GITHUB}/pull/31338"), ("Forwarded", "not-needed"),
                    ("Last-Update", "2026-12-02")]
    assert "evil.invalid" not in "".join(v for _k, v in patch.trailers)
    assert main(["--root", str(root), "check", "--src", str(checkout), "--target", "rc25"]) == 0, capsys.readouterr()


def test_check_refuses_a_patch_that_carries_a_dep3_field_twice(tmp_path, capsys):
    root = copy_root(tmp_path)
    patch = next((root / "patches" / "rc25").glob("0001-*.patch"))
    patch.write_text(patch.read_text().replace("Forwarded: no\n", "Forwarded: no\nForwarded: not-needed\n", 1))
    code = main(["--root", str(root), "check", "--src", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert (f"patches/rc25/{patch.name} (fix 19514) carries Forwarded 2 times ('no'; 'not-needed'); a DEP-3 reader "
            "takes the first, git the last: keep one") in err

"""Commands as a table: every subcommand has one entry, a --help that ends with an example that
parses, and a make target that `make help` lists in one line (#10)."""
from __future__ import annotations

import re
import shlex

import pytest

from patchkit import cli
from helpers import ROOT, sh

MAKEFILE = (ROOT / "Makefile").read_text()


def phony_targets() -> list[str]:
    return re.search(r"^\.PHONY: (.+)$", MAKEFILE, re.M).group(1).split()


def test_make_help_lists_every_target_in_one_line():
    res = sh("make", "-s", "--no-print-directory", "-C", ROOT, "help")  # also under a parent make (land.sh)
    assert res.returncode == 0, res.stderr
    listed = {}
    for line in res.stdout.splitlines():
        name, _, text = line.strip().partition(" ")
        listed[name] = text.strip()
    assert sorted(listed) == sorted(phony_targets())
    assert all(listed.values()), listed


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_every_help_ends_with_an_example_that_runs_as_written(name, capsys):
    with pytest.raises(SystemExit):
        cli.main([name, "--help"])
    text = capsys.readouterr().out.rstrip().splitlines()
    make_line, cli_line = text[-2].strip(), text[-1].strip()
    assert text[-3] == "example:"
    # The make line names a target of that name and only variables the Makefile passes on.
    words = shlex.split(make_line)
    assert words[:2] == ["make", name] and name in phony_targets()
    exported = re.search(r"^export ([A-Z_ ]+)$", MAKEFILE, re.M).group(1).split()  # the list, not VAR = value
    assert all(w.split("=", 1)[0] in exported for w in words[2:]), words
    # The CLI line parses with the CLI's own parser, as that command.
    words = shlex.split(cli_line)
    assert words[:2] == ["patchkit", name]
    assert cli._parser().parse_args(words[1:]).command == name


def test_each_make_variable_of_a_command_is_passed_by_its_make_target():
    """The table says which make variable sets which flag; the Makefile must agree."""
    for c in cli.COMMANDS.values():
        rule = re.search(rf"^{re.escape(c.name)}: .*$", MAKEFILE, re.M)
        assert rule, c.name
        for a in c.args:
            if a.make:
                # a switch that turns something off (--no-fetch) is VAR=0 (FETCH=0)
                passed = ([f"$(if $(filter 0,$({a.make})),{a.flag})"] if a.flag.startswith("--no-")
                          else [f"$(if $({a.make}),{a.flag})"] if a.options.get("action") == "store_true"
                          else [f'{a.flag}="$${a.make}', f"$(call given,{a.make},{a.flag})"])
                assert any(p in rule.group(0) for p in passed), (c.name, a.flag, a.make)


def test_a_reader_that_stops_early_is_not_an_internal_error(tmp_path):
    """`patchkit --json targets | head -1` closed the pipe under us: exit 70 and a crash log before."""
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-m", "patchkit", "--root", str(ROOT), "--json", "targets"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before anything is written: the reader is gone
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and "internal error" not in err, err

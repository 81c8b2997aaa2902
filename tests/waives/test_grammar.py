"""waives.txt grammar: what upstream's parse_test_list_lines accepts, we accept; what it refuses, we refuse.

Regression for issue #9: the real waives.txt has lines with no reason and with a comment after
the marker, which our parser refused ('the reason must be in parentheses'), stopping apply.
"""
from __future__ import annotations

import pytest

from patchkit.errors import BadInput
from patchkit.waives.parse import parse_line, parse_test_db, parse_waives, split_name
from helpers import render_waives as render
from helpers import ROOT

MINI = ROOT / "tests/fixtures/miniature/base/tests/integration/test_lists"


def one(line: str):
    return parse_line(line, 1, "waives.txt")


# line -> (name, kind, reason, timeout, hardware, test, paths, selector)
ACCEPTED = {
    "a.py::t SKIP (https://nvbugs/1)":
        ("a.py::t", "SKIP", "https://nvbugs/1", None, None, "a.py::t", ("a.py::t",), None),
    "perf/test_perf.py::test_perf[t5-bench-float16-input_output_len:128,20] SKIP":  # no reason
        ("perf/test_perf.py::test_perf[t5-bench-float16-input_output_len:128,20]", "SKIP", None, None, None,
         "perf/test_perf.py::test_perf[t5-bench-float16-input_output_len:128,20]",
         ("perf/test_perf.py::test_perf[t5-bench-float16-input_output_len:128,20]",), None),
    "a.py SKIP # (https://example.invalid/thread)":  # a comment after the marker, no reason
        ("a.py", "SKIP", None, None, None, "a.py", ("a.py",), None),
    "a.py XFAIL (r) # owner: someone":
        ("a.py", "XFAIL", "r", None, None, "a.py", ("a.py",), None),
    "a.py::t[x#y] SKIP (r)":  # '#' starts a comment even inside an id: what is left is a bare name
        ("a.py::t[x", None, None, None, None, "a.py::t[x", ("a.py::t[x",), None),
    "full:sm100/unittest/x.py UNSTABLE (r)":
        ("full:sm100/unittest/x.py", "UNSTABLE", "r", None, "sm100", "unittest/x.py", ("unittest/x.py",), None),
    'full:sm100/unittest/trt/model/test_gpt.py -k "partition0" SKIP (Disable for Blackwell)':
        ('full:sm100/unittest/trt/model/test_gpt.py -k "partition0"', "SKIP", "Disable for Blackwell", None, "sm100",
         'unittest/trt/model/test_gpt.py -k "partition0"', ("unittest/trt/model/test_gpt.py",), '-k "partition0"'),
    'unittest/llmapi/test_llm_models.py -m "not (part0 or part1)" SKIP (OOM)':
        ('unittest/llmapi/test_llm_models.py -m "not (part0 or part1)"', "SKIP", "OOM", None, None,
         'unittest/llmapi/test_llm_models.py -m "not (part0 or part1)"', ("unittest/llmapi/test_llm_models.py",),
         '-m "not (part0 or part1)"'),
    "full:sm100/unittest/a.py unittest/b/test_c.py unittest/d SKIP (r)":  # several ids: one CI item
        ("full:sm100/unittest/a.py unittest/b/test_c.py unittest/d", "SKIP", "r", None, "sm100",
         "unittest/a.py unittest/b/test_c.py unittest/d", ("unittest/a.py", "unittest/b/test_c.py", "unittest/d"), None),
    "unittest/_torch/executor SKIP (https://nvbugs/6800103)":  # a directory
        ("unittest/_torch/executor", "SKIP", "https://nvbugs/6800103", None, None, "unittest/_torch/executor",
         ("unittest/_torch/executor",), None),
    "full:A10/unittest/kv_cache_manager_v2_tests/ SKIP (r)":
        ("full:A10/unittest/kv_cache_manager_v2_tests/", "SKIP", "r", None, "A10", "unittest/kv_cache_manager_v2_tests/",
         ("unittest/kv_cache_manager_v2_tests/",), None),
    "perf/test_perf.py::test_perf[big] TIMEOUT (120)":
        ("perf/test_perf.py::test_perf[big]", "TIMEOUT", None, 120, None, "perf/test_perf.py::test_perf[big]",
         ("perf/test_perf.py::test_perf[big]",), None),
    "unittest/executor/test_base_worker.py ISOLATION":
        ("unittest/executor/test_base_worker.py", "ISOLATION", None, None, None, "unittest/executor/test_base_worker.py",
         ("unittest/executor/test_base_worker.py",), None),
    "unittest/a.py":  # a bare name: accepted, waives nothing
        ("unittest/a.py", None, None, None, None, "unittest/a.py", ("unittest/a.py",), None),
    "a.py SKIP (a (b) c)":  # upstream keeps the text up to the first ')'
        ("a.py", "SKIP", "a (b", None, None, "a.py", ("a.py",), None),
    "a.py SKIP (r) trailing words":
        ("a.py", "SKIP", "r", None, None, "a.py", ("a.py",), None),
    "   a.py    SKIP (r)   ":
        ("a.py", "SKIP", "r", None, None, "a.py", ("a.py",), None),
    "SKIP (r)":  # no space before the marker: upstream reads the whole line as a test name
        ("SKIP (r)", None, None, None, None, "SKIP (r)", ("SKIP", "(r)"), None),
    "a.py::t[p q] SKIP (r)":  # a space inside [params] does not split the id
        ("a.py::t[p q]", "SKIP", "r", None, None, "a.py::t[p q]", ("a.py::t[p q]",), None),
    "a.py TIMEOUT (05) more":
        ("a.py", "TIMEOUT", None, 5, None, "a.py", ("a.py",), None),
}


@pytest.mark.parametrize("line", list(ACCEPTED))
def test_upstream_accepts_it_and_so_do_we(line):
    e = one(line)
    assert (e.name, e.kind, e.reason, e.timeout, e.hardware, e.test, e.paths, e.selector) == ACCEPTED[line]
    assert e.text == line and render([e]) == line + "\n"


@pytest.mark.parametrize("line", ["", "   ", "# a comment", "  # indented comment", "## mako-style comment"])
def test_blank_and_comment_lines_carry_nothing(line):
    e = one(line)
    assert (e.name, e.kind, e.is_waiver) == (None, None, False)


def test_only_skip_xfail_unstable_timeout_waive():
    assert [one(f"a.py {m}{' (1)' if m == 'TIMEOUT' else ''}").is_waiver
            for m in ("SKIP", "XFAIL", "UNSTABLE", "TIMEOUT", "ISOLATION")] == [True, True, True, True, False]
    assert not one("a.py").is_waiver


REFUSED = {
    "a.py SKIP https://nvbugs/1":
        'waives.txt:3: Invalid syntax for reason: " https://nvbugs/1". Did you forget to add parentheses?',
    "a.py SKIP ()":
        'waives.txt:3: Invalid syntax for reason: " ()". Did you forget to add parentheses?',
    "a.py SKIPPED (why)":  # ' SKIP' matches inside SKIPPED, as upstream's substring test does
        'waives.txt:3: Invalid syntax for reason: "PED (why)". Did you forget to add parentheses?',
    "a.py SKIP (see the XFAIL list)":  # XFAIL is tried before SKIP, wherever it is
        'waives.txt:3: Invalid syntax for reason: " list)". Did you forget to add parentheses?',
    "a.py TIMEOUT (abc)":
        'waives.txt:3: Invalid syntax for TIMEOUT value: " (abc)". Expected a numeric value in parentheses.',
    "a.py TIMEOUT":
        'waives.txt:3: Invalid syntax for TIMEOUT value: "". Expected a numeric value in parentheses.',
    "a.py TIMEOUT 90":
        'waives.txt:3: Invalid syntax for TIMEOUT value: " 90". Expected a numeric value in parentheses.',
    "a.py TIMEOUT ( 90)":
        'waives.txt:3: Invalid syntax for TIMEOUT value: " ( 90)". Expected a numeric value in parentheses.',
    "% if gpu == 'a10':": "waives.txt:3: Mako template syntax",
    "a.py SKIP (${bug})": "waives.txt:3: Mako template syntax",
    "<%include file='x'/>": "waives.txt:3: Mako template syntax",
    "%% a.py SKIP (r)": "waives.txt:3: Mako template syntax",  # Mako renders it '% a.py ...'
    "a.py SKIP (r) \\": "waives.txt:3: Mako template syntax",  # Mako joins it with the next line
}


def test_a_percent_sign_inside_a_line_is_not_mako():
    assert one("a.py SKIP (fails 50% of runs)").reason == "fails 50% of runs"


@pytest.mark.parametrize("line", list(REFUSED))
def test_upstream_refuses_it_and_so_do_we_with_its_reason_and_the_line(line):
    with pytest.raises(BadInput) as err:
        parse_waives("# comment\n\n" + line + "\n")
    assert str(err.value).startswith(REFUSED[line])


def test_line_numbers_count_lines_as_upstream_does():
    """Upstream splits with str.splitlines, so CRLF is one break and a form feed is another."""
    with pytest.raises(BadInput, match=r"^w:3: Invalid syntax for reason"):
        parse_waives("a.py SKIP (r)\r\nb.py SKIP (r)\x0cc.py SKIP nope\r\n", "w")


@pytest.mark.parametrize("text", [
    "a.py SKIP (r)\nb.py SKIP\n",
    "a.py SKIP (r)\r\nb.py SKIP # c\r\n",  # CRLF kept
    "a.py SKIP (r)\nb.py SKIP",  # no final newline
    "\n\n# only comments\n\n",
    "",
])
def test_round_trip_is_byte_identical(text):
    assert render(parse_waives(text)) == text


def test_split_name_keeps_options_whole():
    assert split_name('unittest/_torch -k "not (modeling or multi_gpu)"') == (
        ("unittest/_torch",), '-k "not (modeling or multi_gpu)"')
    assert split_name("a b  c") == (("a", "b", "c"), None)


def test_the_miniature_waives_txt_has_every_form_upstream_uses():
    """So that `make test` covers the grammar without the real data files."""
    text = (MINI / "waives.txt").read_text()
    entries = parse_waives(text, "waives.txt")
    assert render(entries) == text
    w = [e for e in entries if e.is_waiver]
    forms = {
        "no reason": any(e.reason is None and e.kind == "SKIP" and "#" not in e.text for e in w),
        "comment after the marker": any(e.reason is None and "#" in e.text for e in w),
        "full:<hw>/ prefix": any(e.hardware for e in w),
        "-k selector": any((e.selector or "").startswith("-k ") for e in w),
        "-m selector": any((e.selector or "").startswith("-m ") for e in w),
        "several ids": any(len(e.paths) > 1 for e in w),
        "directory": any(not e.test.endswith(".py") and "::" not in e.test and e.selector is None for e in w),
        "TIMEOUT (n)": any(e.kind == "TIMEOUT" and isinstance(e.timeout, int) for e in w),
        "XFAIL": any(e.kind == "XFAIL" for e in w),
        "UNSTABLE": any(e.kind == "UNSTABLE" for e in w),
    }
    assert [k for k, v in forms.items() if not v] == []
    lines = [e.text for e in w]
    assert lines == sorted(lines)


def test_test_db_entries_follow_the_same_grammar():
    stages = parse_test_db((MINI / "test-db/l0_cpu.yml").read_text(), "l0_cpu.yml")
    raw = [line.strip()[2:] for line in (MINI / "test-db/l0_cpu.yml").read_text().splitlines()
           if line.strip().startswith("- ") and (" TIMEOUT (" in line or " ISOLATION" in line)]
    assert raw, "the miniature's l0_cpu.yml should show a TIMEOUT (n) and an ISOLATION entry"
    items = [i for s in stages for i in s.items]
    for r in raw:
        assert r.split(" TIMEOUT")[0].split(" ISOLATION")[0] in items and r not in items


@pytest.mark.parametrize("yml, message", [
    ("l0_x:\n- tests:\n  - unittest/a.py TIMEOUT (soon)\n", 'l0_x.yml:3: Invalid syntax for TIMEOUT value: " (soon)"'),
    ("l0_x:\n- tests:\n  - {a: 1}\n", "l0_x.yml: stage 'l0_x': a test entry must be a string, not dict"),
    ("l0_x:\n- tests: 5\n", "l0_x.yml: stage 'l0_x': each block needs a 'tests' list"),
    ("l0_x: [\n", "l0_x.yml: not valid YAML"),
])
def test_a_bad_test_db_is_refused_with_file_and_line(yml, message):
    with pytest.raises(BadInput) as err:
        parse_test_db(yml, "l0_x.yml")
    assert str(err.value).startswith(message)


def test_a_line_join_is_refused_in_a_crlf_file_too():
    """Upstream reads with universal newlines, so Mako sees backslash-newline there as well."""
    with pytest.raises(BadInput, match=r"^w:1: Mako template syntax"):
        parse_waives("a.py SKIP (r) \\\r\nb.py SKIP (r)\r\n", "w")

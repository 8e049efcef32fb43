"""``strata.regex``: patterns from outside matched in linear time, refused early when RE2 cannot."""

from __future__ import annotations

import time

import pytest

from strata.regex import compile_linear
from strata.urls import local_path


def test_a_catastrophic_pattern_is_matched_in_linear_time():
    pattern = compile_linear(r"^.{1}([^!]+)+!")
    started = time.process_time()
    for n in (30, 1000, 100_000):
        assert pattern.match("a" * n) is None  # Python's re: 2**n steps
    assert time.process_time() - started < 1.0
    assert pattern.match("ab!") and pattern.search("xab!") and pattern.pattern == r"^.{1}([^!]+)+!"


@pytest.mark.parametrize(
    "pattern, says",
    [("(a)\\1", "linear time"), ("(?!news/)x", "lookaround"), ("(unclosed", "not a valid regular expression")],
)
def test_what_re2_cannot_take_is_refused_saying_why(pattern, says):
    with pytest.raises(ValueError, match=says):
        compile_linear(pattern)


@pytest.mark.parametrize(
    "target, local",
    [
        ("/jobs", True),
        ("/jobs?x=//evil.test", True),
        ("/%09/evil.test/x", True),  # still escaped: a path on this host
        ("/\t/evil.test/x", False),  # a browser drops the tab: //evil.test/x
        ("/\n/evil.test", False),
        ("//evil.test", False),
        ("/\\evil.test", False),
        ("https://evil.test/", False),
        ("javascript:alert(1)", False),
        ("jobs", False),
        ("", False),
        (None, False),
    ],
)
def test_local_path_is_a_path_on_this_host_as_a_browser_reads_it(target, local):
    assert (local_path(target) is not None) is local

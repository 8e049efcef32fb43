"""Permanent capture ids: computed from collection, URL and timestamp alone, and read back."""

from __future__ import annotations

import pytest

from index.cdx.pid import ALPHABET, capture_pid, parse_pid
from strata.errors import ConfigError

URL = "http://reading.example/"


def test_an_id_is_short_stable_and_names_its_second():
    pid = capture_pid("mixed", URL, "20240110090000")
    assert pid == capture_pid("mixed", URL, "20240110090000") == "1jswq4gvtm70dr1"  # pinned: ids are for ever
    assert len(pid) == 15 and set(pid) <= set(ALPHABET)
    assert parse_pid(pid)[0] == "20240110090000"
    assert parse_pid(pid.upper()) == parse_pid(pid)


def test_collection_url_and_second_each_change_the_id():
    ids = {
        capture_pid("mixed", URL, "20240110090000"),
        capture_pid("other", URL, "20240110090000"),
        capture_pid("mixed", URL + "a", "20240110090000"),
        capture_pid("mixed", URL, "20240110090001"),
    }
    assert len(ids) == 4


@pytest.mark.parametrize("bad", ["", "abc", "1jswq4gvtm70dr1x", "1jswq4gvtm70dru", "1jswq4gvtm70 r1", "../../etc"])
def test_malformed_ids_are_refused(bad):
    with pytest.raises(ConfigError, match="is not a permanent capture id"):
        parse_pid(bad)

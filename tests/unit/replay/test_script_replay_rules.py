"""The rules replay applies to pages that scripts build: a moment during a run means that run's
snapshot (``replay.snapshots``), and the cache-buster rule with fuzzy matches as of the time asked
(``replay.fuzzy``). The end-to-end checks, in Chromium over real WARCs, are in
``tests/browser/test_script_pages.py``."""

from __future__ import annotations

import pytest

from index.collection import Collection
from index.storage.state import HarvestState
from replay.fuzzy import as_of, is_cache_buster, same_resource, without_cache_busters
from replay.snapshots import RunSpans


@pytest.mark.parametrize(
    "name, value, busts",
    [
        ("_", "1714561200123", True),  # Date.now()
        ("t", "1714561200", True),  # seconds
        ("rnd", "0.8347561234", True),  # Math.random()
        ("cb", "12345678", True),
        ("_", "1234567", False),  # too short to be a time: a real parameter
        ("page", "1714561200123", False),  # not a cache-buster's name
        ("v", "1714561200123", False),  # a version is content, not noise
        ("t", "abc12345678", False),
        ("rnd", "1.5", False),
    ],
)
def test_what_counts_as_a_cache_buster(name, value, busts):
    assert is_cache_buster(name, value) is busts


def test_the_rule_compares_everything_but_the_cache_busters():
    asked = "http://p.example/api/list.json?page=1&_=1999999999999"
    assert without_cache_busters(asked) == "http://p.example/api/list.json?page=1"
    assert without_cache_busters("http://p.example/api/list.json?page=1") is None
    assert same_resource(asked, "http://p.example/api/list.json?_=1714561200123&page=1")
    assert same_resource(asked, "http://p.example/api/list.json?page=1")
    assert not same_resource(asked, "http://p.example/api/list.json?page=2&_=1714561200123")
    assert not same_resource(asked, "http://p.example/api/list.json?page=1&lang=en&_=1714561200123")
    assert not same_resource(asked, "http://p.example/api/other.json?page=1&_=1714561200123")
    assert not same_resource(asked, "https://p.example/api/list.json?page=1&_=1714561200123")


def test_matches_are_ordered_as_of_the_time_asked_ties_kept_in_index_order():
    found = [{"timestamp": ts, "n": n} for n, ts in enumerate(["20240101", "20240301", "20240301", "20240601"])]
    assert [c["n"] for c in as_of(found, "20240401000000")] == [1, 2, 0, 3]
    assert [c["n"] for c in as_of(found, "20231231000000")] == [0, 1, 2, 3]


def test_a_moment_during_a_finished_run_means_the_runs_end(tmp_path):
    coll = Collection.open(tmp_path, "c", create=True)
    with HarvestState(coll.db_path) as state:
        state.add_run(
            {"run_id": "r1", "status": "finished", "started": "2024-03-01T10:00:00Z", "snapshot": "20240301101500"}
        )
        state.add_run(
            {"run_id": "r2", "status": "interrupted", "started": "2024-06-01T10:00:00Z", "snapshot": "20240601100500"}
        )
        state.add_run({"run_id": "r3", "status": "running", "started": "2024-09-01T10:00:00Z"})
    spans = RunSpans(tmp_path)
    assert spans.extend("c", "20240301100000") == "20240301101500"  # the run's first page
    assert spans.extend("c", "20240301101000") == "20240301101500"
    assert spans.extend("c", "20240301101500") == "20240301101500"
    assert spans.extend("c", "20240301101501") == "20240301101501"  # after the run: as asked
    assert spans.extend("c", "20240101000000") == "20240101000000"
    assert spans.extend("c", "20240601100100") == "20240601100500"
    assert spans.extend("c", "20240901100100") == "20240901100100"  # a run still going has no end yet
    assert spans.extend("missing", "20240301100000") == "20240301100000"
    with HarvestState(coll.db_path) as state:  # a run added later is seen (the database changed)
        state.add_run(
            {"run_id": "r4", "status": "finished", "started": "2024-12-01T10:00:00Z", "snapshot": "20241201100900"}
        )
    assert spans.extend("c", "20241201100000") == "20241201100900"

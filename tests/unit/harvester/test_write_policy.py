"""harvester.write_policy.dedup_decision: when a payload already held is written as a revisit."""

import pytest

from harvester.write_policy import EMPTY_SHA1, dedup_decision
from index.storage.state import Original

HELD = Original("http://example.org/a", "2026-01-01T00:00:00Z", "<urn:uuid:1>", "a.warc.gz")
DIGEST = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


@pytest.mark.parametrize("status", [200, 203, 206, None])
def test_a_held_payload_of_a_success_is_a_revisit(status):
    write = dedup_decision(DIGEST, None, 10, HELD, status)
    assert (write.kind, write.original) == ("revisit", HELD)


@pytest.mark.parametrize("status", [301, 302, 404, 410, 500, 503])
def test_redirects_and_error_pages_are_written_in_full(status):
    # a deleted page's 404 identical to another page's 404 must index as 404, which a revisit does not
    assert dedup_decision(DIGEST, None, 10, HELD, status).kind == "response"


@pytest.mark.parametrize(
    "digest, truncated, length, original",
    [(DIGEST, None, 10, None), (None, None, 10, HELD), (DIGEST, "length", 10, HELD), (DIGEST, None, 0, HELD)]
    + [(EMPTY_SHA1, None, 5, HELD)],
)
def test_nothing_to_refer_to_is_written_in_full(digest, truncated, length, original):
    assert dedup_decision(digest, truncated, length, original, 200).kind == "response"

"""Revisit profiles (``index.capture.profiles``): each declared once, found by its exact URI, and read
the same way by the decision and the rebuild; what the harvest writes is the profile's first URI."""

from __future__ import annotations

import io

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from harvester import records
from harvester.fetchresult import FetchResult
from index.capture.decision import Observation, decide
from index.capture.profiles import (
    IDENTICAL_PAYLOAD,
    PROFILES,
    SERVER_NOT_MODIFIED,
    UNKNOWN,
    URI_AGNOSTIC,
    profile_of,
)
from index.storage.state import Original

WARC = "http://netpreserve.org/warc/"


@pytest.mark.parametrize(
    ("uri", "profile"),
    [
        (WARC + "1.1/revisit/server-not-modified", SERVER_NOT_MODIFIED),
        (WARC + "1.0/revisit/server-not-modified", SERVER_NOT_MODIFIED),
        (WARC + "1.1/revisit/identical-payload-digest", IDENTICAL_PAYLOAD),
        (WARC + "1.0/revisit/identical-payload-digest", IDENTICAL_PAYLOAD),
        (WARC + "0.18/revisit/identical-payload-digest", IDENTICAL_PAYLOAD),  # field WARCs hold it
        (WARC + "1.0/revisit/uri-agnostic-identical-payload-digest", URI_AGNOSTIC),  # Heritrix
        ("http://example.org/revisit/something-else", UNKNOWN),
        ("", UNKNOWN),
        (None, UNKNOWN),
    ],
)
def test_a_profile_is_found_by_its_exact_uri(uri, profile):
    assert profile_of(uri) is profile


def test_a_uri_that_only_contains_a_profiles_name_is_not_that_profile():
    """No substring match: a made-up URI ending in a known name is an unknown profile."""
    assert profile_of("urn:x:not-server-not-modified") is UNKNOWN
    assert not UNKNOWN.not_modified


def test_every_uri_names_one_profile_and_strata_writes_the_first():
    uris = [uri for profile in PROFILES for uri in profile.uris]
    assert len(uris) == len(set(uris))
    assert SERVER_NOT_MODIFIED.uri == WARC + "1.1/revisit/server-not-modified"
    assert IDENTICAL_PAYLOAD.uri == WARC + "1.1/revisit/identical-payload-digest"


ORIGINAL = Original("http://example.org/", "2024-01-01T00:00:00.000000Z", "<urn:uuid:orig>", "a.warc.gz")


def _result() -> FetchResult:
    return FetchResult(url="http://example.org/", request_line="GET / HTTP/1.1", status=304, reason="Not Modified")


@pytest.mark.parametrize("builder", [records.not_modified_revisit, records.built_not_modified_revisit])
def test_the_harvest_writes_the_not_modified_profile_and_the_decision_reads_it_back(builder):
    record = builder(_result(), "2024-02-01T00:00:00.000000Z", ORIGINAL, "sha1:AAAA")
    profile = record.rec_headers.get_header("WARC-Profile")
    assert profile_of(profile) is SERVER_NOT_MODIFIED
    observed = Observation(
        url="http://example.org/", at="2024-02-01T00:00:00.000Z", run_id="r", status=304, record_type="revisit",
        profile=profile, digest="sha1:AAAA",
    )  # fmt: skip
    held = {"last_status": 200, "digest": "sha1:AAAA", "orig_record_id": ORIGINAL.record_id}
    decided = decide(held, observed)
    assert decided.cls == "not_modified" and "last_status" not in decided.state


def test_an_identical_payload_revisit_carries_the_identical_profile():
    result = FetchResult(
        url="http://example.org/", request_line="GET / HTTP/1.1", status=200, reason="OK", digest="sha1:AAAA",
        body=io.BytesIO(b"x"), body_length=1,
    )  # fmt: skip
    record = records.identical_revisit(result, "2024-02-01T00:00:00.000000Z", ORIGINAL)
    out = io.BytesIO()
    WARCWriter(out, gzip=False, warc_version="1.1").write_record(record)
    out.seek(0)
    (read,) = list(ArchiveIterator(out))
    assert profile_of(read.rec_headers.get_header("WARC-Profile")) is IDENTICAL_PAYLOAD

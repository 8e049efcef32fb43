"""The captures of a URL as a reader moves between them: as-of choice, neighbours, timestamps."""

from __future__ import annotations

import pytest

from index.cdx.versions import Version, as_of, check_timestamp, neighbours
from strata.errors import ConfigError


def v(ts: str, digest: str = "A", revisit: bool = False) -> Version:
    return Version(
        ts, "http://x.example/", digest, "warc/revisit" if revisit else "text/html", "200", revisit, "f", 0, 1
    )


VERSIONS = [v("20240110090000"), v("20240210090000", revisit=True), v("20240310090000", "B")]


def test_as_of_takes_the_latest_at_or_before_the_end_of_the_period():
    assert as_of(VERSIONS, "20240210090000") is VERSIONS[1]
    assert as_of(VERSIONS, "202402") is VERSIONS[1]  # the end of February
    assert as_of(VERSIONS, "2024") is VERSIONS[2]
    assert as_of(VERSIONS, "20240210085959") is VERSIONS[0]
    assert as_of(VERSIONS, "2023") is None


def test_neighbours_and_same_payload():
    assert neighbours(VERSIONS, VERSIONS[0]) == (None, VERSIONS[1])
    assert neighbours(VERSIONS, VERSIONS[2]) == (VERSIONS[1], None)
    assert VERSIONS[1].same_payload(VERSIONS[0]) and not VERSIONS[2].same_payload(VERSIONS[1])
    assert not v("2024", None).same_payload(v("2024", None))  # no digest: nothing known to be the same


@pytest.mark.parametrize("bad", ["", "202", "2024x", "20241301", "20240230", "202401011200601", "２０２４"])
def test_bad_timestamps(bad):
    with pytest.raises(ConfigError):
        check_timestamp(bad)


def test_digest_prefix_is_dropped_from_cdx():
    cdx = {"timestamp": "20240110090000", "url": "u", "digest": "sha1:ABC", "mime": "warc/revisit", "offset": "7"}
    got = Version.from_cdx(cdx)
    assert (got.digest, got.revisit, got.offset, got.length) == ("ABC", True, 7, -1)

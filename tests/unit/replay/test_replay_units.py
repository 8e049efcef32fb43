"""The small pure parts of replay: as-of ordering, address parsing, response headers."""

from __future__ import annotations

import pytest

from replay.address import parse_address
from replay.asof import as_of_order, pad_as_of
from replay.errors import BadAddress
from replay.transport import IterReader


def cdx(ts: str, filename: str = "a.warc.gz", offset: int = 0) -> dict:
    return {"timestamp": ts, "filename": filename, "offset": str(offset)}


STAMPS = ["20240101000000", "20240401000000", "20240701000000"]


@pytest.mark.parametrize(
    ("as_of", "expected"),
    [
        ("20240401000000", ["20240401000000", "20240101000000", "20240701000000"]),  # exact: itself first
        ("20240630235959", ["20240401000000", "20240101000000", "20240701000000"]),  # closer later one loses
        ("20240402000000", ["20240401000000", "20240101000000", "20240701000000"]),
        ("20231231000000", ["20240101000000", "20240401000000", "20240701000000"]),  # nothing before: earliest later
        ("20991231000000", ["20240701000000", "20240401000000", "20240101000000"]),
    ],
)
def test_as_of_order_prefers_the_newest_at_or_before(as_of, expected):
    assert [c["timestamp"] for c in as_of_order(map(cdx, STAMPS), as_of)] == expected


def test_as_of_order_breaks_ties_within_a_second_by_write_order_and_limits():
    same = [
        cdx("20240101000000", "a.warc.gz", 10),
        cdx("20240101000000", "b.warc.gz", 5),
        cdx("20240101000000", "a.warc.gz", 900),
    ]
    ordered = list(as_of_order(same, "20240101000000"))
    assert [(c["filename"], c["offset"]) for c in ordered] == [
        ("b.warc.gz", "5"),
        ("a.warc.gz", "900"),
        ("a.warc.gz", "10"),
    ]
    assert len(list(as_of_order(map(cdx, STAMPS), "20240501000000", limit=1))) == 1


def test_partial_timestamps_mean_the_end_of_their_period():
    assert pad_as_of("2024") == "20241231235959"
    assert pad_as_of("202402") == "20240229235959"
    assert pad_as_of("20240101000000") == "20240101000000"


@pytest.mark.parametrize(
    ("rest", "kind", "ts", "mod", "url"),
    [
        ("20240115120000/http://example.org/a?b=c", "replay", "20240115120000", "", "http://example.org/a?b=c"),
        ("20240115120000id_/https://example.org/", "replay", "20240115120000", "id_", "https://example.org/"),
        ("2024im_/http:/example.org/x.png", "replay", "2024", "im_", "http://example.org/x.png"),
        ("http://example.org/", "timegate", "", "", "http://example.org/"),
        ("example.org/page", "timegate", "", "", "http://example.org/page"),
        ("id_/http://example.org/", "timegate", "", "id_", "http://example.org/"),
        ("timemap/link/http://example.org/", "timemap", "", "", "http://example.org/"),
        ("*/http://example.org/", "calendar", "", "", "http://example.org/"),
        ("20240115*/http://example.org/", "calendar", "20240115", "", "http://example.org/"),
    ],
)
def test_addresses(rest, kind, ts, mod, url):
    addr = parse_address("c", rest)
    assert (addr.kind, addr.timestamp, addr.mod, addr.url) == (kind, ts, mod, url)


def test_prefix_calendar_and_pywb_path():
    addr = parse_address("c", "*/http://example.org/news/*")
    assert addr.prefix and addr.url == "http://example.org/news/"
    assert parse_address("c", "2024id_/http://x.org/").pywb_path() == "2024id_/http://x.org/"
    assert parse_address("c", "http://x.org/").pywb_path() == "http://x.org/"


@pytest.mark.parametrize(
    "rest",
    [
        "2024x/http://example.org/",
        "123/http://example.org/",
        "202401011200001/http://x.org/",
        "20241301000000/http://x.org/",
        "20240101000000/ftp://x.org/",
        "20240101000000/javascript:alert(1)",
        "20240101000000/",
        "timemap/xml/http://x.org/",
        "20240101000000/http://a b/",
    ],
)
def test_malformed_addresses_say_what_to_type(rest):
    with pytest.raises(BadAddress) as info:
        parse_address("c", rest)
    assert info.value.http_status == 404 and info.value.hint


def test_iter_reader_reads_across_chunks_and_closes_the_body():
    closed = []

    class Body(list):
        def close(self):
            closed.append(True)

    reader = IterReader(Body([b"ab", b"", b"cde"]))
    assert reader.read(1) == b"a" and reader.read() == b"bcde" and reader.read() == b""
    reader.close()
    assert closed == [True]

"""A 304's two records made as bytes (``harvester.records.PreparedRecord``): the same bytes warcio's
builder and writer make for them, read back whole by warcio with valid digests, indexed as pywb's
own indexer indexes them; anything not plain ASCII still goes through warcio."""

from __future__ import annotations

import io
import re

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from harvester import records
from harvester.fetch import FetchResult
from harvester.warcfile import WarcRoller
from index.cdx.cdxj import RecordIndexer, index_warc
from index.state import Original

DATE = "2026-12-01T23:00:00.654321Z"
ORIGINAL = Original("http://a.test/p?q=1", "2026-11-01T00:00:00.123456Z", "<urn:uuid:1234>", "old.warc.gz")
_RECORD_ID = re.compile(rb"<urn:uuid:[0-9a-f-]{36}>")


def _result(**changes) -> FetchResult:
    fields = dict(
        url="http://a.test/p?q=1",
        request_line="GET /p?q=1 HTTP/1.1",
        request_headers=[
            ("Host", "a.test"),
            ("Accept", "*/*"),
            ("Accept-Encoding", "gzip, deflate"),
            ("Connection", "keep-alive"),
            ("User-Agent", "Strata/1 (+http://a.test/about)"),
            ("If-None-Match", '"v1"'),
            ("Cookie", "session=abc; lang=zh"),
        ],
        status=304,
        reason="Not Modified",
        headers=[("ETag", '"v1"')],
        ip="127.0.0.1",
    )
    fields.update(changes)
    return FetchResult(**fields)


CASES = {
    "plain": {},
    "no address": {"ip": None},
    "surplus": {"surplus": 17},
    "IPv6 address": {"ip": "::1"},
    "long query": {"url": "http://a.test/s?" + "k=v&" * 300, "request_line": "GET /s?" + "k=v&" * 300 + " HTTP/1.1"},
    "no request headers": {"request_headers": []},
}


def _warcio_bytes(record) -> bytes:
    out = io.BytesIO()
    WARCWriter(out, gzip=False, warc_version="1.1").write_record(record)
    return out.getvalue()


def _same_ids(data: bytes) -> bytes:
    return _RECORD_ID.sub(b"<urn:uuid:ID>", data)


@pytest.mark.parametrize("case", CASES)
def test_prepared_revisit_is_warcios_record_byte_for_byte(case):
    result = _result(**CASES[case])
    prepared = records.not_modified_revisit(result, DATE, ORIGINAL, "sha1:PAYLOAD")
    built = records.built_not_modified_revisit(result, DATE, ORIGINAL, "sha1:PAYLOAD")
    assert isinstance(prepared, records.PreparedRecord)
    assert _same_ids(prepared.data) == _same_ids(_warcio_bytes(built))
    for name in ("WARC-Profile", "WARC-Date", "WARC-Target-URI", "WARC-Refers-To", "WARC-Payload-Digest"):
        assert prepared.rec_headers.get_header(name) == built.rec_headers.get_header(name)
    assert prepared.rec_headers.get_header("warc-type") == "revisit"  # names in any case, as warcio's


@pytest.mark.parametrize("case", CASES)
def test_prepared_request_is_warcios_record_byte_for_byte(case):
    result = _result(**CASES[case])
    prepared = records.request_record(result, DATE, "<urn:uuid:concurrent>")
    built = records.built_request_record(result, DATE, "<urn:uuid:concurrent>")
    assert isinstance(prepared, records.PreparedRecord)
    assert _same_ids(prepared.data) == _same_ids(_warcio_bytes(built))
    assert prepared.http_headers is not None and prepared.http_headers.protocol == "GET"


@pytest.mark.parametrize(
    "changes",
    [
        {"url": "http://a.test/%E4%B8%AD?x=\u4e2d"},  # a value that is not ASCII
        {"request_headers": [("Host", "a.test"), ("Cookie", "name=caf\u00e9")]},
        {"ip": "127.0.0.1\r\nWARC-Type: response"},  # no CR or LF into the header block
    ],
)
def test_values_that_are_not_plain_ascii_go_through_warcio(changes):
    result = _result(**changes)
    revisit = records.not_modified_revisit(result, DATE, ORIGINAL, "sha1:PAYLOAD")
    request = records.request_record(result, DATE, "<urn:uuid:concurrent>")
    assert not isinstance(request, records.PreparedRecord)
    if "request_headers" not in changes:
        assert not isinstance(revisit, records.PreparedRecord)


def test_a_304_without_a_digest_is_refused_as_warcio_refuses_it():
    with pytest.raises(AssertionError):
        records.not_modified_revisit(_result(), DATE, ORIGINAL, "")


def test_prepared_records_written_read_back_and_indexed_as_pywb_does(tmp_path):
    roller = WarcRoller(tmp_path, "c", warcinfo={"software": "test"}, max_size=1 << 30, indexer=RecordIndexer())
    lines: list[bytes] = []
    roller.on_sealed = lambda name, size, made: lines.extend(made or [])
    written = []
    for case in CASES.values():
        result = _result(**case)
        revisit = records.not_modified_revisit(result, DATE, ORIGINAL, "sha1:PAYLOAD")
        request = records.request_record(result, DATE, records.record_id(revisit))
        roller.write([revisit, request])
        written += [revisit, request]
    roller.close()
    (name,) = roller.files
    with open(tmp_path / name, "rb") as fh:
        read = [
            (r.rec_type, r.rec_headers.get_header("WARC-Record-ID"), r.content_stream().read())
            for r in ArchiveIterator(fh, check_digests="raise")
            if r.rec_type != "warcinfo"
        ]
    assert [(t, i) for t, i, _ in read] == [(r.rec_type, records.record_id(r)) for r in written]
    assert all(block == b"" for t, _, block in read if t == "revisit")
    assert sorted(lines) == index_warc(tmp_path / name, name)

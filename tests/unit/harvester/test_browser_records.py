"""The WARC records of a browser-captured page (``harvester.browser.records``): their URIs, types,
dates and headers, read back by warcio and indexed by pywb's own indexer."""

from __future__ import annotations

import json

from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from harvester.browser.contract import FULFILLED, PageRef, RequestOutcome
from harvester.browser.page import PageCapture
from harvester.browser.records import one_line, page_records
from index.cdx.cdxj import index_warc
from strata.pageuris import page_uri, parse_page_uri
from strata.times import utc_now

PAGE = "http://portal.example/a?b=1"
DATE = "2024-03-01T10:00:00Z"
NAV = "<urn:uuid:00000000-0000-0000-0000-000000000001>"


def capture() -> PageCapture:
    shot = b"\x89PNG\r\n\x1a\n" + b"\0" * 20
    page = PageCapture(url=PAGE, page=PageRef(PAGE, "1"), started=utc_now(), status=200, title="Tit\nle  é")
    page.text, page.screenshot = "Rendered text: quillwort é", shot
    page.requests = [RequestOutcome(PAGE, "GET", "document", True, FULFILLED, 200, "text/html", 10, top_level=True)]
    return page


def test_a_page_is_three_resource_records_dated_as_its_capture(tmp_path):
    path = tmp_path / "p.warc.gz"
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True, warc_version="1.1")
        for record in page_records(capture(), DATE, NAV):
            writer.write_record(record)
    found = {}
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh):
            h = record.rec_headers
            assert record.rec_type == "resource"
            assert h.get_header("WARC-Date") == DATE and h.get_header("WARC-Concurrent-To") == NAV
            assert h.get_header("WARC-Payload-Digest").startswith("sha1:")
            found[h.get_header("WARC-Target-URI")] = (h.get_header("Content-Type"), record.content_stream().read(), h)
    view, text, info = (found[page_uri(kind, PAGE)] for kind in ("view", "text", "pageinfo"))
    assert view[0] == "image/png" and view[1].startswith(b"\x89PNG")
    assert text[0] == "text/plain; charset=utf-8" and text[1].decode() == "Rendered text: quillwort é"
    assert text[2].get_header("WARC-Strata-Title") == "Tit le é"
    assert info[0] == "application/json"
    assert json.loads(info[1])["requests"][0]["url"] == PAGE
    lines = [line.split(b" ", 2) for line in index_warc(path, "p.warc.gz")]
    assert sorted(json.loads(fields)["url"] for _key, _ts, fields in lines) == sorted(found)
    assert {ts for _key, ts, _fields in lines} == {b"20240301100000"}


def test_a_page_without_a_screenshot_has_no_view_record():
    page = capture()
    page.screenshot = None
    assert [r.rec_headers.get_header("WARC-Target-URI") for r in page_records(page, DATE)] == [
        page_uri("text", PAGE),
        page_uri("pageinfo", PAGE),
    ]


def test_page_uris_and_titles():
    assert parse_page_uri(page_uri("text", PAGE)) == ("text", PAGE)
    assert parse_page_uri("urn:text:javascript:alert(1)") is None
    assert parse_page_uri(PAGE) is None
    assert one_line("a\r\nb\tc" + "x" * 2000)[:5] == "a b c"
    assert len(one_line("x" * 2000)) == 1000

"""CDXJ lines made while writing (``index.cdxj.RecordIndexer``) against pywb's file indexer.

The harvest tests compare a whole collection's index with ``cdx-indexer``; these build the awkward
records one by one: a 304 revisit with no HTTP block, an identical-payload revisit, a redirect, an
empty body, a response without Content-Type, and the cases the indexer must hand back to the file
indexer (a POST); a non-ASCII header value, which warcio escapes as it writes, indexes the same.
"""

from __future__ import annotations

import io
import tempfile

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvester.warcfile import WarcRoller
from index.cdx import cdxj

BUILDER = WARCWriter(None, gzip=True, warc_version="1.1")
DATE = "2026-11-30T01:02:03.456789Z"


def response(url: str, status: str, headers: list, body: bytes):
    http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
    return BUILDER.create_warc_record(
        url,
        "response",
        payload=io.BytesIO(body),
        length=len(body),
        http_headers=http,
        warc_headers_dict={"WARC-Date": DATE},
    )


def request(url: str, method: str = "GET", body: bytes = b"", concurrent_to: str | None = None):
    http = StatusAndHeaders(
        f"{method} /{url.rsplit('/', 1)[-1]}",
        [
            ("Host", "example.org"),
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Content-Length", str(len(body))),
        ],
        protocol="HTTP/1.1",
        is_http_request=True,
    )
    headers = {"WARC-Date": DATE}
    if concurrent_to:
        headers["WARC-Concurrent-To"] = concurrent_to
    return BUILDER.create_warc_record(
        url, "request", payload=io.BytesIO(body), length=len(body), http_headers=http, warc_headers_dict=headers
    )


def record_id(record) -> str:
    return record.rec_headers.get_header("WARC-Record-ID")


def pairs():
    """Response-like records, each with its GET request, as the harvester writes them."""
    html = response(
        "http://example.org/a.html",
        "200 OK",
        [("Content-Type", "text/html; charset=utf-8")],
        b"<html><body>hello</body></html>",
    )
    same = BUILDER.create_revisit_record(
        "http://example.org/copy.html",
        "sha1:AAAA",
        "http://example.org/a.html",
        DATE,
        http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"),
        warc_headers_dict={"WARC-Date": DATE},
    )
    same.rec_headers.add_header("WARC-Truncated", "length")
    not_modified = BUILDER.create_revisit_record(
        "http://example.org/b.css",
        "sha1:BBBB",
        "http://example.org/b.css",
        DATE,
        http_headers=None,
        warc_headers_dict={"WARC-Date": DATE},
    )
    redirect = response("http://example.org/old", "301 Moved Permanently", [("Location", "/new")], b"")
    untyped = response("http://example.org/blob", "200", [], b"\x00\x01\x02")
    missing = response("http://example.org/gone", "404 Not Found", [("Content-Type", "text/plain")], b"no")
    out = []
    for main in (html, same, not_modified, redirect, untyped, missing):
        out.append([main, request(main.rec_headers.get_header("WARC-Target-URI"), concurrent_to=record_id(main))])
    return out


def write(records_groups, indexer=True) -> tuple[list, list[bytes] | None, bytes]:
    """Write the groups with a roller; return (file names, lines handed over, pywb's lines)."""
    with tempfile.TemporaryDirectory() as tmp:
        sealed: list = []
        roller = WarcRoller(
            tmp,
            "t",
            {"software": "test"},
            max_size=10**9,
            on_sealed=lambda name, size, lines: sealed.append((name, lines)),
            indexer=cdxj.RecordIndexer() if indexer else None,
        )
        for group in records_groups:
            roller.write(group)
        roller.close()
        ((name, lines),) = sealed
        from pathlib import Path

        theirs = cdxj.index_warc(Path(tmp) / name, name)
        return name, lines, theirs


def test_lines_made_while_writing_equal_pywbs_file_indexer():
    _, ours, theirs = write(pairs())
    assert ours is not None
    assert sorted(ours) == theirs
    assert len(theirs) == 6
    assert any(b'"mime": "warc/revisit"' in line for line in theirs)


def test_a_post_is_handed_back_to_the_file_indexer():
    groups = pairs()
    main = response("http://example.org/form", "200 OK", [("Content-Type", "text/html")], b"ok")
    groups.append([main, request("http://example.org/form", "POST", b"q=1", record_id(main))])
    _, ours, theirs = write(groups)
    assert ours is None  # the whole file is then read back by index_warc
    assert any(b"__wb_method=post" in line for line in theirs)


def test_non_ascii_header_values_index_the_same():
    groups = pairs()
    groups.append([response("http://example.org/c", "200 OK", [("Content-Type", "text/html; x=\u00e9")], b"c")])
    _, ours, theirs = write(groups)
    assert ours is not None and sorted(ours) == theirs
    assert len(theirs) == 7


def test_no_indexer_means_lines_from_disk():
    _, ours, _ = write(pairs(), indexer=False)
    assert ours is None


def test_a_browser_pages_records_index_the_same():
    from harvester.browser.contract import PageRef
    from harvester.browser.page import PageCapture
    from harvester.browser.records import page_records
    from strata.times import utc_now

    page = PageCapture(
        url="http://example.org/a.html", page=PageRef("http://example.org/a.html", "1"), started=utc_now()
    )
    page.text, page.title, page.screenshot = "Rendered \u00e9", "T\u00eftle", b"\x89PNG\r\n\x1a\n"
    groups = pairs()
    groups.append(page_records(page, DATE, record_id(groups[0][0])))
    text_again = BUILDER.create_revisit_record(
        "urn:text:http://example.org/a.html",
        groups[-1][1].rec_headers.get_header("WARC-Payload-Digest"),
        "urn:text:http://example.org/a.html",
        DATE,
        http_headers=None,
        warc_headers_dict={"WARC-Date": DATE},
    )
    groups.append([text_again])
    _, ours, theirs = write(groups)
    assert ours is not None and sorted(ours) == theirs
    assert sum(1 for line in theirs if line.startswith(b"urn:")) == 4

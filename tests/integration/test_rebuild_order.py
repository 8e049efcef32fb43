"""The rebuild applies captures in capture-time order (WARC-Date) across all files, not in file-name
order: WARCs written by other tools do not sort by capture date by name."""

from __future__ import annotations

import io
import itertools

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from index.capture.rebuild import rebuild_state
from index.collection import Collection
from index.state import HarvestState

PAGE = "http://example.org/page.html"
OTHER = "http://example.org/other.html"


def _response(writer, url, date, body, status="200 OK"):
    http = StatusAndHeaders(
        status, [("Content-Type", "text/html"), ("Content-Length", str(len(body)))], protocol="HTTP/1.1"
    )
    return writer.create_warc_record(
        url,
        "response",
        payload=io.BytesIO(body),
        length=len(body),
        http_headers=http,
        warc_headers_dict={"WARC-Date": date},
    )


def _write(path, records):
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True, warc_version="1.0")
        for make in records:
            writer.write_record(make(writer))


def _revisit_of(original):
    def make(writer):
        headers = original.rec_headers
        record = writer.create_revisit_record(
            PAGE,
            headers.get_header("WARC-Payload-Digest"),
            PAGE,
            headers.get_header("WARC-Date"),
            http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"),
            warc_headers_dict={"WARC-Date": "2014-01-27T09:00:00Z"},
        )
        record.rec_headers.add_header("WARC-Refers-To", headers.get_header("WARC-Record-ID"))
        return record

    return make


def _files(tmp_writer):
    """(name, records) of four files whose names sort against their capture dates: a revisit
    before its original, and two captures in one second, at second and at sub-second precision."""
    original = _response(tmp_writer, PAGE, "2014-01-26T09:00:00Z", b"<p>first</p>")
    return [
        ("dupes.warc.gz", [_revisit_of(original)]),
        ("iana.warc.gz", [lambda w: original]),
        ("b-late.warc.gz", [lambda w: _response(w, OTHER, "2014-01-28T10:00:00.500Z", b"<p>v2</p>")]),
        (
            "c-early.warc.gz",
            [
                lambda w: _response(w, OTHER, "2014-01-28T10:00:00Z", b"<p>v1</p>"),
                lambda w: _response(w, PAGE, "2014-01-29T00:00:00Z", b"gone", "404 Not Found"),
            ],
        ),
    ]


EXPECTED = [  # in capture order
    (PAGE, "20140126090000", "response", "new", 200),
    (PAGE, "20140127090000", "revisit", "unchanged", 200),
    (OTHER, "20140128100000", "response", "new", 200),
    (OTHER, "20140128100000", "response", "changed", 200),
    (PAGE, "20140129000000", "response", "deleted", 404),
]


@pytest.mark.parametrize("order", list(itertools.permutations(range(4)))[::7])
def test_capture_kinds_follow_capture_time_whatever_the_file_names(tmp_path, order):
    coll = Collection.open(tmp_path / "collections", "imp", create=True)
    coll.create()
    coll.archive_dir.mkdir(parents=True, exist_ok=True)
    files = _files(WARCWriter(None, gzip=True, warc_version="1.0"))
    for position, index in enumerate(order):  # the same files under names that sort in another order
        name, records = files[index]
        _write(coll.archive_dir / f"{position}-{name}", records)
    rebuild_state(coll)
    with HarvestState(coll.db_path) as state:
        rows = state.conn.execute("SELECT url, timestamp, record_type, class, status FROM captures ORDER BY id")
        assert [tuple(r) for r in rows] == EXPECTED
        page = state.url(PAGE)
        assert (page["last_class"], page["last_status"], page["checks"], page["changes"]) == ("deleted", 404, 3, 1)
        assert page["deleted_at"] == "2014-01-29T00:00:00.000Z"
        other = state.url(OTHER)
        assert other["last_checked"] == "2014-01-28T10:00:00.500Z"

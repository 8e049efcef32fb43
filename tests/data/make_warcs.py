"""Writes ``tiny-revisits.warc.gz`` beside this script with warcio (run it to regenerate; the bytes
are deterministic: fixed dates, record ids and gzip headers). Four captures of one page:

    2020-01-01  response   200, the page
    2020-02-01  revisit    identical-payload-digest of it (same payload, new headers)
    2020-03-01  revisit    server-not-modified (the server answered 304)
    2020-04-01  response   200, a changed page

``wget-1.21-contact.warc.gz`` beside it was written by Debian's GNU Wget 1.21.3
(``wget --warc-file=... http://127.0.0.1:PORT/contact.html .../robots.txt`` against the demo's
sample site) and is kept as wget wrote it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zlib
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import BufferWARCWriter

HERE = Path(__file__).resolve().parent
URL = "http://archive.example.org/page.html"
V1 = b"<html><head><title>Tiny</title></head><body><p>First text.</p></body></html>\n"
V2 = b"<html><head><title>Tiny</title></head><body><p>Second text.</p></body></html>\n"


def sha1(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def http(status: str, body: bytes, date: str) -> StatusAndHeaders:
    return StatusAndHeaders(
        status,
        [("Content-Type", "text/html; charset=utf-8"), ("Date", date), ("Content-Length", str(len(body)))],
        protocol="HTTP/1.1",
    )


def records(writer: BufferWARCWriter) -> None:
    v1 = writer.create_warc_record(
        URL,
        "response",
        payload=io.BytesIO(V1),
        length=len(V1),
        http_headers=http("200 OK", V1, "Wed, 01 Jan 2020 00:00:00 GMT"),
        warc_headers_dict={
            "WARC-Date": "2020-01-01T00:00:00Z",
            "WARC-Record-ID": "<urn:uuid:00000000-0000-4000-8000-000000000001>",
        },
    )
    writer.write_record(v1)
    same = writer.create_revisit_record(
        URL,
        digest=sha1(V1),
        refers_to_uri=URL,
        refers_to_date="2020-01-01T00:00:00Z",
        http_headers=http("200 OK", V1, "Sat, 01 Feb 2020 00:00:00 GMT"),
        warc_headers_dict={
            "WARC-Date": "2020-02-01T00:00:00Z",
            "WARC-Refers-To": "<urn:uuid:00000000-0000-4000-8000-000000000001>",
            "WARC-Truncated": "length",
            "WARC-Record-ID": "<urn:uuid:00000000-0000-4000-8000-000000000002>",
        },
    )
    writer.write_record(same)
    nm = writer.create_warc_record(
        URL,
        "revisit",
        payload=io.BytesIO(b""),
        length=0,
        warc_headers_dict={
            "WARC-Date": "2020-03-01T00:00:00Z",
            "WARC-Profile": "http://netpreserve.org/warc/1.1/revisit/server-not-modified",
            "WARC-Payload-Digest": sha1(V1),
            "WARC-Refers-To": "<urn:uuid:00000000-0000-4000-8000-000000000001>",
            "WARC-Refers-To-Target-URI": URL,
            "WARC-Refers-To-Date": "2020-01-01T00:00:00Z",
            "WARC-Record-ID": "<urn:uuid:00000000-0000-4000-8000-000000000003>",
        },
    )
    writer.write_record(nm)
    v2 = writer.create_warc_record(
        URL,
        "response",
        payload=io.BytesIO(V2),
        length=len(V2),
        http_headers=http("200 OK", V2, "Wed, 01 Apr 2020 00:00:00 GMT"),
        warc_headers_dict={
            "WARC-Date": "2020-04-01T00:00:00Z",
            "WARC-Record-ID": "<urn:uuid:00000000-0000-4000-8000-000000000004>",
        },
    )
    writer.write_record(v2)


def main() -> None:
    writer = BufferWARCWriter(gzip=False, warc_version="1.1")
    records(writer)
    data = writer.get_contents()
    # one gzip member per record, with a fixed header (no file name, mtime 0), as pywb seeks by offset
    out = bytearray()
    stream = io.BytesIO(data)
    it = ArchiveIterator(stream)
    offsets = []
    for _ in it:
        it.read_to_end()
        offsets.append((it.get_record_offset(), it.get_record_length()))
    ends = [start for start, _ in offsets[1:]] + [len(data)]  # each record with its trailing CRLF CRLF
    for (start, _), end in zip(offsets, ends, strict=True):
        comp = zlib.compressobj(9, zlib.DEFLATED, -15)
        raw = data[start:end]
        body = comp.compress(raw) + comp.flush()
        crc = zlib.crc32(raw)
        out += (
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
            + body
            + crc.to_bytes(4, "little")
            + (len(raw) & 0xFFFFFFFF).to_bytes(4, "little")
        )
    (HERE / "tiny-revisits.warc.gz").write_bytes(bytes(out))


if __name__ == "__main__":
    main()

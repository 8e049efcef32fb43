"""Writes the two tiny ARC files beside this script (run it to regenerate them; the bytes are
deterministic). warcio writes no ARC, so they are written here by hand, to the ARC 1.0 format
Alexa and the Internet Archive used until WARC (one header line per record: URL, IP address,
14-digit date, MIME type, length; then that many bytes; then a newline).

    legacy-1998.arc      uncompressed: a filedesc record, a page and an image, 1998-03-01
    legacy-2001.arc.gz   one gzip member per record: the same page unchanged and changed, 2001
"""

from __future__ import annotations

import gzip
from pathlib import Path

HERE = Path(__file__).resolve().parent


def http(body: bytes, mime: str, date: str) -> bytes:
    head = (
        f"HTTP/1.0 200 OK\r\nDate: {date}\r\nServer: NCSA/1.5\r\nContent-Type: {mime}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode("ascii")
    return head + body


def record(url: str, ts: str, mime: str, content: bytes) -> bytes:
    return f"{url} 192.0.2.10 {ts} {mime} {len(content)}\n".encode("ascii") + content + b"\n"


def filedesc(name: str, ts: str) -> bytes:
    body = b"1 0 Strata-test-fixture\nURL IP-address Archive-date Content-type Archive-length\n"
    return f"filedesc://{name} 0.0.0.0 {ts} text/plain {len(body)}\n".encode("ascii") + body + b"\n"


PAGE_V1 = b"<html><head><title>Legacy home</title></head><body><p>Welcome, 1998.</p><img src=logo.gif></body></html>\n"
PAGE_V2 = b"<html><head><title>Legacy home</title></head><body><p>Welcome, 2001 edition.</p></body></html>\n"
GIF = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01"
    b"\x00\x01\x00\x00\x02\x02D\x01\x00;"
)


def legacy_1998() -> list[bytes]:
    return [
        filedesc("legacy-1998.arc", "19980301120000"),
        record(
            "http://legacy.example/",
            "19980301120005",
            "text/html",
            http(PAGE_V1, "text/html", "Sun, 01 Mar 1998 12:00:05 GMT"),
        ),
        record(
            "http://legacy.example/logo.gif",
            "19980301120007",
            "image/gif",
            http(GIF, "image/gif", "Sun, 01 Mar 1998 12:00:07 GMT"),
        ),
    ]


def legacy_2001() -> list[bytes]:
    return [
        filedesc("legacy-2001.arc.gz", "20010615080000"),
        record(
            "http://legacy.example/logo.gif",
            "20010615080002",
            "image/gif",
            http(GIF, "image/gif", "Fri, 15 Jun 2001 08:00:02 GMT"),
        ),
        record(
            "http://legacy.example/",
            "20010615080004",
            "text/html",
            http(PAGE_V2, "text/html", "Fri, 15 Jun 2001 08:00:04 GMT"),
        ),
    ]


def main() -> None:
    (HERE / "legacy-1998.arc").write_bytes(b"".join(legacy_1998()))
    # mtime=0: the same bytes every time
    (HERE / "legacy-2001.arc.gz").write_bytes(b"".join(gzip.compress(r, mtime=0) for r in legacy_2001()))


if __name__ == "__main__":
    main()

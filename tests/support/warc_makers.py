"""Small WARC files written by warcio (not by Strata), for the scan, rebuild and import tests.

``write_warc(path, captures, ...)`` writes one file: an optional ``warcinfo`` record, then for each
``Cap`` a response (or, with ``revisit_of``, an identical-payload-digest revisit pointing at an
earlier capture), each followed by its request record, as other harvesters write them.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import hashlib
import io
import subprocess
import sys
import uuid
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

DATA = Path(__file__).resolve().parent.parent / "data"
CDX_INDEXER = Path(sys.executable).parent / "cdx-indexer"


@dataclasses.dataclass
class Cap:
    url: str
    date: str  # WARC-Date, e.g. 2020-01-02T03:04:05Z
    body: bytes = b"<html>hello</html>"
    status: str = "200 OK"
    mime: str = "text/html"
    revisit_of: Cap | None = None  # write an identical-payload-digest revisit of this capture
    headers: tuple[tuple[str, str], ...] = ()  # more HTTP headers (a redirect's Location...)


def write_warc(
    path: Path, captures: list[Cap], *, gzip: bool = True, version: str = "1.1", warcinfo: dict | None = None
) -> Path:
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=gzip, warc_version=version)
        if warcinfo is not None:
            writer.write_record(writer.create_warcinfo_record(path.name, warcinfo))
        for cap in captures:
            http = StatusAndHeaders(
                cap.status,
                [("Content-Type", cap.mime), ("Content-Length", str(len(cap.body))), *cap.headers],
                protocol="HTTP/1.1",
            )
            if cap.revisit_of is not None:
                original = cap.revisit_of
                digest = _payload_digest(writer, original.body)
                record = writer.create_revisit_record(cap.url, digest, original.url, original.date, http_headers=http)
                record.rec_headers.replace_header("WARC-Date", cap.date)
            else:
                record = writer.create_warc_record(
                    cap.url,
                    "response",
                    payload=io.BytesIO(cap.body),
                    http_headers=http,
                    warc_headers_dict={"WARC-Date": cap.date},
                )
            writer.write_record(record)
            request = StatusAndHeaders(
                f"GET /{cap.url.split('/', 3)[-1]} HTTP/1.1", [("Host", cap.url.split("/")[2])], is_http_request=True
            )
            req = writer.create_warc_record(
                cap.url, "request", http_headers=request, warc_headers_dict={"WARC-Date": cap.date}
            )
            writer.write_record(req)
    return path


def _payload_digest(writer: WARCWriter, body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def sha1_digest(data: bytes) -> str:
    """``sha1:BASE32``, as WARC-Payload-Digest and WARC-Block-Digest are written."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def raw_record(kind: str, url: str, date: str, block: bytes, ctype: str, version: str = "WARC/1.0", **extra) -> bytes:
    """A WARC record written by hand (what warcio's writer would not write: a response whose block is
    not HTTP, a revisit with a label of its own...): a name-based record id, the block's digest, and
    ``extra`` headers, ``WARC-``-named, as given."""
    headers = {
        "WARC-Type": kind,
        "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, kind + url + date)}>",
        "WARC-Date": date,
        "WARC-Target-URI": url,
        "Content-Type": ctype,
        "WARC-Block-Digest": sha1_digest(block),
        **extra,
        "Content-Length": str(len(block)),
    }
    return (version + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode() + block


def gzip_records(path: Path, *records: bytes, trailer: bytes = b"\r\n\r\n") -> Path:
    """``records`` into ``path``, one gzip member each, each followed by ``trailer``."""
    path.write_bytes(b"".join(gzip.compress(r + trailer, mtime=0) for r in records))
    return path


def pywb_cdxj(*paths: Path) -> list[str]:
    """pywb's own indexer as wb-manager runs it (``cdx-indexer -j -s -p``), one run over the files,
    with ``filename`` reduced to the base name as a collection's index holds it."""
    out = subprocess.run(
        [str(CDX_INDEXER), "-j", "-s", "-p", *map(str, paths)], check=True, capture_output=True
    ).stdout.decode("utf-8")
    return sorted(line for line in out.splitlines() if line.strip())


def flip_bytes(path: Path, at: int, count: int = 10) -> None:
    data = bytearray(path.read_bytes())
    for i in range(at, at + count):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))

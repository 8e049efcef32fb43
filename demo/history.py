"""A collection's history written as WARC files, capture by capture, as a harvest would have left
it: for the calendar, site map and holdings tests, which need captures whose kinds are known, and
for their benchmarks (a URL of 10,000 captures, a host of 100,000 URLs).

``write_history(archive_dir, events)`` writes one WARC file per run (a run is the events of one
``run`` label, in order): each ``Event`` is a response with the page's ``version`` as its body, an
identical-payload revisit when the version is the one the URL had last (with the
``WARC-Refers-To-Target-URI`` and ``-Date`` headers pywb needs), or a 404 when ``version`` is ``None``. ``strata index
rebuild`` (``index.capture.rebuild.rebuild_state``) then derives the kinds: new, changed, unchanged,
deleted. Records are written by warcio, each its own gzip member.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

__all__ = ["Event", "page_body", "page_key", "write_history"]


@dataclasses.dataclass(frozen=True)
class Event:
    run: str  # the WARC file's name stem: one file per run
    url: str
    date: str  # WARC-Date, e.g. 2024-03-05T12:00:00Z
    version: int | None  # the page's version; None: the URL answers 404
    mime: str = "text/html"


def page_key(url: str, version: int) -> str:
    """A word found in one version of one page only (for tests that search for a page)."""
    return "k" + hashlib.sha1(f"{url} {version}".encode()).hexdigest()[:10]


def page_body(url: str, version: int, words: int = 40) -> bytes:
    """An HTML page whose main text differs from one version to the next; ``page_key`` is in it."""
    text = " ".join(f"word{(version * 7 + i) % 97}" for i in range(words)) + " " + page_key(url, version)
    title = f"{url.rsplit('/', 1)[-1] or 'home'} v{version}"
    return (
        f"<!DOCTYPE html><html lang='en'><head><title>{title}</title></head>"
        f"<body><main><h1>{title}</h1><p>{text}</p><p>version {version} of {url}</p></main></body></html>"
    ).encode()


def _digest(body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def write_history(archive_dir: Path, events: Iterable[Event], body=page_body) -> list[Path]:
    """Write the events' records, one WARC file per run (events of a run in the order given)."""
    archive_dir = Path(archive_dir)
    archive_dir.mkdir(parents=True, exist_ok=True)
    last: dict[str, tuple[int, str, bytes]] = {}  # url -> (version, date, body) of its last response
    writers: dict[str, tuple[BinaryIO, WARCWriter]] = {}
    paths = []
    try:
        for e in events:
            if e.run not in writers:
                path = archive_dir / f"{e.run}.warc.gz"
                fh = open(path, "wb")
                writers[e.run] = (fh, WARCWriter(fh, gzip=True))
                paths.append(path)
            writer = writers[e.run][1]
            if e.version is None:
                record = _response(writer, e.url, e.date, b"<html><body>Not found</body></html>", "404 Not Found")
                last.pop(e.url, None)
            elif e.url in last and last[e.url][0] == e.version:
                _, date, payload = last[e.url]
                http = StatusAndHeaders(
                    "200 OK", [("Content-Type", e.mime), ("Content-Length", str(len(payload)))], protocol="HTTP/1.1"
                )
                record = writer.create_revisit_record(e.url, _digest(payload), e.url, date, http_headers=http)
                record.rec_headers.replace_header("WARC-Date", e.date)
            else:
                payload = body(e.url, e.version)
                record = _response(writer, e.url, e.date, payload, "200 OK", e.mime)
                last[e.url] = (e.version, e.date, payload)
            writer.write_record(record)
    finally:
        for stream, _ in writers.values():
            stream.close()
    return paths


def _response(writer: WARCWriter, url: str, date: str, payload: bytes, status: str, mime: str = "text/html"):
    http = StatusAndHeaders(
        status, [("Content-Type", mime), ("Content-Length", str(len(payload)))], protocol="HTTP/1.1"
    )
    return writer.create_warc_record(
        url, "response", payload=io.BytesIO(payload), http_headers=http, warc_headers_dict={"WARC-Date": date}
    )

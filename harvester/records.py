"""WARC records for one fetch, built with warcio's record builder, or as bytes (see ``PreparedRecord``).

- ``response_record``: the response as received (headers minus Transfer-Encoding, body as received).
- ``request_record``: the request as sent, ``WARC-Concurrent-To`` the response or revisit.
- Each of them carries ``WARC-IP-Address``, the address the fetch was connected to (when known).
- A capture whose server sent bytes past the end of its message (more than its ``Content-Length``)
  carries ``WARC-Strata-Note: content-length-surplus (at least N bytes past the end of the message;
  connection closed)``: the block holds the message as its framing says, and the surplus, which
  HTTP gives no meaning, is not stored. (``WARC-Truncated`` would say the harvester cut the block
  short, which it did not.) The field's first word is the machine-readable part.
- ``identical_revisit``: WARC 1.1 identical-payload-digest profile, HTTP headers kept,
  ``WARC-Truncated: length`` (the block stops before the payload), and the three Refers-To headers
  pywb needs to find the original in the same collection.
- ``not_modified_revisit``: a 304 recorded as a server-not-modified revisit with an empty block, the
  original's payload digest and the three Refers-To headers, so pywb replays the original as 200.
- ``resource_revisit``: a browser page's screenshot or text record whose payload an earlier record
  holds, as an identical-payload revisit with an empty block.
- ``run_record``: the run's report, a ``metadata`` record (``index.capture.runhistory``).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import typing
import uuid
from typing import Any
from urllib.parse import quote

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvester.fetchresult import FetchResult, header_value
from index.capture.profiles import SERVER_NOT_MODIFIED
from index.storage.state import Original

_BUILDER = WARCWriter(None, gzip=True, warc_version="1.1")
#: A record to write: warcio's ``ArcWarcRecord`` (untyped) or a ``PreparedRecord``
Record = Any
_ASCII_KEPT = "".join(chr(c) for c in range(0x20, 0x7F))


def _ascii(text: str) -> str:
    """warcio writes an HTTP header block as ASCII and cannot always %-encode what is not (a
    non-ASCII reason phrase or media type makes it raise mid-record). httpx decodes header bytes
    as Latin-1, so those bytes are kept exactly, each byte beyond ASCII %-encoded."""
    return text if text.isascii() else quote(text.encode("latin-1", "replace"), safe=_ASCII_KEPT)


def _http_headers(result: FetchResult) -> StatusAndHeaders:
    statusline = _ascii(f"{result.status} {result.reason}".strip())
    return StatusAndHeaders(statusline, [(k, _ascii(v)) for k, v in result.headers], protocol=result.http_version)


def _truncation(result: FetchResult) -> dict[str, str]:
    return {"WARC-Truncated": result.truncated} if result.truncated else {}


def _address(result: FetchResult) -> dict[str, str]:
    return {"WARC-IP-Address": result.ip} if result.ip else {}


SURPLUS_NOTE = "content-length-surplus"


def _notes(result: FetchResult) -> dict[str, str]:
    if not result.surplus:
        return {}
    return {
        "WARC-Strata-Note": f"{SURPLUS_NOTE} (at least {result.surplus} bytes past the end of the message; "
        "connection closed)"
    }


def response_record(result: FetchResult, warc_date: str) -> Record:
    headers = {
        "WARC-Date": warc_date,
        "WARC-Payload-Digest": result.digest,
        **_address(result),
        **_truncation(result),
        **_notes(result),
    }
    assert result.body is not None  # a fetch without an error has a body, empty or not
    result.body.seek(0)
    return _BUILDER.create_warc_record(
        result.url,
        "response",
        payload=result.body,
        length=result.body_length,
        http_headers=_http_headers(result),
        warc_headers_dict=headers,
    )


class PreparedRecord:
    """A record made here as the bytes warcio's builder and writer would write for it, for the two
    records every 304 writes (its revisit and its request). Through warcio the pair cost about 160 us
    (its builder looks each header up in a list, copies, digests the empty payload, formats lines
    one at a time); here it is one join and one SHA-1 of the block. Offers what the rest of the
    harvest reads of a warcio record: ``rec_type``, ``rec_headers`` and ``http_headers``
    (``HeaderList``, or None), and ``data``, the whole uncompressed record for the writer
    (``harvester.warcfile``). Made only when every value is ASCII without CR or LF, where warcio's
    output is exactly this join; anything else goes through warcio as before. The suite compares
    both ways' records byte for byte."""

    __slots__ = ("rec_type", "rec_headers", "http_headers", "data")

    def __init__(
        self, rec_type: str, fields: list[tuple[str, str]], http_headers: HeaderList | None, http_block: bytes
    ):
        fields += [
            ("WARC-Block-Digest", _sha1(http_block)),
            ("Content-Type", _CONTENT_TYPES[rec_type]),
            ("Content-Length", str(len(http_block))),
        ]
        head = "WARC/1.1\r\n" + "".join([f"{name}: {value}\r\n" for name, value in fields]) + "\r\n"
        self.rec_type = rec_type
        self.rec_headers = HeaderList("WARC/1.1", "", fields)
        self.http_headers = http_headers
        self.data = head.encode("ascii") + http_block + b"\r\n\r\n"


class HeaderList:
    """What is read of warcio's ``StatusAndHeaders`` in a record being written: ``protocol``,
    ``statusline``, ``headers`` and ``get_header`` (the first value of a name, in any case)."""

    __slots__ = ("protocol", "statusline", "headers")

    def __init__(self, protocol: str, statusline: str, headers: list[tuple[str, str]]):
        self.protocol = protocol
        self.statusline = statusline
        self.headers = headers

    def get_header(self, name: str, default: str | None = None) -> str | None:
        return header_value(self.headers, name, default)


_CONTENT_TYPES = {"request": "application/http; msgtype=request", "revisit": "application/http; msgtype=response"}
_EMPTY_SHA1 = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"  # of no bytes: a request's payload, a 304's block


def _sha1(data: bytes) -> str:
    return _EMPTY_SHA1 if not data else "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def _plain(values: typing.Iterable[str]) -> bool:
    """Whether warcio would write each value as it is: ASCII, and no CR or LF (which no value here
    should hold, but warcio would write into the header block)."""
    return all(value.isascii() and "\r" not in value and "\n" not in value for value in values)


def _warc_id() -> str:
    return f"<urn:uuid:{uuid.uuid4()}>"  # warcio's make_warc_id


def request_record(result: FetchResult, warc_date: str, concurrent_to: str) -> Record:
    method, _, rest = result.request_line.partition(" ")
    fields = [("WARC-Date", warc_date), ("WARC-Concurrent-To", concurrent_to), *_address(result).items()]
    if (
        method
        and rest
        and _plain([result.url, result.request_line, *(v for f in fields for v in f)])
        and _plain([text for header in result.request_headers for text in header])
    ):
        block = "".join([result.request_line, "\r\n", *[f"{k}: {v}\r\n" for k, v in result.request_headers], "\r\n"])
        http = HeaderList(method, rest, result.request_headers)
        fields += [
            ("WARC-Type", "request"),
            ("WARC-Record-ID", _warc_id()),
            ("WARC-Target-URI", result.url),
            ("WARC-Payload-Digest", _EMPTY_SHA1),
        ]
        return PreparedRecord("request", fields, http, block.encode("ascii"))
    return built_request_record(result, warc_date, concurrent_to)


def built_request_record(result: FetchResult, warc_date: str, concurrent_to: str) -> Record:
    """``request_record`` through warcio's builder."""
    # is_http_request: warcio splits the method off as its "protocol" and writes the line back whole
    http = StatusAndHeaders(result.request_line, list(result.request_headers), is_http_request=True)
    return _BUILDER.create_warc_record(
        result.url,
        "request",
        http_headers=http,
        warc_headers_dict={"WARC-Date": warc_date, "WARC-Concurrent-To": concurrent_to, **_address(result)},
    )


def identical_revisit(result: FetchResult, warc_date: str, original: Original) -> Record:
    record = _BUILDER.create_revisit_record(
        result.url,
        result.digest,
        original.url,
        original.warc_date,
        http_headers=_http_headers(result),
        warc_headers_dict={"WARC-Date": warc_date, **_address(result), **_notes(result)},
    )
    record.rec_headers.add_header("WARC-Refers-To", original.record_id)
    record.rec_headers.add_header("WARC-Truncated", "length")
    return record


def not_modified_revisit(result: FetchResult, warc_date: str, original: Original, digest: str) -> Record:
    fields = [("WARC-Date", warc_date), *_address(result).items(), *_notes(result).items()]
    refers = [original.url, original.warc_date, original.record_id]
    if digest and _plain([result.url, digest, *refers, *(v for f in fields for v in f)]):
        fields += [
            ("WARC-Type", "revisit"),
            ("WARC-Record-ID", _warc_id()),
            ("WARC-Target-URI", result.url),
            ("WARC-Profile", SERVER_NOT_MODIFIED.uri),
            ("WARC-Refers-To-Target-URI", original.url),
            ("WARC-Refers-To-Date", original.warc_date),
            ("WARC-Payload-Digest", digest),
            ("WARC-Refers-To", original.record_id),
        ]
        return PreparedRecord("revisit", fields, None, b"")
    return built_not_modified_revisit(result, warc_date, original, digest)


def built_not_modified_revisit(result: FetchResult, warc_date: str, original: Original, digest: str) -> Record:
    """``not_modified_revisit`` through warcio's builder."""
    record = _BUILDER.create_revisit_record(
        result.url,
        digest,
        original.url,
        original.warc_date,
        http_headers=None,
        warc_headers_dict={"WARC-Date": warc_date, **_address(result), **_notes(result)},
    )
    record.rec_headers.replace_header("WARC-Profile", SERVER_NOT_MODIFIED.uri)
    record.rec_headers.add_header("WARC-Refers-To", original.record_id)
    return record


def resource_revisit(resource: Record, digest: str, original: Original) -> Record:
    """A ``resource`` record (a browser page's screenshot or text, ``harvester.browser.records``)
    whose payload an earlier record holds, as an identical-payload revisit of it: its own URI, date
    and other WARC headers, an empty block, the three Refers-To headers."""
    kept = {
        name: value
        for name, value in resource.rec_headers.headers
        if name.startswith("WARC-") and name not in _RESOURCE_OWN
    }
    record = _BUILDER.create_revisit_record(
        resource.rec_headers.get_header("WARC-Target-URI"),
        digest,
        original.url,
        original.warc_date,
        http_headers=None,
        warc_headers_dict=kept,
    )
    record.rec_headers.add_header("WARC-Refers-To", original.record_id)
    return record


# What a revisit has of its own, not its resource's
_RESOURCE_OWN = {"WARC-Type", "WARC-Record-ID", "WARC-Target-URI", "WARC-Payload-Digest", "WARC-Block-Digest"}


def run_record(uri: str, report: bytes | typing.BinaryIO, warc_date: str) -> Record:
    """A run's report (``index.capture.runhistory``): a ``metadata`` record of ``application/json``; the
    report as bytes or as a file positioned at its start (read to its end)."""
    if isinstance(report, bytes):
        payload, length = typing.cast(typing.BinaryIO, io.BytesIO(report)), len(report)
    else:
        payload, length = report, os.fstat(report.fileno()).st_size - report.tell()
    return _BUILDER.create_warc_record(
        uri,
        "metadata",
        payload=payload,
        length=length,
        warc_content_type="application/json",
        warc_headers_dict={"WARC-Date": warc_date},
    )


def record_id(record: Record) -> str:
    return str(record.rec_headers.get_header("WARC-Record-ID"))

"""The bytes replay sends for a record's payload: what was stored, never more than it can stand for.

pywb keeps the archived ``Content-Length`` whenever it sends the payload without rewriting it, and
the archived ``Content-Encoding`` whenever the client accepts that encoding. Both can be untrue of
what was stored:

- ArchiveWeb.page and pywacz store bodies already decoded, and keep the HTTP headers of the
  encoded transfer: ``pywacz-example-iana.warc`` holds ``https://example.com/`` as 1,256 bytes of
  HTML under ``Content-Length: 648`` (the gzip size), with no ``Content-Encoding``;
  ``pywacz-example-warcinfo-metadata.warc`` holds the same 1,256 bytes under ``Content-Encoding:
  gzip`` and ``Content-Length: 648``. pywb announced 648 bytes and sent 1,256 (the client reads 648
  and takes the rest for the next response), and told the browser to gunzip plain HTML;
- a truncated record (``WARC-Truncated``) stores fewer bytes than its ``Content-Length`` says.

So ``settle_length``, once pywb has decided what it sends: a payload passed as stored goes out with
the length of what is stored, and without a ``Content-Encoding`` it does not have (its first bytes
do not decode so); a decoded or rewritten body goes out without a length (chunked).

Decoding is bounded (``bound_decoding``): pywb decodes a ``Content-Encoding`` before it rewrites, and
when the client does not accept the encoding. A 204 KB gzip page that inflates to 200 MB was sent
inflated to every reader. The decoded stream of a record may now give at most
``max(MIN_DECODED, RATIO * stored bytes)``; past that it raises ``Overexpanded`` and the response is
cut off (the connection closes: the reader sees an incomplete page, not a complete wrong one). A
client that accepts the stored encoding gets the payload as stored, encoded, when it is not
rewritten (pywb's own behaviour, kept).
"""

from __future__ import annotations

import logging

from warcio.bufferedreaders import BufferedReader

log = logging.getLogger(__name__)

RATIO = 32  # decoded bytes a stored byte may stand for (HTML and JSON inflate 5 to 20 times)
MIN_DECODED = 16 * 1024 * 1024  # small payloads may inflate this far whatever their ratio
_PEEK = 512
YIELD_EVERY = 256 * 1024


def _let_others_run() -> None:
    import gevent  # replay runs on gevent's server (replay.server); elsewhere this returns at once

    gevent.sleep(0)


class Overexpanded(Exception):
    """A decoded payload past its bound: the response is cut off."""


def stored_length(record) -> int | None:
    """The bytes of the payload left to read as stored (after the HTTP headers), when known."""
    limit = getattr(record.raw_stream, "limit", None)
    return limit if isinstance(limit, int) and limit >= 0 else None


class _CappedReader:
    """A decoded stream that raises ``Overexpanded`` past ``cap`` bytes, and lets the server's other
    requests run every ``YIELD_EVERY`` bytes: a local client reads as fast as the page is rewritten,
    so the socket never blocks and nothing else would run until the whole body was sent."""

    def __init__(self, stream, cap: int, url: str):
        self.stream, self.cap, self.url, self.given = stream, cap, url, 0
        self.next_yield = YIELD_EVERY

    def _count(self, data: bytes) -> bytes:
        self.given += len(data)
        if self.given >= self.next_yield:
            self.next_yield = self.given + YIELD_EVERY
            _let_others_run()
        if self.given > self.cap:
            log.warning("replay of %s cut off: it decodes to more than %d bytes", self.url, self.cap)
            raise Overexpanded(f"{self.url} decodes to more than {self.cap} bytes")
        return data

    def read(self, size: int = -1) -> bytes:
        return self._count(self.stream.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._count(self.stream.readline(size))

    def close(self) -> None:
        self.stream.close()


def bound_decoding(record) -> None:
    """Make ``record.content_stream()`` (what pywb reads to rewrite or decode) raise past the bound."""
    if not record.http_headers or not record.http_headers.get_header("Content-Encoding"):
        return
    stored = stored_length(record)
    cap = max(MIN_DECODED, RATIO * stored) if stored is not None else MIN_DECODED
    opened = record.content_stream
    url = record.rec_headers.get_header("WARC-Target-URI") or "a capture"

    def content_stream():
        return _CappedReader(opened(), cap, url)

    record.content_stream = content_stream


def _decodes(data: bytes, encoding: str) -> bool:
    """Whether ``data``, the first bytes of a payload, start a stream in ``encoding``."""
    factory = BufferedReader.DECOMPRESSORS.get(encoding)
    if factory is None:
        return True  # an encoding warcio does not know: not ours to judge
    try:
        factory().decompress(data)
    except Exception:  # zlib.error, brotli.error: each decoder raises its own
        if encoding == "deflate":  # servers send raw deflate as often as zlib's (warcio tries both)
            return _decodes(data, "deflate_alt")
        return False
    return True


def settle_length(rwinfo, headers) -> None:
    """``Content-Length`` and ``Content-Encoding`` as true of the body pywb is about to send
    (``headers``: the rewritten ``StatusAndHeaders``)."""
    if rwinfo.is_content_rw or rwinfo.is_chunked:  # decoded, rewritten or de-chunked: sent chunked
        headers.remove_header("Content-Length")
        return
    record = rwinfo.record
    stored = stored_length(record)
    encoding = (headers.get_header("Content-Encoding") or "").strip().lower()
    if encoding and encoding != "identity" and stored:
        first = record.raw_stream.read(min(_PEEK, stored))
        record.raw_stream = BufferedReader(record.raw_stream, starting_data=first)
        if first and not _decodes(first, encoding):
            headers.remove_header("Content-Encoding")  # stored decoded, as some recorders do
    if stored is None:
        headers.remove_header("Content-Length")
    else:
        headers.replace_header("Content-Length", str(stored))

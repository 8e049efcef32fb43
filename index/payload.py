"""Reading stored payloads back: a record at an offset, and content decoding through capped decoders.

Bodies are stored exactly as received (often gzip or brotli). Anything that needs the text (link
extraction of a page answered 304, full-text indexing) decodes through here, with an output cap:
421 bytes of brotli can inflate to 256 MiB.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

DEFAULT_MAX_DECODED = 20 * 1024 * 1024


class DecodeError(ValueError):
    pass


def decode_content(raw: bytes, content_encoding: str | None, max_out: int = DEFAULT_MAX_DECODED) -> bytes:
    """Undo ``Content-Encoding`` (gzip, deflate, br, identity; stacked codings right to left),
    returning at most ``max_out`` bytes. Unknown codings raise ``DecodeError``."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    data = raw
    for coding in reversed(codings):
        if coding in ("identity", ""):
            continue
        if coding in ("gzip", "x-gzip"):
            data = _zlib_capped(data, 16 + zlib.MAX_WBITS, max_out)
        elif coding == "deflate":
            try:
                data = _zlib_capped(data, zlib.MAX_WBITS, max_out)
            except DecodeError:
                data = _zlib_capped(data, -zlib.MAX_WBITS, max_out)
        elif coding == "br":
            data = _brotli_capped(data, max_out)
        else:
            raise DecodeError(f"unsupported content coding {coding!r}")
    return data[:max_out]


def _zlib_capped(data: bytes, wbits: int, max_out: int) -> bytes:
    try:
        decoder = zlib.decompressobj(wbits)
        out = decoder.decompress(data, max_out)
        return out
    except zlib.error as exc:
        raise DecodeError(f"corrupt compressed body ({exc})") from None


def _brotli_capped(data: bytes, max_out: int) -> bytes:
    # pywb depends on brotlipy, which installs a `brotli` module without output limits; only the
    # official brotli (>= 1.1) can stop at a cap. Without it, refuse rather than risk a bomb: the
    # harvester asks servers for gzip/deflate only, so br bodies are rare.
    import brotli

    decoder = brotli.Decompressor()
    if not hasattr(decoder, "can_accept_more_data"):
        raise DecodeError("brotli body not decoded: no brotli decoder with an output cap is installed")
    try:
        out = bytearray()
        pos, step = 0, 4096
        while len(out) < max_out:
            if decoder.can_accept_more_data():
                if pos >= len(data):
                    break
                chunk, pos = data[pos : pos + step], pos + step
            else:
                chunk = b""
            out += decoder.process(chunk, output_buffer_limit=max_out - len(out))
        return bytes(out[:max_out])
    except brotli.error as exc:
        raise DecodeError(f"corrupt brotli body ({exc})") from None


def read_record(warc_path: Path, offset: int) -> tuple[Any, Any, bytes]:
    """(rec_headers, http_headers, raw payload bytes) of the record at ``offset``."""
    with open(warc_path, "rb") as fh:
        fh.seek(offset)
        for record in ArchiveIterator(fh):
            return record.rec_headers, record.http_headers, record.raw_stream.read()
    raise FileNotFoundError(f"no record at offset {offset} of {warc_path}")

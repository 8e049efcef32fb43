"""The query string of a link, encoded in its document's encoding, as browsers request it.

The URL standard encodes the path of an http(s) URL as UTF-8 but its query in the encoding of the
document the link is in: on a GBK page ``<a href="?s=大">`` is requested as ``?s=%B4%F3``, on a
UTF-8 page as ``?s=%E5%A4%A7``. Servers of legacy sites decode the query that way, so a crawler
that sends UTF-8 archives URLs no browser asks for. :func:`encode_query` rewrites the non-ASCII
characters of an ``href``'s query into percent-encoded bytes of the document's encoding before
:func:`strata.urls.normalize_url` sees it (which then keeps existing ``%XX`` escapes and
encodes the rest as UTF-8, as before). What the encoding cannot represent becomes ``%26%23N%3B``
(``&#N;``, the standard's "percent-encode after encoding"); a byte that the encoding puts in the
ASCII range stays a character unless the query percent-encode set names it (Shift_JIS ``表`` is
``95 5C``: ``%95\\``), which is what Chromium sends (checked on tests/cjk_site.py).

Codecs are Python's, chosen by :func:`strata.charset.sniff_html` (``DocumentCharset.query_codec``),
adjusted where the standard's encoders differ from Python's: ``gbk`` writes ``€`` as ``80``
(Chromium does), windows-1252 writes U+0080..U+009F as their byte (it decoded them so).
Link extraction calls this only for non-ASCII ``href`` values on pages not in UTF-8, so the hot
path costs one ``str.isascii`` per link.
"""

from __future__ import annotations

import re

__all__ = ["encode_query"]

_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# Bytes the URL standard's special-query percent-encode set names (besides those above 0x7E).
_QUERY_SET = frozenset(b" \"#<>'") | frozenset(range(0x21)) | {0x7F}
_UTF8_CODECS = frozenset({"utf-8", "utf_8", "utf8"})
_EXTRA = {"gbk": {"\u20ac": b"\x80"}}


def encode_query(href: str, codec: str) -> str:
    """Return *href* with the non-ASCII characters of its query percent-encoded in *codec*.

    The query runs from the first ``?`` to the first ``#`` after it; an ``href`` without one, or
    with only ASCII in it, is returned as is, and so is every ``href`` when *codec* is UTF-8.
    Never raises.
    """
    if codec in _UTF8_CODECS:
        return href
    start = href.find("?")
    if start < 0:
        return href
    hash_at = href.find("#")
    if 0 <= hash_at < start:
        return href  # the "?" is in the fragment
    end = hash_at if hash_at >= 0 else len(href)
    query = href[start + 1 : end]
    if query.isascii():
        return href
    encoded = _NON_ASCII.sub(lambda match: _encode_run(match.group(0), codec), query)
    return href[: start + 1] + encoded + href[end:]


def _encode_run(text: str, codec: str) -> str:
    try:
        return _percent(text.encode(codec))
    except UnicodeEncodeError:
        pass
    except LookupError:
        codec = "utf-8"
    out = []
    extra = _EXTRA.get(codec, {})
    for char in text:
        if "\ud800" <= char <= "\udfff":
            char = "\ufffd"  # a lone surrogate: the DOM hands the URL parser U+FFFD
        data = extra.get(char)
        if data is None:
            try:
                data = char.encode(codec)
            except UnicodeEncodeError:
                data = bytes([ord(char)]) if codec == "cp1252" and "\x80" <= char <= "\x9f" else None
        out.append(f"%26%23{ord(char)}%3B" if data is None else _percent(data))
    return "".join(out)


def _percent(data: bytes) -> str:
    return "".join(f"%{byte:02X}" if byte > 0x7E or byte in _QUERY_SET else chr(byte) for byte in data)

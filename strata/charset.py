"""Character-set detection for fetched HTML and CSS, shared by link and text extraction.

The order follows the HTML standard's "encoding sniffing" in the parts that
matter for archived pages: a byte-order mark wins, then the charset of the
``Content-Type`` header, then a ``<meta charset>`` or ``<meta http-equiv>``
declaration near the top of the document, then UTF-8. CSS uses ``@charset``
instead of ``<meta>``.

Labels are mapped the way browsers map them (``gb2312`` is read as GB18030,
``iso-8859-1`` as windows-1252, ``shift_jis`` as cp932 ...) because pages
labelled with the narrow charset routinely use the wide one. A label Python
does not know (``LookupError``) is skipped rather than trusted, so the answer
is always a codec that :func:`bytes.decode` accepts. Decode with
``errors="replace"``: the result is never a reason to raise.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["codec_for_label", "css_charset", "decode", "html_charset"]

#: How far into an HTML document a ``<meta>`` charset declaration is looked for.
#: The standard says 1,024 bytes; real pages put long comments and scripts first.
META_SCAN_BYTES = 8192

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# WHATWG labels that Python does not know under that name.
_EXTRA_LABELS = {
    "x-gbk": "gbk",
    "csgb2312": "gb2312",
    "iso-ir-58": "gb2312",
    "x-x-big5": "big5",
    "big5-hkscs": "big5hkscs",
    "x-sjis": "shift_jis",
    "windows-31j": "cp932",
    "windows-874": "cp874",
    "x-mac-roman": "mac-roman",
    "unicode-1-1-utf-8": "utf-8",
    "x-unicode20utf8": "utf-8",
}
# Python codec -> the wider codec browsers decode that label with (WHATWG Encoding).
_BROWSER_CODECS = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "big5": "big5hkscs",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "ascii": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "tis-620": "cp874",
    "iso8859-11": "cp874",
}
# Text codecs that are not web charsets (browsers refuse UTF-7 for safety).
_NOT_CHARSETS = {"idna", "punycode", "undefined", "unicode-escape", "raw-unicode-escape", "utf-7"}
# A document that can be read as ASCII cannot really be UTF-16 (HTML standard).
_META_IMPOSSIBLE = {"utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"}
_META_CHARSET = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]{1,40})""", re.I)
_CSS_CHARSET = re.compile(rb'@charset "([A-Za-z0-9_.:\-]{1,40})";')


def codec_for_label(label: str | bytes | None) -> str | None:
    """Return the Python codec name for a charset label, or ``None`` if unknown."""
    if isinstance(label, bytes):
        label = label.decode("ascii", "replace")
    if not isinstance(label, str):
        return None
    label = label.strip().strip("\"'").strip().lower()
    if not label:
        return None
    try:
        info = codecs.lookup(_EXTRA_LABELS.get(label, label))
    except (LookupError, ValueError):  # ValueError: embedded NUL and such
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_CHARSETS:
        return None
    return _BROWSER_CODECS.get(info.name, info.name)


def html_charset(body: bytes, header_charset: str | None = None) -> str:
    """Return the codec to decode an HTML *body* with (BOM, header, meta, utf-8)."""
    bom = _bom_codec(body)
    if bom:
        return bom
    codec = codec_for_label(header_charset)
    if codec:
        return codec
    for match in _META_CHARSET.finditer(body[:META_SCAN_BYTES]):
        codec = codec_for_label(match.group(1))
        if codec:
            return "utf-8" if codec in _META_IMPOSSIBLE else codec
    return "utf-8"


def css_charset(body: bytes, header_charset: str | None = None) -> str:
    """Return the codec to decode a stylesheet (BOM, header, ``@charset``, utf-8)."""
    bom = _bom_codec(body)
    if bom:
        return bom
    codec = codec_for_label(header_charset)
    if codec:
        return codec
    match = _CSS_CHARSET.match(body)
    if match:
        codec = codec_for_label(match.group(1))
        if codec:
            return "utf-8" if codec in _META_IMPOSSIBLE else codec
    return "utf-8"


def decode(body: bytes, codec: str) -> str:
    """Decode *body* with *codec*, replacing what does not decode; drops a BOM."""
    try:
        text = body.decode(codec, errors="replace")
    except (LookupError, UnicodeError):  # a codec that cannot replace
        text = body.decode("utf-8", errors="replace")
    return text[1:] if text.startswith("\ufeff") else text


def _bom_codec(body: bytes) -> str | None:
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return codec
    return None

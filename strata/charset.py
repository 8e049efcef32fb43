"""Character-set detection for fetched HTML and CSS, shared by link and text extraction and change detection.

The order follows the HTML standard's "encoding sniffing" as Chromium implements it (checked in
Chromium against the pages of ``tests/cjk_site.py``): a byte-order mark wins, then the charset of
the ``Content-Type`` header (even when it is wrong: the browser believes it, and so the links it
follows are the ones the header implies), then a ``<meta charset>`` or ``<meta http-equiv>``
declaration in the first 1,024 bytes or further on while still in ``<head>`` (Chromium honours one
after a 9,000-byte comment in ``<head>``, not one after 1,024 bytes of ``<body>``), then detection:
a body that is valid UTF-8 is read as UTF-8 (Chromium refuses to detect UTF-8 on the web and would
show windows-1252 mojibake; the author meant UTF-8), anything else goes through charset-normalizer,
and what it cannot name is read as windows-1252, the browsers' default for undeclared pages here.
CSS uses ``@charset`` instead of ``<meta>`` and is not detected.

Labels are mapped the way browsers map them (``gb2312`` and ``gbk`` are read as GB18030,
``iso-8859-1`` and ``ascii`` as windows-1252, ``shift_jis`` as cp932 ...) because pages labelled
with the narrow charset routinely use the wide one. Decoding and encoding differ for GBK: the URL
standard encodes a link's query in the document's encoding, and its GBK *encoder* cannot write
GB18030's four-byte characters; Chromium's detector names undeclared Chinese pages GBK.
:func:`sniff_html` therefore returns both codecs. A label Python does not know (``LookupError``)
is skipped rather than trusted, so the answer is always a codec that :func:`bytes.decode` accepts.
Decode with :func:`decode`: it replaces what does not decode, never raises, and reads windows-1252
as browsers do (the five bytes that code page leaves undefined become C1 controls).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = [
    "DocumentCharset",
    "charset_param",
    "codec_for_label",
    "css_charset",
    "decode",
    "detect_codec",
    "html_charset",
    "sniff_html",
]

#: A ``<meta>`` charset declaration counts in the first 1,024 bytes (the standard's prescan) ...
PRESCAN_BYTES = 1024
#: ... and further on while the document is still in ``<head>``, up to this many bytes.
META_SCAN_BYTES = 64 * 1024
#: How much of an undeclared body is checked for UTF-8 and handed to the detector.
UTF8_CHECK_BYTES = 64 * 1024
DETECT_BYTES = 16 * 1024
#: Fewer non-ASCII bytes than this are too little evidence: the default (windows-1252) is kept.
DETECT_MIN_BYTES = 32

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
_HTTP_WHITESPACE = " \t\r\n"
# What a parameter value may hold (the standard's "HTTP quoted-string token code points").
_QUOTABLE = re.compile("[\t\x20-\x7e\x80-\xff]*")
# Python codec (before widening) -> the codec a link's query is encoded with, when not the decoder.
_QUERY_CODECS = {"gb2312": "gbk", "gbk": "gbk"}
_CHINESE = {"gb2312", "gbk", "gb18030", "hz"}
_ASCII = bytes(range(0x80))
_HEAD_END = re.compile(rb"<body[\s>/]|</head\s*>", re.I)
# windows-1252 as browsers read it: Python's cp1252 leaves 0x81, 0x8D, 0x8F, 0x90 and 0x9D undefined.
_CP1252 = {i: bytes([i]).decode("cp1252", "ignore") or chr(i) for i in range(0x80, 0xA0)}
_META_CHARSET = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]{1,40})""", re.I)
# What the Encoding standard's labels are made of.
_LABEL = re.compile(r"[a-z0-9_.:\-]+")
_CSS_CHARSET = re.compile(rb'@charset "([A-Za-z0-9_.:\-]{1,40})";')


@dataclass(frozen=True, slots=True)
class DocumentCharset:
    """How a browser reads an HTML document: *codec* decodes it, *query_codec* encodes the query
    strings of its links (URL standard), *source* says what decided: ``"bom"``, ``"header"``,
    ``"meta"``, ``"detected"`` or ``"default"``."""

    codec: str
    query_codec: str
    source: str


def codec_for_label(label: str | bytes | None) -> str | None:
    """Return the Python codec name for a charset label, or ``None`` if unknown."""
    name = _lookup(label)
    return None if name is None else _BROWSER_CODECS.get(name, name)


def _charset_for_label(label: str | bytes | None, source: str) -> DocumentCharset | None:
    name = _lookup(label)
    if name is None:
        return None
    codec = _BROWSER_CODECS.get(name, name)
    if source == "meta" and codec in _META_IMPOSSIBLE:
        return DocumentCharset("utf-8", "utf-8", source)
    query = "utf-8" if codec in _META_IMPOSSIBLE else _QUERY_CODECS.get(name, codec)
    return DocumentCharset(codec, query, source)


def _lookup(label: str | bytes | None) -> str | None:
    if isinstance(label, bytes):
        label = label.decode("ascii", "replace")
    if not isinstance(label, str):
        return None
    label = label.strip(" \t\n\f\r").lower()  # the Encoding standard's "get an encoding"
    if not _LABEL.fullmatch(label):  # Python's lookup would also take "'gbk'" or "gbk!"; browsers do not
        return None
    try:
        info = codecs.lookup(_EXTRA_LABELS.get(label, label))
    except (LookupError, ValueError):  # ValueError: embedded NUL and such
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_CHARSETS:
        return None
    return info.name


def charset_param(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a ``Content-Type`` value as a browser reads it, or ``None``.

    The parameters are parsed as the WHATWG MIME Sniffing standard parses a MIME type's, which is
    what Chromium does (``tests/browser/test_content_type_chromium.py`` asks it on each case; neither
    werkzeug's ``parse_options_header`` nor ``email.message`` agrees with it, see that test): a parameter
    follows a ``;``; its name runs to the ``=``, so ``charset = gbk`` names none; a quoted value may hold
    ``;`` and backslash escapes, and what follows its closing quote is ignored; single quotes are
    not quotes; the first valid ``charset`` wins, even an empty quoted one. The one reader of this
    parameter for the harvester, the full-text index and replay, so all three read a page in the
    charset the browser does.
    """
    text = content_type or ""
    size = len(text)
    pos = text.find(";")
    if pos < 0:
        return None
    while pos < size:
        pos += 1  # past the ";"
        while pos < size and text[pos] in _HTTP_WHITESPACE:
            pos += 1
        end = pos
        while end < size and text[end] not in ";=":
            end += 1
        name, pos = text[pos:end].lower(), end
        if pos >= size:
            break
        if text[pos] == ";":
            continue
        pos += 1  # past the "="
        if pos >= size:
            break
        if text[pos] == '"':
            value, pos = _quoted_string(text, pos)
            while pos < size and text[pos] != ";":
                pos += 1
        else:
            end = text.find(";", pos)
            end = size if end < 0 else end
            value, pos = text[pos:end].rstrip(_HTTP_WHITESPACE), end
            if not value:
                continue
        if name == "charset" and _QUOTABLE.fullmatch(value):
            return value or None
    return None


def _quoted_string(text: str, pos: int) -> tuple[str, int]:
    """The value of the HTTP quoted string starting at the ``"`` at *pos*, and the position after it."""
    value: list[str] = []
    pos += 1
    size = len(text)
    while pos < size:
        char = text[pos]
        if char == '"':
            return "".join(value), pos + 1
        if char == "\\":
            pos += 1
            if pos >= size:
                value.append("\\")
                break
            char = text[pos]
        value.append(char)
        pos += 1
    return "".join(value), pos


def html_charset(body: bytes, header_charset: str | None = None) -> str:
    """Return the codec to decode an HTML *body* with (see :func:`sniff_html`)."""
    return sniff_html(body, header_charset).codec


def sniff_html(body: bytes, header_charset: str | None = None) -> DocumentCharset:
    """Decide how a browser reads an HTML *body*: BOM, header, ``<meta>``, then detection."""
    bom = _bom_codec(body)
    if bom:
        return DocumentCharset(bom, "utf-8", "bom")
    found = _charset_for_label(header_charset, "header")
    if found:
        return found
    head = body[:META_SCAN_BYTES]
    end = _HEAD_END.search(head)
    if end is not None:
        head = head[: max(PRESCAN_BYTES, end.start())]
    for match in _META_CHARSET.finditer(head):
        found = _charset_for_label(match.group(1), "meta")
        if found:
            return found
    return _detected(body)


def detect_codec(body: bytes) -> str:
    """The codec of an undeclared *body*: UTF-8 when it is valid UTF-8, else charset-normalizer's
    guess, else windows-1252 (the last step of :func:`sniff_html`)."""
    return _detected(body).codec


def _detected(body: bytes) -> DocumentCharset:
    if _is_utf8(body[:UTF8_CHECK_BYTES]):
        return DocumentCharset("utf-8", "utf-8", "detected")
    sample = body[:DETECT_BYTES]
    best = None
    if len(sample.translate(None, _ASCII)) >= DETECT_MIN_BYTES:  # the non-ASCII bytes
        from charset_normalizer import from_bytes  # ~30 ms to import: only undeclared legacy pages pay it

        best = from_bytes(sample).best()
    name = _lookup(best.encoding) if best is not None else None
    if name in _CHINESE:
        return DocumentCharset("gb18030", "gbk", "detected")  # Chromium's detector says GBK
    if name is not None:
        codec = _BROWSER_CODECS.get(name, name)
        if codec not in _META_IMPOSSIBLE:  # browsers never detect UTF-16 without a BOM
            return DocumentCharset(codec, codec, "detected")
    return DocumentCharset("cp1252", "cp1252", "default")


def _is_utf8(sample: bytes) -> bool:
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(sample) - 3 and exc.reason == "unexpected end of data"  # cut by the sample
    return True


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
    if codec == "cp1252":
        return body.decode("latin-1").translate(_CP1252)
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

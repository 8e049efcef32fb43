"""The charset a browser reads an archived HTML page with, decided before the banner goes in.

Browsers take a page's encoding from its byte-order mark, else from the ``charset`` of
``Content-Type``, else from a ``<meta charset>`` / ``<meta http-equiv>`` in the first 1,024 bytes,
else they detect it (Chromium does for undeclared CJK pages). The replay banner (about 3 KB,
inserted at the top of ``<head>``) pushes a page's ``<meta>`` past those 1,024 bytes, and its
markup changes what a detector sees, so without help Chromium reads a UTF-8 page declared only by
``<meta>`` as windows-1252 and a GB18030 one as GBK, and links then carry their query in the wrong
encoding. ``page_charset`` decides as the browser did on the live page, from the archived bytes;
the replayed response then says it in its ``Content-Type``, where nothing can push it away.

A valid header charset is what the browser used: nothing is decided (``None``). A declared
``<meta>`` label is kept as written (``gb2312`` stays ``gb2312``: the browser's GBK, as live).
Detection: pure ASCII decides nothing (the page reads the same in any ASCII-compatible charset);
valid UTF-8 is UTF-8; anything else is charset-normalizer's best guess, as a WHATWG label (a GBK
guess that fits GBK is ``gbk``, as Chromium reports it, else ``gb18030``).
"""

from __future__ import annotations

import codecs
import dataclasses
import re

from harvester.charset import codec_for_label

#: Where a browser looks for ``<meta charset>`` (WHATWG "prescan a byte stream").
META_BYTES = 1024
#: How much of an undeclared page detection reads (Chromium's detector sees the first chunk).
DETECT_BYTES = 65536

_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16le"), (codecs.BOM_UTF16_BE, "utf-16be"))
_META = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]{1,40})""", re.I)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?([^"';\s]+)""", re.I)
# Python codec names -> the WHATWG label a browser knows the encoding by.
_LABELS = {
    "utf-8": "utf-8", "gb18030": "gb18030", "gbk": "gbk", "gb2312": "gbk", "cp932": "shift_jis",
    "shift_jis": "shift_jis", "shift_jis_2004": "shift_jis", "shift_jisx0213": "shift_jis", "euc_jp": "euc-jp",
    "iso2022_jp": "iso-2022-jp", "big5": "big5", "big5hkscs": "big5", "cp949": "euc-kr", "euc_kr": "euc-kr",
    "koi8-r": "koi8-r", "koi8-u": "koi8-u", "cp866": "ibm866", "mac-cyrillic": "x-mac-cyrillic",
}
_UTF16_META = {"utf-16", "utf-16-le", "utf-16-be"}  # a <meta> read as ASCII cannot mean UTF-16


@dataclasses.dataclass(frozen=True)
class PageCharset:
    label: str    # what the replayed Content-Type says: charset=<label>
    codec: str    # the Python codec for it


def header_charset(content_type: str | None) -> str | None:
    match = _HEADER_CHARSET.search(content_type or "")
    return match.group(1) if match else None


def page_charset(head: bytes, content_type: str | None) -> PageCharset | None:
    """The charset to declare for a page whose body starts with ``head`` (up to ``DETECT_BYTES``),
    or None when the archived response already says it (a BOM, a valid header charset) or when
    nothing can be decided."""
    if head.startswith(tuple(bom for bom, _ in _BOMS)):
        return None
    if codec_for_label(header_charset(content_type)):
        return None
    for match in _META.finditer(head[:META_BYTES]):
        label = match.group(1).decode("ascii")
        codec = codec_for_label(label)
        if codec:
            if codec in _UTF16_META or label.lower() in _UTF16_META:
                return PageCharset("utf-8", "utf-8")
            return PageCharset(label, codec)
    return detect(head[:DETECT_BYTES])


def detect(sample: bytes) -> PageCharset | None:
    if sample.isascii():
        return None
    try:
        sample.decode("utf-8")
        return PageCharset("utf-8", "utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 3 and exc.reason == "unexpected end of data":  # cut by the sample
            return PageCharset("utf-8", "utf-8")
    from charset_normalizer import from_bytes  # comes with requests, a pywb dependency; loads slowly

    best = from_bytes(sample).best()
    if best is None:
        return None
    codec = codecs.lookup(best.encoding).name
    if codec in ("gb18030", "gbk", "gb2312"):
        codec = "gbk" if _fits(sample, "gbk") else "gb18030"
    label = _LABELS.get(codec) or _whatwg_label(codec)
    return PageCharset(label, codec_for_label(label) or codec) if label else None


def _fits(sample: bytes, codec: str) -> bool:
    try:
        sample.decode(codec)
    except UnicodeDecodeError as exc:
        return exc.start >= len(sample) - 1  # a two-byte character cut by the sample's end
    return True


def _whatwg_label(codec: str) -> str | None:
    """``cp1252`` -> ``windows-1252``, ``iso8859-2`` -> ``iso-8859-2``; None for anything else."""
    if re.fullmatch(r"cp125[0-8]", codec):
        return "windows-" + codec[2:]
    if m := re.fullmatch(r"iso8859-(\d+)", codec):
        return f"iso-8859-{m.group(1)}"
    return None

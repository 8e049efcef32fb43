"""The charset a browser reads an archived HTML page with, decided before the banner goes in.

Browsers take a page's encoding from its byte-order mark, else from the ``charset`` of
``Content-Type``, else from a ``<meta charset>`` / ``<meta http-equiv>`` near the top (Chromium:
anywhere in the head, and within the first 1,024 bytes after that, see ``meta_labels``), else
they detect it (Chromium does for undeclared CJK pages). The replay banner (about 3 KB,
inserted at the top of ``<head>``, a ``<template>`` first) pushes a page's ``<meta>`` past those
1,024 bytes and out of the head as the scan sees it, so without help Chromium reads a UTF-8 page declared only by
``<meta>`` as windows-1252 and a GB18030 one as GBK, and links then carry their query in the wrong
encoding. ``page_charset`` decides as the browser did on the live page, from the archived bytes;
the replayed response then says it in its ``Content-Type``, where nothing can push it away.

A valid header charset is what the browser used: nothing is decided (``None``). A declared
``<meta>`` label is kept as written (``gb2312`` stays ``gb2312``: the browser's GBK, as live).
Undeclared pages: pure ASCII decides nothing (it reads the same in any ASCII-compatible charset);
valid UTF-8 is declared UTF-8 (what the harvester decodes it as, so links match what it stored;
Chromium itself never detects UTF-8 and would show the TLD's legacy default); a page in a legacy
encoding is left to the browser's own detector. Measured on undeclared GBK, Shift_JIS, EUC-JP,
EUC-KR, Big5, windows-1251/1252 pages in Chromium: its detector read 12 of 12 replayed pages (banner
and all) as it read them live, charset-normalizer's guess matched 8 (a five-character GBK page came
out EUC-KR, windows-1252 German as windows-1250). Chromium's detector also weighs the host's
top-level domain: a two-character page reads as GBK under .cn, Shift_JIS under .jp, windows-1252
under the replay host. That residue, very short undeclared pages, is not recovered here.
"""

from __future__ import annotations

import codecs
import dataclasses
import re
from collections.abc import Iterator

from strata.charset import charset_param, codec_for_label

#: Where a browser looks for ``<meta charset>`` once past the head (``meta_labels``).
META_BYTES = 1024
#: How much of an undeclared page is checked for UTF-8.
DETECT_BYTES = 65536

_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16le"), (codecs.BOM_UTF16_BE, "utf-16be"))
_META_CHARSET = re.compile(rb"""charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]{1,40})""", re.I)
_TOKEN = re.compile(rb"<!--|<(/?)([A-Za-z][A-Za-z0-9:-]*)")
# Tags that keep Chromium's scan "in the head"; contents its tokenizer reads as text, not tags.
_HEAD_TAGS = {b"html", b"head", b"meta", b"script", b"noscript", b"style", b"link", b"object", b"title", b"base"}
_RAW_TEXT = {b"script", b"style", b"title", b"textarea", b"xmp", b"iframe", b"noembed", b"noframes"}
_UTF16_META = {"utf-16", "utf-16-le", "utf-16-be"}  # a <meta> read as ASCII cannot mean UTF-16


@dataclasses.dataclass(frozen=True)
class PageCharset:
    label: str  # what the replayed Content-Type says: charset=<label>
    codec: str  # the Python codec for it


def page_charset(head: bytes, content_type: str | None) -> PageCharset | None:
    """The charset to declare for a page whose body starts with ``head`` (up to ``DETECT_BYTES``),
    or None when the archived response already says it (a BOM, a valid header charset) or when
    nothing can be decided."""
    if head.startswith(tuple(bom for bom, _ in _BOMS)):
        return None
    if codec_for_label(charset_param(content_type)):
        return None
    for raw in meta_labels(head[:DETECT_BYTES]):
        label = raw.decode("ascii")
        codec = codec_for_label(label)
        if codec:
            if codec in _UTF16_META or label.lower() in _UTF16_META:
                return PageCharset("utf-8", "utf-8")
            return PageCharset(label, codec)
    return detect(head[:DETECT_BYTES])


def meta_labels(data: bytes) -> Iterator[bytes]:
    """The charset labels of ``<meta>`` tags where Chromium's scan finds them (its
    HTMLMetaCharsetParser): in the head at any depth, skipping comments and the contents of
    script, style, title...; once a tag that does not belong in the head is seen, only within the
    first 1,024 bytes (``META_BYTES``). Measured: a ``<meta>`` after a 2,000-byte comment, script
    or title is used; one in a comment, or after body text past 1,024 bytes, is not."""
    in_head, pos = True, 0
    while (m := _TOKEN.search(data, pos)) is not None:
        if not in_head and m.start() >= META_BYTES:
            return
        if m.group(0) == b"<!--":
            end = data.find(b"-->", m.end())
            if end < 0:
                return
            pos = end + 3
            continue
        close = data.find(b">", m.end())
        if close < 0:
            return
        pos, name = close + 1, m.group(2).lower()
        if m.group(1):  # an end tag
            continue
        if name == b"meta":
            if charset := _META_CHARSET.search(data, m.end(), close):
                yield charset.group(1)
        elif name in _RAW_TEXT:
            closing = re.compile(rb"</" + re.escape(name) + rb"[\s/>]", re.I).search(data, pos)
            if closing is None:
                return
            pos = closing.end()
        if name not in _HEAD_TAGS:
            in_head = False


def detect(sample: bytes) -> PageCharset | None:
    if sample.isascii():
        return None
    try:
        sample.decode("utf-8")
        return PageCharset("utf-8", "utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 3 and exc.reason == "unexpected end of data":  # cut by the sample
            return PageCharset("utf-8", "utf-8")
    return None  # a legacy encoding: the browser's detector reads the replayed page as the live one

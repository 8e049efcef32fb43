"""Two captures of an HTML page as they rendered, with what changed marked in place: on the older
one, the words removed (``<del class="strata-del">``); on the newer, the words added
(``<ins class="strata-ins">``). The changes page shows the two side by side.

The words are those of the page's visible text (text nodes of ``<body>``, not scripts, styles or
templates), in document order, compared with ``difflib`` as ``index.compare.diff`` compares main texts:
each CJK character a word, so Chinese and Japanese changes are marked character by character and
nothing is inserted between them. A page of more than ``MAX_WORDS`` words is shown unmarked (the
comparison is quadratic at worst), and says so.

Archived content is hostile: the marked document keeps no script, frame, object, form target,
event handler, ``javascript:`` address or ``<meta http-equiv>``, and every address it keeps is
rewritten into the archive by ``address(url, mod)`` (the replay address of that URL as of the
capture, pywb's modifier by what refers to it: ``im_`` for images and CSS ``url()``, ``cs_`` for
style sheets); the replay app serves it with a ``sandbox`` Content-Security-Policy besides.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable
from urllib.parse import urljoin

import lxml.html
from lxml import etree

from index.payload import DecodeError, decode_content
from strata.charset import charset_param, decode, html_charset

__all__ = ["MAX_WORDS", "Marked", "mark_pair"]

MAX_WORDS = 20_000
MAX_BYTES = 8 * 1024 * 1024
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]|\w+|[^\w\s]", re.UNICODE)
_SKIP = {"script", "style", "noscript", "template", "textarea", "title", "head", "svg", "math"}
_DROP = ("script", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "portal", "noscript")
_STYLE = (
    "ins.strata-ins{background:#c9f2c9;color:#0b3d0b;text-decoration:none;outline:1px solid #2e8b57}"
    "del.strata-del{background:#f8c9c9;color:#5c0000;text-decoration:line-through}"
)
_CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)|@import\s+(['"])([^'"]+)\3""", re.I)

Address = Callable[[str, str], str]  # (absolute URL, pywb modifier) -> replay address


@dataclasses.dataclass
class Marked:
    old_html: str
    new_html: str
    removed: int  # words
    added: int
    note: str = ""


def mark_pair(
    old: tuple[bytes, str | None, str | None],
    new: tuple[bytes, str | None, str | None],
    base_url: str,
    old_address: Address,
    new_address: Address,
) -> Marked:
    """Each side is (payload, Content-Type, Content-Encoding) of one capture of ``base_url``."""
    old_doc, new_doc = _parse(*old), _parse(*new)
    old_words, new_words = _words(old_doc), _words(new_doc)
    removed = added = 0
    note = ""
    if len(old_words) > MAX_WORDS or len(new_words) > MAX_WORDS:
        note = f"These pages have more than {MAX_WORDS:,} words: they are shown unmarked."
    else:
        matcher = difflib.SequenceMatcher(None, [w[2] for w in old_words], [w[2] for w in new_words], autojunk=False)
        gone: set[int] = set()
        came: set[int] = set()
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op in ("delete", "replace"):
                gone.update(range(i1, i2))
            if op in ("insert", "replace"):
                came.update(range(j1, j2))
        removed, added = len(gone), len(came)
        _wrap(old_words, gone, "del", "strata-del")
        _wrap(new_words, came, "ins", "strata-ins")
    return Marked(
        _finish(old_doc, base_url, old_address), _finish(new_doc, base_url, new_address), removed, added, note
    )


def _parse(body: bytes, content_type: str | None, encoding: str | None):
    try:
        data = decode_content(body or b"", encoding, MAX_BYTES)
    except DecodeError:
        data = b""
    text = decode(data, html_charset(data, charset_param(content_type))) if data else ""
    try:
        doc = lxml.html.document_fromstring(text or "<html><body></body></html>")
    except (etree.ParserError, ValueError):
        doc = lxml.html.document_fromstring("<html><body></body></html>")
    return doc


# (element, "text" | "tail", word, start, end): one word of a text node
_Word = tuple


def _words(doc) -> list[_Word]:
    out: list[_Word] = []
    body = doc.find("body")
    if body is None:
        return out

    def walk(el, skipped: bool) -> None:
        tag = el.tag if isinstance(el.tag, str) else ""
        inside = skipped or tag.lower() in _SKIP
        if not inside and el.text:
            out.extend((el, "text", m.group(), m.start(), m.end()) for m in _WORD.finditer(el.text))
        for child in el:
            walk(child, inside)
            if not inside and child.tail:  # a tail is its parent's text
                out.extend((child, "tail", m.group(), m.start(), m.end()) for m in _WORD.finditer(child.tail))

    walk(body, False)
    return out


def _wrap(words: list[_Word], marked: set[int], tag: str, cls: str) -> None:
    """Wrap the runs of marked words of each text node in ``<tag class=cls>``."""
    runs: dict[tuple[int, str], list[tuple[int, int]]] = {}
    nodes = {}
    for i in sorted(marked):
        el, where, _, start, end = words[i]
        key = (id(el), where)
        nodes[key] = (el, where)
        spans = runs.setdefault(key, [])
        if spans and _only_space_between(el, where, spans[-1][1], start):
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    for key, spans in runs.items():
        el, where = nodes[key]
        _split(el, where, spans, tag, cls)


def _only_space_between(el, where: str, a: int, b: int) -> bool:
    text = el.text if where == "text" else el.tail
    return not (text or "")[a:b].strip()


def _split(el, where: str, spans: list[tuple[int, int]], tag: str, cls: str) -> None:
    """Cut one text node at ``spans``: the text before the first stays, each span becomes a mark
    whose tail is the text up to the next one."""
    text = (el.text if where == "text" else el.tail) or ""
    before, marks, cursor = [], [], 0
    for start, end in spans:
        before.append(text[cursor:start])
        mark = el.makeelement(tag, {"class": cls})
        mark.text = text[start:end]
        marks.append(mark)
        cursor = end
    for n, mark in enumerate(marks):
        mark.tail = before[n + 1] if n + 1 < len(marks) else text[cursor:]
    if where == "text":
        el.text = before[0]
        for n, mark in enumerate(marks):
            el.insert(n, mark)
    else:
        parent = el.getparent()
        el.tail = before[0]
        at = parent.index(el) + 1
        for n, mark in enumerate(marks):
            parent.insert(at + n, mark)


def _finish(doc, base_url: str, address: Address) -> str:
    """The document without anything active, its addresses rewritten into the archive (relative
    ones against the page's own ``<base href>``, which goes with the rest)."""
    base_el = doc.find(".//base[@href]")
    if base_el is not None:
        base_url = urljoin(base_url, base_el.get("href", ""))
    _disarm(doc)
    for el in doc.iter():
        if isinstance(el.tag, str):
            _rewrite_element(el, el.tag.lower(), base_url, address)
    head = doc.find("head")
    if head is None:
        head = doc.makeelement("head", {})
        doc.insert(0, head)
    style = head.makeelement("style", {})
    style.text = _STYLE
    head.append(style)
    head.insert(0, head.makeelement("meta", {"charset": "utf-8"}))
    return lxml.html.tostring(doc, encoding="unicode", doctype="<!DOCTYPE html>")


def _disarm(doc) -> None:
    """No script, frame, object, <base>, <meta http-equiv>, event handler or form target is kept."""
    for el in list(doc.iter(*_DROP)):
        if el.getparent() is not None:
            el.drop_tree()
    for el in list(doc.iter("meta")):
        if el.get("http-equiv") is not None:
            el.drop_tree()
    for el in doc.iter():
        if isinstance(el.tag, str):
            for name in [a for a in el.attrib if a.lower().startswith("on") or a.lower() in ("formaction", "action")]:
                del el.attrib[name]


def _rewrite_element(el, tag: str, base: str, address: Address) -> None:
    for attr in ("href", "src", "poster", "background", "srcset", "data-src"):
        value = el.get(attr)
        if value is None:
            continue
        if attr == "srcset":
            el.set(attr, ", ".join(_srcset_item(part, base, address) for part in value.split(",") if part.strip()))
        else:
            el.set(attr, _rewrite(value, base, _modifier(tag, el), address))
    if el.get("style"):
        el.set("style", _css(el.get("style"), base, address))
    if tag == "style" and el.text:
        el.text = _css(el.text, base, address)


def _modifier(tag: str, el) -> str:
    if tag in ("img", "source", "video", "audio", "input", "track", "picture", "image"):
        return "im_"
    if tag == "link":
        rel = (el.get("rel") or "").lower()
        return "cs_" if "stylesheet" in rel else "im_"
    return ""


def _rewrite(value: str, base: str, mod: str, address: Address) -> str:
    value = value.strip()
    if not value or value.startswith(("#", "data:")):
        return value
    absolute = urljoin(base, value)
    if not absolute.startswith(("http://", "https://")):
        return "#"  # javascript:, mailto:, anything not archived
    return address(absolute, mod)


def _srcset_item(part: str, base: str, address: Address) -> str:
    bits = part.strip().split()
    return " ".join([_rewrite(bits[0], base, "im_", address), *bits[1:]])


def _css(text: str, base: str, address: Address) -> str:
    def sub(m: re.Match) -> str:
        if m.group(2) is not None:
            return f"url({_rewrite(m.group(2), base, 'im_', address)})"
        return f'@import "{_rewrite(m.group(4), base, "cs_", address)}"'

    return _CSS_URL.sub(sub, text)

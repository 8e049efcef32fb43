"""Link extraction from fetched HTML and CSS.

:func:`extract_links` turns a response body into the list of URLs the frontier
may follow, each tagged with a *kind* that the scope uses:

``navigation``
    ``a`` and ``area`` ``href``, and ``link href`` with a rel that names another
    page (``canonical``, ``alternate``, ``next`` ...).
``embed``
    What a browser loads to render the page: ``img`` ``src``/``srcset`` (and the
    lazy-loading ``data-src``/``data-srcset``), ``picture source``,
    ``link rel=stylesheet/icon/preload/modulepreload/prefetch/manifest``,
    ``script src``, ``iframe``/``frame src``, ``embed src``, ``object data``,
    ``audio``/``video``/``source``/``track src``, ``video poster``,
    ``input type=image src``, ``background`` attributes, SVG ``image href``,
    ``url()`` in ``style`` attributes and ``<style>`` elements, and ``url()``
    and ``@import`` in stylesheets.
``refresh``
    ``<meta http-equiv=refresh content="0; url=...">``; the scope treats it as
    navigation for depth.

``<base href>`` changes the base URL (the first one only, as in browsers); one
in ``<head>`` applies to the whole document, one after ``<body>`` has started
(non-conforming) only to the links after it.
The document's charset is decided as Chromium decides it (:func:`strata.charset.sniff_html`),
and the query of every link in an HTML attribute is encoded in the document's encoding, as the
URL standard says (:mod:`strata.query_encoding`; ``url()`` in CSS stays UTF-8).
Every URL is normalised with :func:`strata.urls.normalize_url`; what does
not normalise (``javascript:``, ``mailto:``, ``data:`` ...) is dropped. The
list is in document order, without repeats of the same ``(url, kind)`` pair:
one URL can appear twice, once per kind, so the scope can judge each role.

HTML is parsed by lxml's libxml2 HTML parser in event mode (a parser
*target*), never as a tree: libxml2 silently stops building a tree at depth
256 (2,048 with ``huge_tree``), which would hide every link below it, and
half a million links in a tree take hundreds of megabytes. The body is read
in chunks and parsing stops once ``max_links`` links are found, unless the page's text is wanted
too: :func:`links_and_text` gives both from one parse (``harvester.change`` takes the main text
from it).

Limits: at most ``max_bytes`` of the body are read, at most ``max_links``
links returned. A bogus charset falls back to UTF-8 with replacement
characters, an empty or binary body gives ``[]``; nothing here raises on any
input or does I/O.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from lxml import etree

from strata.charset import charset_param, css_charset, decode, sniff_html
from strata.media import CSS_TYPES, HTML_TYPES
from strata.query_encoding import encode_query
from strata.urls import normalize_url

__all__ = ["EMBED", "NAVIGATION", "REFRESH", "Link", "extract_links", "links_and_text", "parse_srcset"]

NAVIGATION = "navigation"
EMBED = "embed"
REFRESH = "refresh"

MAX_LINKS = 10_000
MAX_BYTES = 10 * 1024 * 1024


_CHUNK = 64 * 1024
_EMBED_RELS = frozenset(
    {
        "stylesheet",
        "icon",
        "apple-touch-icon",
        "apple-touch-icon-precomposed",
        "mask-icon",
        "preload",
        "modulepreload",
        "prefetch",
        "manifest",
    }
)
# They name origins to connect to early, not resources.
_SKIP_RELS = frozenset({"dns-prefetch", "preconnect"})
# Attributes holding one URL of an embedded resource, per element.
_EMBED_ATTRS = {
    "img": ("src", "data-src"),
    "source": ("src",),
    "script": ("src",),
    "iframe": ("src",),
    "frame": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "audio": ("src",),
    "video": ("src", "poster"),
    "track": ("src",),
    "body": ("background",),
    "table": ("background",),
    "td": ("background",),
    "th": ("background",),
    "image": ("href", "xlink:href"),
}
_SRCSET_ATTRS = {"img": ("srcset", "data-srcset"), "source": ("srcset", "data-srcset")}
_WHITESPACE = " \t\n\r\f"
_CSS_REF = re.compile(
    r"""url\(\s*(?:"([^"\n]*)"|'([^'\n]*)'|([^()\s"']*))\s*\)"""
    r"""|@import\s+(?:"([^"\n]*)"|'([^'\n]*)')""",
    re.IGNORECASE,
)
_REFRESH = re.compile(r"\s*[0-9.]*\s*[;,]?\s*(?:url\s*=\s*)?(.*)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class Link:
    """One outgoing link: normalised *url*, *kind* and where it was found.

    *source* is ``"tag@attribute"`` for attributes (``"a@href"``,
    ``"img@srcset"``, ``"div@style"``, ``"meta@refresh"``), ``"style"`` for a
    ``<style>`` element and ``"css"`` for a stylesheet body.
    """

    url: str
    kind: str
    source: str


LINK_TYPES = ("text/html", "application/xhtml+xml", "text/css")  # payloads whose links are followed


def links_of_payload(raw: bytes, base_url: str, content_type: str, content_encoding: str | None) -> list[Link]:
    """The links of a payload as stored (still content-encoded), decoded through the capped decoders
    first. Raises ``index.payload.DecodeError`` when it does not decode."""
    from index.payload import decode_content

    mime, _, params = content_type.partition(";")
    return extract_links(
        decode_content(raw, content_encoding),
        base_url,
        (mime.strip().lower() or "text/html") + (";" + params if params else ""),
    )


def extract_links(
    body: bytes,
    base_url: str,
    content_type: str,
    charset: str | None = None,
    *,
    max_links: int = MAX_LINKS,
    max_bytes: int = MAX_BYTES,
) -> list[Link]:
    """Return the links of an HTML or CSS *body* fetched from *base_url*.

    *content_type* is the response's ``Content-Type`` (parameters allowed; its
    ``charset`` is used when *charset* is not given). Bodies of other types,
    including a missing type, give ``[]``.
    """
    if not isinstance(body, (bytes, bytearray, memoryview)) or max_links <= 0:
        return []
    body = bytes(body[:max_bytes])
    mime, _, params = (content_type or "").partition(";")
    mime = mime.strip().lower()
    if charset is None:
        charset = charset_param(content_type or "")
    if mime in HTML_TYPES:
        document_charset = sniff_html(body, charset)
        return _parse_html(body, document_charset.codec, document_charset.query_codec, base_url, max_links)[0]
    collector = _Collector(base_url, max_links)
    if mime in CSS_TYPES:
        collector.add_css(decode(body, css_charset(body, charset)), "css")
    return collector.links


def links_and_text(
    body: bytes,
    base_url: str | None,
    charset: str | None,
    text_outside: frozenset[str],
    *,
    max_links: int = MAX_LINKS,
    max_bytes: int = MAX_BYTES,
) -> tuple[list[Link], str | None]:
    """An HTML *body*'s links (as :func:`extract_links` gives them) and, from the same parse, its
    text outside the elements named in *text_outside*: every text node in document order, tails
    of those elements included, joined without separators, as lxml's ``text_content()`` gives it
    once those elements are dropped from the tree. One parse instead of two for a page whose links
    and main text are both wanted (``harvester.change``).

    The text is ``None`` when it could not be had whole: a body over *max_bytes* (the links read
    only that much) or one libxml2 gave up on. The caller then builds the text another way.
    """
    if len(body) > max_bytes:
        if base_url is None:
            return [], None
        return extract_links(body, base_url, "text/html", charset, max_links=max_links, max_bytes=max_bytes), None
    data = bytes(body)
    document_charset = sniff_html(data, charset)
    return _parse_html(data, document_charset.codec, document_charset.query_codec, base_url, max_links, text_outside)


def parse_srcset(value: str) -> list[str]:
    """Return the URLs of a ``srcset`` attribute, following the HTML standard.

    Candidates are split on commas that follow whitespace or a URL, so URLs
    that contain commas survive; descriptors (``2x``, ``640w``) are dropped.
    """
    urls = []
    pos, end = 0, len(value)
    while pos < end:
        while pos < end and (value[pos] in _WHITESPACE or value[pos] == ","):
            pos += 1
        start = pos
        while pos < end and value[pos] not in _WHITESPACE:
            pos += 1
        url = value[start:pos]
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            depth = 0  # descriptors run to the next comma outside parentheses
            while pos < end:
                char = value[pos]
                pos += 1
                if char == "(":
                    depth += 1
                elif char == ")" and depth:
                    depth -= 1
                elif char == "," and not depth:
                    break
        if url:
            urls.append(url)
    return urls


class _ParserSlot(threading.local):
    """This thread's libxml2 HTML parser and the collector it reports to, while not in use. Making a
    parser with a Python target costs about 56 us (lxml inspects the target's ``start`` signature
    each time), parsing a small page through a made one about 6: one parser a thread, handed each
    page in turn (libxml2 starts afresh after ``close()``), saves that on every page."""

    held: tuple[etree.HTMLParser, _Collector] | None = None


_parser_slot = _ParserSlot()


def _parse_html(
    body: bytes,
    codec: str,
    query_codec: str,
    base_url: str | None,
    max_links: int,
    text_outside: frozenset[str] | None = None,
) -> tuple[list[Link], str | None]:
    """(links, text outside *text_outside*, or ``None`` when no text was asked for or libxml2
    gave up part way)."""
    # Decode ourselves (Python knows more charsets than libxml2, and replaces
    # instead of failing), then hand libxml2 UTF-8 and tell it so, which also
    # overrides any <meta> or <?xml encoding?> inside the document.
    data = decode(body, codec).encode("utf-8", errors="replace")
    # Taken out of the slot while in use, and put back only after a clean close(): a parser that
    # raised (or was interrupted) may hold part of this page, which must never reach the next one.
    held, _parser_slot.held = _parser_slot.held, None
    if held is None:
        collector = _Collector(base_url, max_links)
        parser = etree.HTMLParser(target=collector, encoding="utf-8", huge_tree=True, no_network=True)
    else:
        parser, collector = held
        collector.reset(base_url, max_links)
    collector.query_codec = query_codec
    collector.collect_text(text_outside)
    if not data.strip():
        collector.reset(None, 0)
        _parser_slot.held = (parser, collector)
        return [], None if text_outside is None else ""
    try:
        for start in range(0, len(data), _CHUNK):
            parser.feed(data[start : start + _CHUNK])
            if collector.full and text_outside is None:
                break
        parser.close()
    except (etree.LxmlError, ValueError):
        return collector.links, None  # keep what was found before libxml2 gave up; the parser is not reused
    links, text = collector.links, collector.text
    collector.reset(None, 0)  # holds nothing of this page while idle
    _parser_slot.held = (parser, collector)
    return links, None if text is None else "".join(text)


def _css_urls(css: str):
    pos = 0
    while True:  # skip comments without a regex, which is quadratic on "/*/*/*..."
        start = css.find("/*", pos)
        chunk = css[pos:] if start < 0 else css[pos:start]
        for match in _CSS_REF.finditer(chunk):
            yield next(group for group in match.groups() if group is not None)
        if start < 0:
            return
        stop = css.find("*/", start + 2)
        if stop < 0:
            return
        pos = stop + 2


def _refresh_url(content: str) -> str:
    match = _REFRESH.match(content)
    url = match.group(1).strip() if match else ""
    if url[:1] in ("'", '"'):
        url = url[1:].partition(url[0])[0]
    return url


# Links that resolve the same against any base (absolute), or against the origin alone (path-
# absolute), unless tabs or newlines (removed anywhere, "/\t/x" is "//x") or a backslash (read as
# "/") could make them something else: those take the full base, as before.
_ABSOLUTE = ("http://", "https://")
_NOT_PATH_ABSOLUTE = ("/", "\\")
_UNSAFE_FOR_SHORTCUT = re.compile(r"[\t\n\r\\]")


def _origin_of(base: str | None) -> str | None:
    """``scheme://host[:port]/`` of a normalised URL."""
    if base is None:
        return None
    scheme, sep, rest = base.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}/" if sep else None


class _Collector:
    """lxml parser target: turns start-tag events into links."""

    def __init__(self, base_url: str | None, max_links: int):
        self.reset(base_url, max_links)

    def reset(self, base_url: str | None, max_links: int) -> None:
        """Start over for another document (``harvester.links`` reuses a collector with its parser)."""
        self.base = normalize_url(base_url) if base_url is not None else None
        self.origin = _origin_of(self.base)
        self.max_links = max_links
        self.links: list[Link] = []
        self.seen: set[tuple[str, str]] = set()
        # Links seen before <base href>, re-resolved if it comes; None once
        # it can no longer come (seen, or <body> started).
        self.before_base: list[tuple[str, str, str, bool]] | None = []
        self.style_text: list[str] | None = None
        # The document's encoding for the queries of its links (URL standard); CSS url() is UTF-8.
        self.query_codec = "utf-8"
        self.text: list[str] | None = None  # the text nodes outside `text_outside`, when asked for
        self.text_outside: frozenset[str] = frozenset()
        self.inside = 0  # how many of the open elements are in `text_outside`
        self.open = 0  # how many elements are open: text outside all is between two roots, not kept

    def collect_text(self, outside: frozenset[str] | None) -> None:
        """Also keep the document's text, outside the elements named in *outside* (``None``: none)."""
        self.text = None if outside is None else []
        self.text_outside = outside or frozenset()
        self.inside = self.open = 0

    @property
    def full(self) -> bool:
        return len(self.links) >= self.max_links

    def add(self, raw: str | None, kind: str, source: str, css: bool = False) -> None:
        if raw is None or self.full:
            return
        if not css and not raw.isascii():
            raw = encode_query(raw, self.query_codec)
        if self.before_base is not None:
            self.before_base.append((raw, kind, source, css))
            if len(self.before_base) > 2 * self.max_links:  # a <head> of links, no <body>
                self.before_base = None
        url = normalize_url(raw, self._base_for(raw))
        if url is not None and (url, kind) not in self.seen:
            self.seen.add((url, kind))
            self.links.append(Link(url, kind, source))

    def _base_for(self, raw: str) -> str | None:
        """What ``raw`` is resolved against: the page's URL, or as much of it as ``raw`` depends on,
        so that the URL cache (keyed on the pair) hits for a link that many pages carry. An absolute
        URL depends on no base, a path-absolute one (``/a/b``) on the origin alone."""
        if raw.startswith(_ABSOLUTE) and not _UNSAFE_FOR_SHORTCUT.search(raw):
            return None
        if (
            raw[:1] == "/"
            and raw[1:2] not in _NOT_PATH_ABSOLUTE
            and self.origin is not None
            and not _UNSAFE_FOR_SHORTCUT.search(raw)
        ):
            return self.origin
        return self.base

    def add_css(self, css: str, source: str) -> None:
        for raw in _css_urls(css):
            if self.full:
                return
            self.add(raw, EMBED, source, css=True)

    def set_base(self, href: str | None) -> None:
        if href is None or self.before_base is None:
            return
        pending, self.before_base = self.before_base, None
        base = normalize_url(encode_query(href, self.query_codec), self.base)
        if base is None:
            return
        self.base = base
        self.origin = _origin_of(base)
        self.links, self.seen = [], set()
        for raw, kind, source, css in pending:
            self.add(raw, kind, source, css)

    # lxml target interface

    def start(self, tag, attrib, nsmap=None) -> None:
        self.open += 1
        if tag in self.text_outside:
            self.inside += 1
        if self.full or not isinstance(tag, str):
            return
        if tag == "body":
            self.before_base = None
        elif tag == "style":
            self.style_text = []
        if attrib:  # most elements have none, and lxml's empty mapping answers get() by a KeyError (0.7 us)
            self._attributes(tag, attrib)

    def _attributes(self, tag: str, attrib) -> None:
        """The links in an element's attributes."""
        get = attrib.get
        if tag == "base":
            self.set_base(get("href"))
        elif tag in ("a", "area"):
            self.add(get("href"), NAVIGATION, f"{tag}@href")
        elif tag == "link":
            self._link(attrib)
        elif tag == "meta" or tag == "input":
            self._meta_or_input(tag, get)
        for name in _EMBED_ATTRS.get(tag, ()):
            self.add(get(name), EMBED, f"{tag}@{name}")
        for name in _SRCSET_ATTRS.get(tag, ()):
            for url in parse_srcset(get(name) or ""):
                self.add(url, EMBED, f"{tag}@{name}")
        style = get("style")
        if style and "url" in style.lower():
            self.add_css(style, f"{tag}@style")

    def _meta_or_input(self, tag: str, get) -> None:
        """``<meta http-equiv=refresh>`` leads on; ``<input type=image>`` embeds its ``src``."""
        if tag == "meta":
            if (get("http-equiv") or "").strip().lower() == "refresh":
                url = _refresh_url(get("content") or "")
                if url:
                    self.add(url, REFRESH, "meta@refresh")
        elif (get("type") or "").strip().lower() == "image":
            self.add(get("src"), EMBED, "input@src")

    def _link(self, attrib) -> None:
        rels = set((attrib.get("rel") or "").lower().split())
        if rels & _SKIP_RELS:
            return
        kind = EMBED if rels & _EMBED_RELS else NAVIGATION
        self.add(attrib.get("href"), kind, "link@href")
        for url in parse_srcset(attrib.get("imagesrcset") or ""):
            self.add(url, EMBED, "link@imagesrcset")

    def end(self, tag) -> None:
        self.open -= 1
        if tag in self.text_outside and self.inside:
            self.inside -= 1
        if tag == "style" and self.style_text is not None:
            css, self.style_text = "".join(self.style_text), None
            self.add_css(css, "style")

    def data(self, text) -> None:
        if self.style_text is not None:
            self.style_text.append(text)
        if self.text is not None and self.open and not self.inside:
            self.text.append(text)

    def close(self) -> None:
        return None

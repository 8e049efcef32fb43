"""Text extraction for full-text search: the words a reader sees in an archived payload.

``extract(body, content_type, content_encoding)`` returns an :class:`Extracted` (text, title, meta
description and keywords, language) for HTML, PDF and plain text, and an empty one for anything
else. It never raises on hostile input: what cannot be read is reported in ``Extracted.error``.

- Bodies are stored as received; ``Content-Encoding`` is undone through ``index.payload``'s capped
  decoders (a 421-byte brotli body can inflate to 256 MiB).
- HTML is parsed by lxml's libxml2 HTML parser in event mode (a parser *target*): libxml2 stops
  building a tree at depth 256 and drops the rest of the page without an error, events have no
  such limit. Scripts, styles and hidden elements are left out; menus, navigation, page-level
  ``<header>``/``<footer>``/``<aside>`` (outside ``<article>``/``<main>``) and blocks of mostly links
  are ``Extracted.boilerplate``, apart from the main text (``_Target`` says how). Inline elements do
  not add spaces, so ``<b>图书</b>馆`` stays one word.
- Metadata (title, description, keywords, author, publisher, language, published date) comes from
  ``<meta>``, Open Graph, Dublin Core, JSON-LD and a PDF's document info (``index.fulltext.metadata``).
- The charset comes from the ``Content-Type`` header, then ``<meta>``, then detection
  (``strata.charset``, the browsers' order); a body declared UTF-8 that is not valid UTF-8 also
  goes through detection (charset-normalizer): search wants the words, not the browser's mojibake.
- PDF text comes from pypdf, at most ``MAX_PDF_PAGES`` pages.
- Text is NFKC-normalised (the analyzer and the queries expect it) and capped at ``max_chars``, but
  for full-width punctuation (``，`` ``：`` ``（`` ``｡``), kept as written: readers see snippets, page
  lists and diffs in the page's own punctuation, and the analyzer splits words on either form.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import re
import warnings

from lxml import etree

from index.fulltext.cjk import normalize
from index.fulltext.metadata import MAX_JSONLD_BYTES, META_NAMES, page_meta, pdf_meta
from index.payload import DecodeError, decode_content
from strata.charset import charset_param, codec_for_label, decode, detect_codec, html_charset
from strata.media import HTML_TYPES, PDF_TYPES, TEXT_TYPES

__all__ = ["MAX_TEXT_CHARS", "MIME_GROUPS", "Extracted", "extract", "mime_group"]

MAX_TEXT_CHARS = 100_000  # per document, after normalisation
MAX_BOILER_CHARS = 20_000  # of boilerplate kept per document
MAX_INPUT_BYTES = 8 * 1024 * 1024  # decoded bytes read from one payload
MAX_PDF_PAGES = 200

# Mime type groups offered as search filters, in display order.
MIME_GROUPS = ("html", "pdf", "text", "image", "audio", "video", "css", "script", "data", "other")


def mime_group(mime: str | None) -> str:
    mime = (mime or "").split(";")[0].strip().lower()
    if mime in HTML_TYPES:
        return "html"
    if mime in PDF_TYPES:
        return "pdf"
    if mime in TEXT_TYPES:
        return "text"
    major = mime.split("/")[0]
    if major in ("image", "audio", "video"):
        return major
    if mime == "text/css":
        return "css"
    if "javascript" in mime or "ecmascript" in mime:
        return "script"
    if mime.endswith(("json", "xml")) or "+json" in mime or "+xml" in mime:
        return "data"
    return "other"


@dataclasses.dataclass
class Extracted:
    text: str = ""  # the main text
    title: str = ""
    description: str = ""
    keywords: str = ""
    language: str = ""
    boilerplate: str = ""  # menus, headers, footers, lists of links (``_Target``)
    author: str = ""
    publisher: str = ""
    published: str = ""  # 2024, 2024-03 or 2024-03-05 (index.fulltext.metadata.normalize_date)
    charset: str = ""
    truncated: bool = False
    error: str = ""


def extract(
    body: bytes,
    content_type: str | None,
    content_encoding: str | None = None,
    content_language: str | None = None,
    max_chars: int = MAX_TEXT_CHARS,
) -> Extracted:
    mime = (content_type or "").partition(";")[0].strip().lower()
    group = mime_group(mime)
    if group not in ("html", "pdf", "text"):
        return Extracted()
    try:
        data = decode_content(body or b"", content_encoding, MAX_INPUT_BYTES)
    except DecodeError as exc:
        return Extracted(error=str(exc))
    header_charset = charset_param(content_type)
    try:
        if group == "html":
            out = _html(data, header_charset)
        elif group == "pdf":
            out = _pdf(data)
        else:
            codec = _detect(data, codec_for_label(header_charset))
            out = Extracted(text=decode(data, codec), charset=codec)
    except Exception as exc:  # noqa: BLE001 - hostile payloads: never let one stop an index run
        return Extracted(error=f"{type(exc).__name__}: {exc}"[:300])
    return _finish(out, content_language, max_chars)


def _detect(data: bytes, declared: str | None) -> str:
    """The declared codec when the body fits it, else UTF-8 when it is valid, else detection."""
    if declared and declared != "utf-8":
        return declared
    return detect_codec(data)


# Full-width and half-width CJK punctuation, which NFKC would turn into ASCII (，-> ,) or full width
# (｡ -> 。). Not the full-width low line (＿): NFKC makes it "_", a word character.
_PUNCTUATION = re.compile("([\uff01-\uff0f\uff1a-\uff20\uff3b-\uff3e\uff40\uff5b-\uff65]+)")


def as_written(text: str) -> str:
    """``normalize`` (NFKC) but for full-width punctuation, left as the page wrote it."""
    if text.isascii():
        return text
    parts = _PUNCTUATION.split(text)
    return "".join(part if i % 2 else normalize(part) for i, part in enumerate(parts))


def _finish(out: Extracted, content_language: str | None, max_chars: int) -> Extracted:
    text = as_written(out.text)
    text = "\n".join(line for line in (" ".join(part.split()) for part in text.split("\n")) if line)
    if len(text) > max_chars:
        text, out.truncated = text[:max_chars], True
    out.text = text
    boiler = as_written(out.boilerplate)
    out.boilerplate = "\n".join(line for line in (" ".join(p.split()) for p in boiler.split("\n")) if line)[
        :MAX_BOILER_CHARS
    ]
    out.author = _one_line(out.author)[:1000]
    out.publisher = _one_line(out.publisher)[:1000]
    out.title = _one_line(out.title)[:1000]
    out.description = _one_line(out.description)[:2000]
    out.keywords = _one_line(out.keywords)[:2000]
    out.language = _language(out.language or content_language or "", text)
    return out


def _one_line(value: str) -> str:
    return " ".join(as_written(value or "").split())


_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_LANG_TAG = re.compile(r"^[a-z]{2,3}(?=$|[-_])")


def _language(declared: str, text: str) -> str:
    """Primary language subtag: as declared, else guessed from the script of the first 2,000 chars."""
    match = _LANG_TAG.match(declared.strip().lower().split(",")[0].strip())
    if match:
        return match.group(0)
    sample = text[:2000]
    if not sample:
        return ""
    if len(_KANA.findall(sample)) >= 5:
        return "ja"
    if len(_HANGUL.findall(sample)) >= 5:
        return "ko"
    if len(_HAN.findall(sample)) >= 5:
        return "zh"
    return ""


# -- HTML ------------------------------------------------------------------------------------------

_SKIP = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "iframe",
        "object",
        "canvas",
        "select",
        "button",
        "datalist",
        "head",
    }
)
_BOILER = frozenset({"nav", "menu"})  # boilerplate wherever they are
_PAGE_LEVEL = frozenset({"header", "footer", "aside"})  # boilerplate outside <article>/<main>
_BOILER_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "menubar", "menu", "search"})
_CONTENT = frozenset({"article", "main"})
# class or id names of menus and page furniture, as whole names ("nav", "breadcrumbs") or the last
# part of one ("global-nav", "site_footer"); state names ("has-sidebar", "nav-open") never match,
# and <html>, <body>, <main> and <article> are never boilerplate by name
_HINTS_ANYWHERE = frozenset(
    "nav navbar navigation navi menu menubar breadcrumb breadcrumbs topicpath pankuzu pagination pager "
    "skiplink skip-link share sharing social sns cookie cookies gnav globalnav localnav subnav sitemap".split()
)
_HINTS_PAGE = frozenset("header footer masthead sidebar copyright".split())
_STATE_PREFIXES = ("has-", "is-", "no-", "with-", "js-")
_NEVER_HINTED = frozenset({"html", "body", "main", "article"})
LINK_DENSITY = 0.6  # a block whose text is at least this share of link text is a list of links: boilerplate
_BLOCK = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "br",
        "caption",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
        "frameset",
        "frame",
        "noframes",
        "option",
        "legend",
        "label",
    }
)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.I)
_JSONLD_TYPES = ("application/ld+json", "application/json+ld")


class _Target:
    """lxml parser target: collects visible text, the title and meta fields, without a tree.

    Visible text goes to one of two streams. Boilerplate: ``<nav>``, ``<menu>``, navigation and
    banner roles, page-level ``<header>``/``<footer>``/``<aside>``, elements whose class or id
    names a menu or page furniture (``_HINTS_ANYWHERE``; ``_HINTS_PAGE`` outside content), and any
    block (text between block boundaries) that is mostly link text (``LINK_DENSITY``: menus and
    the lists of links of listing pages). The main text: everything else."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.boiler: list[str] = []
        self.size = 0
        self.stack: list[tuple[str, int]] = []  # (tag, 1 skipped region / 2 boilerplate region / 0)
        self.skip = 0
        self.boiler_depth = 0
        self.content = 0
        self.link = 0
        self.block: list[str] = []
        self.block_chars = 0
        self.link_chars = 0
        self.in_title = False
        self.title: list[str] = []
        self.meta: dict[str, list[str]] = {}
        self.jsonld: list[str] = []
        self.ld: list[str] | None = None  # the JSON-LD block being read
        self.ld_size = 0
        self.lang = ""

    def start(self, tag, attrib) -> None:
        if not isinstance(tag, str):
            return
        tag = tag.lower()
        if tag == "html" and not self.lang:
            self.lang = attrib.get("lang") or attrib.get("xml:lang") or ""
        elif tag == "title" and not self.title and not self.skip_svg():
            self.in_title = True
        elif tag == "meta":
            self._meta(attrib)
        elif tag == "script" and (attrib.get("type") or "").strip().lower() in _JSONLD_TYPES:
            self.ld = []
        region = self._region(tag, attrib)
        if tag in _CONTENT:
            self.content += 1
        if tag in _BLOCK:
            self._flush()
        if region == 1:
            self.skip += 1
        elif region == 2:
            self.boiler_depth += 1
        if tag == "a":
            self.link += 1
        self.stack.append((tag, region))

    def _region(self, tag: str, attrib) -> int:
        if (
            tag in _SKIP
            or "hidden" in attrib
            or (attrib.get("aria-hidden") or "").lower() == "true"
            or (tag == "input" and (attrib.get("type") or "").lower() == "hidden")
        ):
            return 1
        if tag in _BOILER or (tag in _PAGE_LEVEL and not self.content):
            return 2
        if (attrib.get("role") or "").lower() in _BOILER_ROLES:
            return 2
        if (attrib.get("class") or attrib.get("id")) and tag not in _NEVER_HINTED:
            hint = _hint(f"{attrib.get('class') or ''} {attrib.get('id') or ''}")
            if hint == 2 or (hint == 1 and not self.content):
                return 2
        return 0

    def skip_svg(self) -> bool:
        return any(tag == "svg" for tag, _ in self.stack)

    def end(self, tag) -> None:
        if not isinstance(tag, str):
            return
        tag = tag.lower()
        if tag == "title":
            self.in_title = False
        if tag == "script" and self.ld is not None:
            self.jsonld.append("".join(self.ld))
            self.ld = None
        if tag in _BLOCK:
            self._flush()
        # libxml2 closes what it opened; pop to the matching tag all the same, for safety.
        while self.stack:
            name, region = self.stack.pop()
            if region == 1:
                self.skip -= 1
            elif region == 2:
                self._flush()
                self.boiler_depth -= 1
            if name in _CONTENT:
                self.content -= 1
            if name == "a":
                self.link -= 1
            if name == tag:
                break

    def data(self, text: str) -> None:
        if self.ld is not None:
            if self.ld_size < MAX_JSONLD_BYTES:
                self.ld.append(text)
                self.ld_size += len(text)
        elif self.in_title:
            self.title.append(text)
        elif self.skip or self.size >= MAX_TEXT_CHARS * 2:
            return
        elif self.boiler_depth:
            self.boiler.append(text)
            self.size += len(text)
        else:
            self.block.append(text)
            chars = len(text.strip())
            self.block_chars += chars
            if self.link:
                self.link_chars += chars
            self.size += len(text)

    def _flush(self) -> None:
        """The text since the last block boundary: main text, or boilerplate when mostly links."""
        if self.block:
            linked = self.block_chars and self.link_chars >= LINK_DENSITY * self.block_chars
            stream = self.boiler if linked else self.parts
            stream.extend(self.block)
            stream.append("\n")
            self.block = []
            self.block_chars = self.link_chars = 0
        (self.boiler if self.boiler_depth else self.parts).append("\n")

    def _meta(self, attrib) -> None:
        name = (attrib.get("name") or attrib.get("property") or attrib.get("itemprop") or "").strip().lower()
        if not name:
            name = (attrib.get("http-equiv") or "").strip().lower()
        content = attrib.get("content") or ""
        if name in META_NAMES and content.strip():
            values = self.meta.setdefault(name, [])
            if len(values) < 50:
                values.append(content)

    def close(self) -> None:
        self._flush()
        return None


def _hint(names: str) -> int:
    """2: a menu's name, 1: page furniture's (header, footer, sidebar), 0: neither."""
    found = 0
    for name in names.lower().split():
        if name.startswith(_STATE_PREFIXES):
            continue
        last = re.split(r"[-_]", name)[-1]
        if name in _HINTS_ANYWHERE or last in _HINTS_ANYWHERE:
            return 2
        if name in _HINTS_PAGE or last in _HINTS_PAGE:
            found = 1
    return found


def _html(data: bytes, header_charset: str | None) -> Extracted:
    codec = html_charset(data, header_charset)
    if codec == "utf-8":
        codec = _detect(data, None)
    text = decode(data, codec)
    text = _XML_DECL.sub("", text, count=1)
    target = _Target()
    if text.strip():
        parser = etree.HTMLParser(target=target, remove_comments=True, remove_pis=True, no_network=True)
        # Fed in slices: one huge text node is then not held twice.
        for i in range(0, len(text), 1 << 16):
            parser.feed(text[i : i + (1 << 16)])
            if target.size >= MAX_TEXT_CHARS * 2:
                break
        try:
            parser.close()
        except etree.XMLSyntaxError:
            pass
    target._flush()
    meta = page_meta(target.meta, target.jsonld)
    return Extracted(
        text="".join(target.parts),
        boilerplate="".join(target.boiler),
        title="".join(target.title) or meta.get("title", ""),
        description=meta.get("description", ""),
        keywords=meta.get("keywords", ""),
        author=meta.get("author", ""),
        publisher=meta.get("publisher", ""),
        published=meta.get("published", ""),
        language=target.lang or meta.get("language", ""),
        charset=codec,
    )


# -- PDF -------------------------------------------------------------------------------------------


def _pdf(data: bytes) -> Extracted:
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed PDFs are common; not our log's news
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = PdfReader(io.BytesIO(data), strict=False)
        meta = pdf_meta(reader)
        parts: list[str] = []
        size = 0
        error = ""
        for number, page in enumerate(reader.pages):
            if number >= MAX_PDF_PAGES or size >= MAX_TEXT_CHARS:
                break
            try:
                page_text = page.extract_text() or ""
            except Exception as exc:  # noqa: BLE001 - keep the pages that do read
                error = f"page {number + 1}: {type(exc).__name__}"
                continue
            parts.append(page_text)
            size += len(page_text)
    return Extracted(
        text="\n".join(parts),
        title=meta.get("title", ""),
        description=meta.get("description", ""),
        keywords=meta.get("keywords", ""),
        author=meta.get("author", ""),
        published=meta.get("published", ""),
        language=meta.get("language", ""),
        error=error,
    )

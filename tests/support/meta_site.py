"""A records office's website, served over real HTTP on 127.0.0.1, for the search tests of page
metadata, boilerplate, stemming and publications.

Every HTML page has the same furniture, as real sites do: a ``<div class="global-nav">`` menu
(not a ``<nav>``: found by its class), a ``<header>``, a breadcrumb trail and a ``<footer>``. The
menu and the footer both say ``Accessibility`` and ``Contact``; only ``/accessibility.html``
speaks of accessibility in its main text, and no page's main text says "contact".

==============================  ======================================================================
``/news/archive-opens.html``    JSON-LD ``NewsArticle`` (author, publisher, datePublished, keywords,
                                inLanguage); its text says "archive", never "archives"
``/news/ledgers-*.html``        Open Graph and ``article:*``; three long articles whose titles say
                                "ledgers" and whose text says it once
``/reports/survey.html``        Dublin Core (``DC.*``), Japanese and English
``/news/``                      the listing: every article's title as a link, with its date
``/publications.html``          links to the PDFs
``/pubs/*.pdf``                 PDFs made by fpdf2 with document info (title, author, subject,
                                keywords, creation date, language); one has no title
==============================  ======================================================================

``MetaSite.PAGES`` says what each page gives; ``start_meta_site()`` serves them.
"""

from __future__ import annotations

import html
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

from demo.site_server import Resource
from tests.support.served_site import ServedSite

__all__ = ["ARTICLES", "MENU_WORDS", "PDFS", "MetaSite", "start_meta_site"]

MENU_WORDS = ("Accessibility", "Contact")
_FURNITURE = """<header class="site-header"><a href="/">Harbour Records Office</a></header>
<div class="global-nav"><a href="/">Home</a> <a href="/news/">News</a> <a href="/publications.html">Publications</a>
<a href="/accessibility.html">Accessibility</a> <a href="/contact.html">Contact</a></div>
<div id="breadcrumb"><a href="/">Home</a> &gt; {crumb}</div>"""
_FOOTER = (
    '<footer><p>Harbour Records Office · <a href="/accessibility.html">Accessibility</a> · '
    '<a href="/contact.html">Contact</a></p></footer>'
)

_WORDS = (
    "harbour quay vessel cargo tide pilot customs warehouse register clerk merchant voyage crane dock "
    "rope anchor mooring timber grain shipment bay lighthouse beacon channel berth manifest"
).split()


def _filler(seed: int, words: int) -> str:
    rng = random.Random(seed)
    sentences = []
    while sum(len(s.split()) for s in sentences) < words:
        sentences.append(" ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 14))).capitalize() + ".")
    return " ".join(sentences)


@dataclass(frozen=True)
class Article:
    path: str
    title: str
    published: str  # the date the page gives
    author: str
    body: str
    head: str = ""  # metadata markup in <head>
    lang: str = "en"
    meta: dict = field(default_factory=dict)  # what extraction should find


def _jsonld_article() -> Article:
    data = {
        "@context": "https://schema.org",
        "@type": "NewsArticle",
        "headline": "The harbour archive opens a reading room",
        "author": {"@type": "Person", "name": "Mary Seacole"},
        "publisher": {"@type": "Organization", "name": "Harbour Records Office"},
        "datePublished": "2023-05-17T09:30:00+01:00",
        "keywords": ["reading room", "maritime history"],
        "inLanguage": "en-GB",
        "description": "A new reading room opens for the public.",
    }
    body = (
        "<p>The harbour archive opens its new reading room to the public this spring. Researchers can "
        "order registers and manifests in advance.</p><p>" + _filler(1, 60) + "</p>"
    )
    return Article(
        "/news/archive-opens.html",
        "The harbour archive opens a reading room",
        "2023-05-17",
        "Mary Seacole",
        body,
        head=f'<script type="application/ld+json">{json.dumps(data)}</script>',
        meta={
            "author": "Mary Seacole",
            "publisher": "Harbour Records Office",
            "published": "2023-05-17",
            "keywords": "reading room; maritime history",
            "lang": "en",
            "description": "A new reading room opens for the public.",
        },
    )


def _og_article(n: int, subject: str, day: str) -> Article:
    title = f"Ledgers of the {subject} digitised"
    head = (
        f'<meta property="og:title" content="{title}">'
        f'<meta property="og:description" content="The {subject} records are online.">'
        '<meta property="og:site_name" content="Harbour Records Office">'
        f'<meta property="article:published_time" content="{day}T08:00:00Z">'
        '<meta property="article:author" content="Tomas Reyes">'
        '<meta name="keywords" content="digitisation, ledgers">'
    )
    body = (
        f"<p>{_filler(10 + n, 380)}</p><p>The ledgers of the {subject} can now be read online.</p>"
        f"<p>{_filler(20 + n, 380)}</p>"
    )
    return Article(
        f"/news/ledgers-{n}.html",
        title,
        day,
        "Tomas Reyes",
        body,
        head=head,
        meta={
            "author": "Tomas Reyes",
            "publisher": "Harbour Records Office",
            "published": day,
            "keywords": "digitisation, ledgers",
            "lang": "en",
            "description": f"The {subject} records are online.",
        },
    )


def _dc_report() -> Article:
    head = (
        '<meta name="DC.title" content="港湾測量の記録 Harbour survey">'
        '<meta name="DC.creator" content="Aiko Tanaka">'
        '<meta name="DC.publisher" content="Port Authority Library">'
        '<meta name="DC.date" content="2022-11-03">'
        '<meta name="DC.language" content="ja">'
        '<meta name="DC.subject" content="測量; harbour">'
        '<meta name="DC.description" content="明治期の港湾測量の記録。">'
    )
    body = (
        "<p>この報告は明治期の港湾測量の記録をまとめたものです。測量図は閲覧室で見ることができます。</p>"
        "<p>Survey plans of the harbour.</p>"
    )
    return Article(
        "/reports/survey.html",
        "港湾測量の記録",
        "2022-11-03",
        "Aiko Tanaka",
        body,
        head=head,
        lang="",  # no <html lang>: the language comes from DC.language
        meta={
            "author": "Aiko Tanaka",
            "publisher": "Port Authority Library",
            "published": "2022-11-03",
            "keywords": "測量; harbour",
            "lang": "ja",
            "description": "明治期の港湾測量の記録。",
        },
    )


ARTICLES: tuple[Article, ...] = (
    _jsonld_article(),
    _og_article(1, "customs house", "2024-02-01"),
    _og_article(2, "pilots' guild", "2024-02-08"),
    _og_article(3, "grain exchange", "2024-03-14"),
    _dc_report(),
)


@dataclass(frozen=True)
class Pdf:
    path: str
    title: str  # "" for none
    author: str
    subject: str
    keywords: str
    created: datetime
    lang: str
    lines: tuple[str, ...]


PDFS: tuple[Pdf, ...] = (
    Pdf(
        "/pubs/annual-report-2023.pdf",
        "Annual Report 2023",
        "Harbour Records Office",
        "The office's year in figures",
        "annual report, finance",
        datetime(2024, 3, 31, 12, 0, tzinfo=UTC),
        "en-GB",
        ("Annual report of the harbour records office.", "The reading room welcomed researchers."),
    ),
    Pdf(
        "/pubs/tide-tables-1923.pdf",
        "Tide Tables of 1923",
        "Port Authority Library",
        "Tide tables reprinted",
        "tides, almanac",
        datetime(2021, 6, 15, 9, 0, tzinfo=UTC),
        "en",
        ("Tide tables for the year 1923, reprinted from the almanac.",),
    ),
    Pdf(
        "/pubs/scan-0042.pdf",
        "",
        "",
        "",
        "",
        datetime(2020, 1, 2, 0, 0, tzinfo=UTC),
        "",
        ("Scanned quayside notice.",),
    ),
)


def _pdf_bytes(pdf: Pdf) -> bytes:
    from fpdf import FPDF

    doc = FPDF()
    doc.set_creation_date(pdf.created)
    if pdf.title:
        doc.set_title(pdf.title)
    if pdf.author:
        doc.set_author(pdf.author)
    if pdf.subject:
        doc.set_subject(pdf.subject)
    if pdf.keywords:
        doc.set_keywords(pdf.keywords)
    if pdf.lang:
        doc.set_lang(pdf.lang)
    doc.add_page()
    doc.set_font("Helvetica", size=12)
    for line in pdf.lines:
        doc.cell(text=line, new_x="LMARGIN", new_y="NEXT")
    return bytes(doc.output())


def _page(title: str, crumb: str, main: str, head: str = "", lang: str = "en") -> bytes:
    lang_attr = f' lang="{lang}"' if lang else ""
    return f"""<!DOCTYPE html>
<html{lang_attr}><head><meta charset="utf-8"><title>{html.escape(title)}</title>{head}</head>
<body>
{_FURNITURE.format(crumb=html.escape(crumb))}
<main><h1>{html.escape(title)}</h1>
{main}
</main>
{_FOOTER}
</body></html>""".encode()


def _build() -> dict[str, tuple[str, bytes]]:
    pages: dict[str, tuple[str, bytes]] = {}
    html_type = "text/html; charset=utf-8"
    for a in ARTICLES:
        pages[a.path] = (html_type, _page(a.title, "News", a.body, a.head, a.lang))
    items = "\n".join(
        f'<li><a href="{a.path}">{html.escape(a.title)}</a> <span class="date">{a.published}</span></li>'
        for a in ARTICLES
    )
    pages["/news/"] = (html_type, _page("News", "News", f'<ul class="articles">\n{items}\n</ul>'))
    links = "\n".join(f'<li><a href="{p.path}">{html.escape(p.title or p.path)}</a></li>' for p in PDFS)
    pages["/publications.html"] = (html_type, _page("Publications", "Publications", f"<ul>{links}</ul>"))
    pages["/accessibility.html"] = (
        html_type,
        _page(
            "Accessibility",
            "Accessibility",
            "<p>Accessibility matters to us: the reading room has step-free access and a hearing loop.</p>",
        ),
    )
    pages["/contact.html"] = (html_type, _page("Write to us", "Letters", "<p>Letters reach the clerk by post.</p>"))
    home = (
        '<p>Welcome to the Harbour Records Office.</p><ul><li><a href="/news/">News</a></li>'
        '<li><a href="/publications.html">Publications</a></li><li><a href="/reports/survey.html">Survey</a></li></ul>'
    )
    pages["/"] = (html_type, _page("Harbour Records Office", "Home", home))
    for pdf in PDFS:
        pages[pdf.path] = ("application/pdf", _pdf_bytes(pdf))
    return pages


class _Model:
    def __init__(self, pages: dict[str, tuple[str, bytes]]):
        self.pages = pages

    def resolve(self, version: int, path: str, request_headers) -> Resource | None:
        found = self.pages.get(path)
        if found is None:
            return None
        return Resource(200, (("Content-Type", found[0]),), found[1])


class MetaSite(ServedSite):
    """The running site: ``base_url``, ``url(path)``, ``pages`` (path -> (content type, bytes))."""

    def __init__(self, port: int = 0):
        self.pages = _build()
        super().__init__(_Model(self.pages), port)


def start_meta_site(port: int = 0) -> MetaSite:
    return MetaSite(port).start()

"""The sample site: a small versioned website that Strata ships, serves and harvests itself.

Three versions of one site (news with pagination, articles, static files, a PDF, images, CJK
pages, redirects, a kitchen-sink page with every kind of link, robots.txt). Every byte depends
only on (version, path): no randomness, no clock. The README quick start harvests it, and the
tests harvest v1, v2, v3 and compare what was archived with the ground truth given here:
:meth:`SampleSite.paths`, :meth:`SampleSite.resource`, :meth:`SampleSite.change_kind`.

Each HTML page ends with a footer holding noise (a visit counter and a "generated at" time,
see ``NOISE_SELECTORS``). The noise moves with the version only on the pages listed in
``_NOISE_EPOCHS``, so a page can be byte-identical, noise-only ("soft") or really changed.

Change kinds (``v1 -> v2``, ``v2 -> v3``), as :meth:`SampleSite.change_kind` computes them:

- changed, changed: ``/``, ``/news/``, ``/news/page/2.html``
- soft, changed: ``/news/page/3.html``, ``/zh/index.html``
- changed, soft: ``/news/article-0003.html``
- soft, soft: ``/about.html``, ``/news/article-0005.html``
- soft, deleted (404): ``/news/article-0002.html``
- soft, unchanged: ``/zh/gbk.html``
- unchanged, soft: ``/ja/index.html``, ``/news/article-0006.html``
- unchanged, changed: ``/docs/``, ``/docs/report.pdf``
- changed, unchanged: ``/img/photo.png``
- deleted (404), absent: ``/news/article-0004.html``; deleted (410), absent: ``/news/article-0007.html``
- new, unchanged: ``/news/article-0013.html``; new, changed: ``/news/article-0014.html``
- absent, new: ``/news/article-0015.html``
- every other path: unchanged, unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import struct
import sys
import threading
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from functools import lru_cache
from html import escape

from demo.site_server import RequestHeaders, Resource, SiteServer

__all__ = [
    "CONTENT_PATTERNS",
    "INDEX_PATTERNS",
    "MARKERS",
    "NOISE_SELECTORS",
    "NOISE_XPATHS",
    "ROBOTS_DISALLOW",
    "VERSIONS",
    "SampleSite",
    "serve_sample_site",
]

VERSIONS = (1, 2, 3)
VERSION_DATES = {
    1: datetime(2024, 1, 15, tzinfo=UTC),
    2: datetime(2024, 4, 15, tzinfo=UTC),
    3: datetime(2024, 7, 15, tzinfo=UTC),
}

# A path is an index page if it matches an INDEX pattern, else a content page if it matches a
# CONTENT pattern; anything else (CSS, images, PDF, robots.txt, redirects) is neither.
INDEX_PATTERNS = (r"^/$", r"^/news/$", r"^/news/page/\d+\.html$", r"^/docs/$")
# (Patterns are matched by RE2, which has no lookaround: the news listings are index pages, met first.)
CONTENT_PATTERNS = (r"^/news/article-\d{4}\.html$", r"^/(?:[\w-]+/)*[\w-]+\.html$")
# Page parts that change without the page changing. NOISE_XPATHS say the same for lxml without
# the cssselect package.
NOISE_SELECTORS = ("footer .counter", "footer .generated")
NOISE_XPATHS = (
    '//footer//*[contains(concat(" ", normalize-space(@class), " "), " counter ")]',
    '//footer//*[contains(concat(" ", normalize-space(@class), " "), " generated ")]',
)
ROBOTS_DISALLOW = ("/private/",)

# -- articles ----------------------------------------------------------------------------------

_TITLES = {
    1: "Harvest schedule announced",
    2: "Reading room reopens",
    3: "New digitisation lab",
    4: "Volunteer programme starts",
    5: "Web archive reaches a milestone",
    6: "Preserving local newspapers",
    7: "Conference on digital memory",
    8: "Historic maps collection online",
    9: "Summer opening hours",
    10: "Oral history project",
    11: "Accessibility improvements",
    12: "Partnership with universities",
    13: "Crawler upgrade completed",
    14: "Exhibition on early websites",
    15: "Annual report published",
}
_NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split()
_PER_PAGE = 5


def _articles(version: int) -> list[int]:
    """Live article ids, oldest first."""
    ids = set(range(1, 13))
    if version >= 2:
        ids = (ids - {4, 7}) | {13, 14}
    if version >= 3:
        ids = (ids - {2}) | {15}
    return sorted(ids)


def _article_path(n: int) -> str:
    return f"/news/article-{n:04d}.html"


def _listing_path(page: int) -> str:
    return "/news/" if page == 1 else f"/news/page/{page}.html"


def _article_title(version: int, n: int) -> str:
    if n == 14 and version >= 3:
        return "Exhibition on early websites extended"
    return _TITLES[n]


_MONTHS = "January February March April May June July August September October November December".split()


def _published(n: int) -> datetime:
    return datetime(2024, 1, 1, 9, 0, tzinfo=UTC) + timedelta(days=6 * n)


def _date_html(when: datetime) -> str:
    # Month names spelled here, not by strftime("%B"), which follows the process locale.
    return f'<time datetime="{when:%Y-%m-%d}">{when.day} {_MONTHS[when.month - 1]} {when.year}</time>'


# -- per-path tables ---------------------------------------------------------------------------

# Noise epoch of a page in versions 1, 2, 3: the footer noise moves only when the epoch does.
_NOISE_EPOCHS: dict[str, tuple[int, int, int]] = {
    "/": (1, 2, 3),
    "/news/": (1, 2, 3),
    "/news/page/2.html": (1, 2, 3),
    "/news/page/3.html": (1, 2, 3),
    _article_path(2): (1, 2, 2),
    _article_path(3): (1, 1, 2),
    _article_path(5): (1, 2, 3),
    _article_path(6): (0, 0, 1),
    _article_path(14): (1, 2, 3),
    "/about.html": (1, 2, 3),
    "/zh/index.html": (1, 2, 2),
    "/zh/gbk.html": (1, 2, 2),
    "/ja/index.html": (1, 1, 2),
}
_GZIP = {"/news/", "/about.html", "/zh/index.html", "/docs/guide.html"}
_CHUNKED = {"/news/page/2.html", "/ja/index.html", "/kitchen-sink.html", "/docs/guide.html"}
_ETAG_PAGES = {"/about.html", "/contact.html", "/docs/guide.html"}
_LAST_MODIFIED_PAGES = {_article_path(1), "/docs/guide.html"}
_VALIDATED_PREFIXES = ("/static/", "/img/", "/media/", "/docs/report.pdf")
_REDIRECTS = {"/old-about": (301, "/about.html"), "/go": (302, "/old-about")}

MARKERS: dict[str, str] = {
    "/": "mkhome",
    "/news/": "mknewsone",
    "/news/page/2.html": "mknewstwo",
    "/news/page/3.html": "mknewsthree",
    **{_article_path(n): f"mkarticle{_NUMBER_WORDS[n]}" for n in _TITLES},
    "/about.html": "mkabout",
    "/contact.html": "mkcontact",
    "/docs/": "mkdocs",
    "/docs/guide.html": "mkguide",
    "/zh/index.html": "mkzhutf",
    "/zh/gbk.html": "mkzhgbk",
    "/ja/index.html": "mkjapanese",
    "/links.html": "mklinks",
    "/private/secret.html": "mksecret",
    "/gallery.html": "mkgallery",
    "/kitchen-sink.html": "mkkitchen",
    "/kitchen/based.html": "mkbased",
    "/kitchen/area-target.html": "mkarea",
    "/kitchen/refreshed.html": "mkrefreshed",
    "/frames/index.html": "mkframeset",
    "/frames/nav.html": "mkframenav",
    "/frames/main.html": "mkframemain",
}

# -- HTML pages --------------------------------------------------------------------------------


def _digest_int(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "big")


def _footer(version: int, path: str) -> str:
    epoch = _NOISE_EPOCHS.get(path, (0, 0, 0))[version - 1]
    visits = 1000 + _digest_int("visits", epoch, path) % 90000
    generated = VERSION_DATES.get(epoch, VERSION_DATES[1]) + timedelta(seconds=_digest_int("time", epoch, path) % 86400)
    return (
        '<footer><p>Strata sample site | <span class="counter">Visits: '
        f'{visits}</span> | <span class="generated">Generated at {generated:%Y-%m-%dT%H:%M:%SZ}</span></p></footer>'
    )


def _page(
    version: int,
    path: str,
    title: str,
    main: str,
    *,
    lang: str = "en",
    head: str = "",
    charset: str = "utf-8",
) -> str:
    return f"""<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="{charset}">
<title>{escape(title)}</title>
<link rel="stylesheet" href="/static/site.css">
<script src="/static/app.js" defer></script>
{head}</head>
<body>
<header><a href="/"><img src="/img/logo.png" alt="Strata sample site" width="32" height="32"></a>
<nav><a href="/">Home</a> <a href="/news/">News</a> <a href="/docs/">Documents</a> <a href="/about.html">About</a> \
<a href="/zh/index.html">中文</a> <a href="/ja/index.html">日本語</a></nav></header>
<main>
<h1>{escape(title)}</h1>
{main}
<p class="marker">Page marker: {MARKERS[path]}</p>
</main>
{_footer(version, path)}
</body>
</html>
"""


def _article_item(version: int, n: int) -> str:
    when = _published(n)
    return f'<li><a href="{_article_path(n)}">{escape(_article_title(version, n))}</a> {_date_html(when)}</li>'


def _home(version: int, path: str) -> str:
    latest = "\n".join(_article_item(version, n) for n in reversed(_articles(version)[-3:]))
    main = f"""<p>Welcome to the Strata sample library, a small website that changes between harvests.</p>
<h2>Latest news</h2>
<ul class="latest">
{latest}
</ul>
<h2>Sections</h2>
<ul>
<li><a href="/news/">News</a></li>
<li><a href="/docs/">Documents and reports</a></li>
<li><a href="/gallery.html">Gallery</a></li>
<li><a href="/kitchen-sink.html">Kitchen sink</a></li>
<li><a href="/links.html">Links</a></li>
<li><a href="/zh/index.html">中文 (UTF-8)</a> and <a href="/zh/gbk.html">中文 (GBK)</a></li>
<li><a href="/ja/index.html">日本語</a></li>
<li><a href="/go">About us (through two redirects)</a></li>
</ul>"""
    return _page(version, path, "Strata sample library", main)


def _listing(version: int, page: int) -> str | None:
    ids = list(reversed(_articles(version)))
    pages = -(-len(ids) // _PER_PAGE)
    if not 1 <= page <= pages:
        return None
    items = "\n".join(_article_item(version, n) for n in ids[(page - 1) * _PER_PAGE : page * _PER_PAGE])
    pager = " ".join(
        f"<span>{p}</span>" if p == page else f'<a href="{_listing_path(p)}">{p}</a>' for p in range(1, pages + 1)
    )
    main = f'<ol class="articles">\n{items}\n</ol>\n<nav class="pager">Pages: {pager}</nav>'
    return _page(version, _listing_path(page), "News" if page == 1 else f"News, page {page}", main)


def _article(version: int, n: int) -> str:
    title = _article_title(version, n)
    when = _published(n)
    main = f"""<p class="dateline">{_date_html(when)}</p>
<p>{escape(title)}: the library reports on article number {n} of its news service.
Readers can follow this story from the news listing, and the archive keeps each version.</p>
<p>Staff thanked the {_NUMBER_WORDS[n]} teams who contributed to the work described here.</p>"""
    if n == 3 and version >= 2:
        main += '\n<p class="update">Update: the digitisation lab now takes bookings online.</p>'
    if n == 14 and version >= 3:
        main += '\n<p class="update">Correction: the exhibition runs until the end of the year.</p>'
    main += '\n<p><a href="/news/">Back to the news</a></p>'
    return _page(version, _article_path(n), title, main)


def _simple(title: str, main: str) -> Callable[[int, str], str]:
    return lambda version, path: _page(version, path, title, main)


def _docs(version: int, path: str) -> str:
    status = "Revised edition, July 2024." if version >= 3 else "First edition, January 2024."
    main = f"""<ul>
<li><a href="/docs/report.pdf">Five-year review of the web archive (PDF)</a>. {status}</li>
<li><a href="/docs/guide.html">Guide to the collections</a></li>
</ul>"""
    return _page(version, path, "Documents", main)


def _zh(version: int, path: str) -> str:
    extra = "\n<p>新版本增加了关于网页长期保存策略的详细说明。</p>" if version >= 3 else ""
    main = f"""<p>国家图书馆加强数据安全管理，确保读者个人信息和数字馆藏得到妥善保护。</p>
<p>近年来各地公共图书馆积极推进网络信息资源的长期保存工作，数据安全已成为数字图书馆建设的重要议题。</p>{extra}"""
    return _page(version, path, "网页归档示例", main, lang="zh-CN")


def _zh_gbk(version: int, path: str) -> str:
    main = "<p>古籍数字化是图书馆保护文化遗产的重要手段，本页面使用国标扩展编码发布。</p>"
    return _page(version, path, "古籍数字化", main, lang="zh-CN", charset="gbk")


def _ja(version: int, path: str) -> str:
    main = """<p>国立国会図書館は、日本国内で発行されたウェブサイトを収集し、長く保存しています。</p>
<p>ウェブアーカイブの取り組みについて、わかりやすくごあんないします。</p>"""
    return _page(version, path, "ウェブアーカイブ", main, lang="ja")


_KITCHEN_HEAD = """<base href="/kitchen/">
<meta http-equiv="refresh" content="3600; url=/kitchen/refreshed.html">
<style>.hero { background: url("/img/hero.png") no-repeat; }</style>
"""
_KITCHEN = """<p>Every kind of link Strata must find. The base element makes relative links resolve under /kitchen/.</p>
<p><a href="based.html">A relative link, resolved against the base element</a></p>
<p><img src="/img/map.png" usemap="#sections" alt="Map" width="16" height="16"></p>
<map name="sections"><area shape="rect" coords="0,0,16,16" href="area-target.html" alt="Area link"></map>
<p><img src="/img/logo.png" srcset="/img/logo-2x.png 2x" alt="Logo with srcset" width="32" height="32"></p>
<div class="hero">Hero image from a style element</div>
<div style="background-image: url('/img/tile.png')">Tile from a style attribute</div>
<iframe src="/frames/index.html" title="Framed pages" width="400" height="120"></iframe>
<embed src="/media/widget.svg" type="image/svg+xml" width="40" height="40">
<object data="/media/chart.svg" type="image/svg+xml" width="40" height="40">Chart</object>
<audio controls src="/media/tone.wav">Tone</audio>
<video controls width="40" height="40"><source src="/media/clip.webm" type="video/webm">Clip</video>"""


def _frameset(version: int, path: str) -> str:
    return f"""<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Frameset//EN" "http://www.w3.org/TR/html4/frameset.dtd">
<html lang="en">
<head><meta charset="utf-8"><title>Frames</title></head>
<frameset cols="30%,70%">
<frame src="/frames/nav.html" name="nav">
<frame src="/frames/main.html" name="main">
<noframes><p>Page marker: {MARKERS[path]}</p></noframes>
</frameset>
</html>
"""


_LINKS = """<ul>
<li><a href="/private/secret.html">Staff only (disallowed by robots.txt)</a></li>
<li><a href="./contact.html">Contact, by a dot-relative link</a></li>
<li><a href="/about.html#history">About, with a fragment</a></li>
<li><a href="#top">Top of this page</a></li>
<li><a href="http://out-of-scope.invalid/elsewhere.html">Another site (out of scope)</a></li>
<li><a href="mailto:archive@example.org">Mail the archive</a></li>
<li><a href="tel:+15550100">Telephone</a></li>
<li><a href="javascript:void(0)">A script link</a></li>
<li><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="Inline data image"></li>
</ul>"""

_PAGES: dict[str, Callable[[int, str], str]] = {
    "/": _home,
    "/about.html": _simple(
        "About the library",
        '<p id="history">The Strata sample library has collected websites since 2004.</p>\n'
        '<p>Questions? See the <a href="/contact.html">contact page</a>.</p>',
    ),
    "/contact.html": _simple("Contact", "<p>Write to the web archive team or visit the reading room.</p>"),
    "/docs/": _docs,
    "/docs/guide.html": _simple(
        "Guide to the collections",
        "<p>The guide explains how harvests are scheduled and how to cite an archived page.</p>",
    ),
    "/zh/index.html": _zh,
    "/zh/gbk.html": _zh_gbk,
    "/ja/index.html": _ja,
    "/links.html": _simple("Links", _LINKS),
    "/private/secret.html": _simple("Staff area", "<p>Robots should not fetch this page.</p>"),
    "/gallery.html": _simple(
        "Gallery",
        '<p><img src="/img/photo.png" srcset="/img/photo.png 480w, /img/photo-2x.png 960w" '
        'sizes="(max-width: 600px) 480px, 960px" alt="Reading room" width="24" height="16"></p>',
    ),
    "/kitchen-sink.html": lambda version, path: _page(version, path, "Kitchen sink", _KITCHEN, head=_KITCHEN_HEAD),
    "/kitchen/based.html": _simple("Reached through the base element", "<p>Relative to the base href.</p>"),
    "/kitchen/area-target.html": _simple("Reached through an image map", "<p>An area element links here.</p>"),
    "/kitchen/refreshed.html": _simple("Reached through a meta refresh", "<p>A meta refresh points here.</p>"),
    "/frames/index.html": _frameset,
    "/frames/nav.html": _simple("Frame navigation", '<p><a href="/frames/main.html" target="main">Main frame</a></p>'),
    "/frames/main.html": _simple("Frame content", "<p>The main frame of the frameset.</p>"),
}

# -- binary and static files -------------------------------------------------------------------


def _png(width: int, height: int, pixel: Callable[[int, int], tuple[int, ...]]) -> bytes:
    """A valid RGB PNG. Deflate "stored" blocks keep its bytes the same under any zlib build."""
    raw = b"".join(b"\x00" + bytes(c for x in range(width) for c in pixel(x, y)) for y in range(height))
    blocks = [raw[i : i + 65535] for i in range(0, len(raw), 65535)]
    stream = (
        b"\x78\x01"
        + b"".join(
            bytes([i == len(blocks) - 1]) + struct.pack("<HH", len(b), len(b) ^ 0xFFFF) + b
            for i, b in enumerate(blocks)
        )
        + struct.pack(">I", zlib.adler32(raw))
    )

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", stream) + chunk(b"IEND", b"")


def _gradient(a: tuple[int, int, int], b: tuple[int, int, int], size: tuple[int, int]) -> bytes:
    w, h = size
    return _png(w, h, lambda x, y: tuple((a[i] * (w - x) + b[i] * x) // w for i in range(3)))


def _checker(a: tuple[int, int, int], b: tuple[int, int, int], size: tuple[int, int], cell: int = 4) -> bytes:
    return _png(size[0], size[1], lambda x, y: a if (x // cell + y // cell) % 2 else b)


def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _pdf(title: str, lines: list[str]) -> bytes:
    """A one-page PDF with real text (Helvetica), built by hand with a correct xref table."""
    text = "".join(f"({_pdf_escape(line)}) Tj T*\n" for line in lines)
    content = f"BT\n/F1 12 Tf\n16 TL\n72 720 Td\n{text}ET\n".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 "
        b"R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        f"<< /Title ({_pdf_escape(title)}) /Producer (Strata sample site) >>".encode("latin-1"),
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, obj in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, obj)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _report(version: int) -> bytes:
    lines = [
        "Strata Sample Library: Web Archive Review 2019-2024",
        "This quinquennial review describes how the library preserved websites",
        "for future readers over the last five years.",
        "Every harvest was checked against the live site, and unchanged pages",
        "were stored once and referenced afterwards.",
    ]
    if version >= 3:
        lines += [
            "Revised edition: the figures now include the summer harvest.",
            "Storage grew by a modest amount.",
        ]
    return _pdf("Web Archive Review", lines)


def _wav() -> bytes:
    samples = bytes(0xA0 if (i // 9) % 2 else 0x60 for i in range(800))  # 0.1 s square wave, 8 kHz, 8 bit
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    return (
        b"RIFF"
        + struct.pack("<I", 36 + len(samples))
        + b"WAVEfmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", len(samples))
        + samples
    )


def _svg(label: str, colour: str) -> bytes:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" viewBox="0 0 40 40">'
        f'<rect width="40" height="40" fill="{colour}"/><text x="4" y="24" font-size="10">{label}</text></svg>\n'
    ).encode()


_SITE_CSS = """@import url(print.css);
body { font-family: Georgia, serif; max-width: 48em; margin: 0 auto; background: #fdfdf8 url(../img/bg.png) repeat-x; }
header img { vertical-align: middle; }
nav a { margin-right: 0.5em; }
footer { color: #777; font-size: small; border-top: 1px solid #ccc; }
"""
_PRINT_CSS = "@media print {\n  nav, footer { display: none; }\n  body { background: none; }\n}\n"
_APP_JS = (
    "// Marks the page as scripted; fetches nothing, so a harvest needs no "
    'JavaScript.\ndocument.documentElement.classList.add("js");\n'
)
_ROBOTS = "User-agent: *\n" + "".join(f"Disallow: {p}\n" for p in ROBOTS_DISALLOW)
# The EBML header of a WebM file: enough for sniffers, not a playable clip.
_WEBM = bytes.fromhex("1a45dfa39f4286810142f7810142f2810442f381084282847765626d4287810242858102")

_FILES: dict[str, Callable[[int], tuple[str, bytes]]] = {
    "/robots.txt": lambda v: ("text/plain; charset=utf-8", _ROBOTS.encode()),
    "/static/site.css": lambda v: ("text/css; charset=utf-8", _SITE_CSS.encode()),
    "/static/print.css": lambda v: ("text/css; charset=utf-8", _PRINT_CSS.encode()),
    "/static/app.js": lambda v: ("text/javascript; charset=utf-8", _APP_JS.encode()),
    "/img/logo.png": lambda v: ("image/png", _checker((20, 60, 120), (240, 200, 40), (32, 32))),
    "/img/logo-2x.png": lambda v: ("image/png", _checker((20, 60, 120), (240, 200, 40), (64, 64), 8)),
    "/img/bg.png": lambda v: ("image/png", _gradient((250, 250, 240), (220, 225, 235), (8, 8))),
    "/img/photo.png": lambda v: (
        "image/png",
        _gradient((120, 80, 40), (240, 220, 180) if v == 1 else (90, 160, 210), (24, 16)),
    ),
    "/img/photo-2x.png": lambda v: ("image/png", _gradient((120, 80, 40), (240, 220, 180), (48, 32))),
    "/img/map.png": lambda v: ("image/png", _checker((30, 120, 30), (200, 240, 200), (16, 16))),
    "/img/tile.png": lambda v: ("image/png", _checker((200, 200, 200), (255, 255, 255), (8, 8), 2)),
    "/img/hero.png": lambda v: ("image/png", _gradient((200, 30, 30), (30, 30, 200), (16, 8))),
    "/media/widget.svg": lambda v: ("image/svg+xml", _svg("embed", "#cde")),
    "/media/chart.svg": lambda v: ("image/svg+xml", _svg("object", "#edc")),
    "/media/tone.wav": lambda v: ("audio/wav", _wav()),
    "/media/clip.webm": lambda v: ("video/webm", _WEBM),
    "/docs/report.pdf": lambda v: ("application/pdf", _report(v)),
}

# -- the model ---------------------------------------------------------------------------------

_Content = tuple[int, tuple[tuple[str, str], ...], bytes]


@lru_cache(maxsize=512)
def _content(version: int, path: str) -> _Content | None:
    """Status, headers and identity body of ``path`` in ``version``, or None (404)."""
    if version not in VERSIONS:
        return None
    if path in _REDIRECTS:
        status, target = _REDIRECTS[path]
        body = f'<!DOCTYPE html>\n<title>Moved</title>\n<p>Moved to <a href="{target}">{target}</a>.</p>\n'.encode()
        return status, (("Content-Type", "text/html; charset=utf-8"), ("Location", target)), body
    if path in _FILES:
        ctype, body = _FILES[path](version)
        return 200, (("Content-Type", ctype),), body
    html: str | None = None
    if path in _PAGES:
        html = _PAGES[path](version, path)
    elif path == "/news/" or (m := re.fullmatch(r"/news/page/(\d+)\.html", path)):
        html = _listing(version, 1 if path == "/news/" or m is None else int(m.group(1)))
    elif m := re.fullmatch(r"/news/article-(\d{4})\.html", path):
        n = int(m.group(1))
        if n in _articles(version):
            html = _article(version, n)
        elif n == 7 and version >= 2:
            body = b"<!DOCTYPE html>\n<title>Gone</title>\n<h1>410 Gone</h1>\n<p>This article was withdrawn.</p>\n"
            return 410, (("Content-Type", "text/html; charset=utf-8"),), body
    if html is None:
        return None
    if path == "/zh/gbk.html":
        return 200, (("Content-Type", "text/html"),), html.encode("gbk")  # charset only in the meta tag
    return 200, (("Content-Type", "text/html; charset=utf-8"),), html.encode("utf-8")


def _last_modified(version: int, path: str) -> str:
    """The date of the version since which the body has not changed."""
    body = _content(version, path)[2]  # type: ignore[index]
    since = version
    while since > 1 and (prev := _content(since - 1, path)) is not None and prev[2] == body:
        since -= 1
    return format_datetime(VERSION_DATES[since], usegmt=True)


@lru_cache(maxsize=512)
def _resource(version: int, path: str) -> Resource | None:
    content = _content(version, path)
    if content is None:
        return None
    status, headers, body = content
    if status != 200:
        return Resource(status, headers, body)
    validated = path.startswith(_VALIDATED_PREFIXES)
    etag = f'"{hashlib.sha1(body).hexdigest()[:16]}"' if validated or path in _ETAG_PAGES else None
    last_modified = _last_modified(version, path) if validated or path in _LAST_MODIFIED_PAGES else None
    return Resource(
        status,
        headers,
        body,
        chunked=path in _CHUNKED,
        gzip=path in _GZIP,
        etag=etag,
        last_modified=last_modified,
    )


_NOISE_RE = re.compile(rb'(<span class="(?:counter|generated)">)[^<]*(</span>)')


class SampleSite:
    """The content model: serve it with :class:`~demo.site_server.SiteServer`.

    All methods are class methods, so ``SampleSite.paths(2)`` and ``SampleSite().paths(2)`` agree.
    """

    versions = VERSIONS
    INDEX_PATTERNS = INDEX_PATTERNS
    CONTENT_PATTERNS = CONTENT_PATTERNS
    NOISE_SELECTORS = NOISE_SELECTORS
    NOISE_XPATHS = NOISE_XPATHS
    MARKERS = MARKERS

    @classmethod
    def resolve(cls, version: int, path: str, request_headers: RequestHeaders | None = None) -> Resource | None:
        """What the server sends for ``path`` (query included) in ``version``; None means 404."""
        if path.startswith("/members/"):
            return cls._members(path, request_headers)
        return _resource(version, path)

    # A members' area behind a login form (not linked from the site): POST /login with
    # user=archivist&password=letmein sets a session cookie; /members/ answers 403 without it.
    LOGIN_FIELDS = ("user=archivist", "password=letmein")
    SESSION_COOKIE = "session=members-0123456789"

    @classmethod
    def resolve_post(cls, version: int, path: str, request_headers, body: bytes) -> Resource | None:
        if path != "/login":
            return None
        if sorted(body.decode("utf-8", "replace").split("&")) == sorted(cls.LOGIN_FIELDS):
            return Resource(
                303,
                (
                    ("Location", "/members/"),
                    ("Set-Cookie", cls.SESSION_COOKIE + "; Path=/; HttpOnly"),
                    ("Content-Type", "text/plain"),
                ),
                b"welcome\n",
            )
        return Resource(403, (("Content-Type", "text/plain"),), b"wrong user or password\n")

    @classmethod
    def _members(cls, path: str, request_headers) -> Resource | None:
        cookie = (request_headers or {}).get("Cookie") or ""
        if cls.SESSION_COOKIE not in cookie:
            return Resource(403, (("Content-Type", "text/html; charset=utf-8"),), b"<p>members only</p>")
        if path == "/members/":
            return Resource(
                200,
                (("Content-Type", "text/html; charset=utf-8"),),
                b"<h1>Members</h1><p>Minutes of the board, marker mkmembers.</p>"
                b'<a href="/members/minutes.html">minutes</a>',
            )
        if path == "/members/minutes.html":
            return Resource(200, (("Content-Type", "text/html; charset=utf-8"),), b"<p>Board minutes.</p>")
        return None

    @classmethod
    def resource(cls, version: int, path: str) -> Resource | None:
        """The identity-encoded resource, or None where the server answers 404."""
        return _resource(version, path)

    @classmethod
    def all_paths(cls) -> list[str]:
        """Every path that exists in some version, or answers 404/410 after a deletion."""
        found = set().union(*(cls.paths(v) for v in VERSIONS))
        found |= {_article_path(n) for n in _TITLES}
        return sorted(found)

    @classmethod
    def paths(cls, version: int, *, obey_robots: bool = False) -> set[str]:
        """Paths reachable by following links from ``/``, plus robots.txt and redirect sources.

        With ``obey_robots``, leave out what robots.txt disallows.
        """
        found = {"/"} | set(_PAGES) | set(_FILES) | set(_REDIRECTS)
        found |= {_article_path(n) for n in _articles(version)}
        ids = _articles(version)
        found |= {_listing_path(p) for p in range(1, -(-len(ids) // _PER_PAGE) + 1)}
        if obey_robots:
            found = {p for p in found if cls.robots_allowed(p)}
        return found

    @classmethod
    def robots_allowed(cls, path: str) -> bool:
        return not path.startswith(ROBOTS_DISALLOW)

    @classmethod
    def page_kind(cls, path: str) -> str | None:
        """``"index"``, ``"content"`` or None (not an HTML page of the site)."""
        if path in _REDIRECTS:
            return None
        if any(re.search(p, path) for p in INDEX_PATTERNS):
            return "index"
        if any(re.search(p, path) for p in CONTENT_PATTERNS):
            return "content"
        return None

    @classmethod
    def index_paths(cls, version: int) -> set[str]:
        return {p for p in cls.paths(version) if cls.page_kind(p) == "index"}

    @classmethod
    def content_paths(cls, version: int) -> set[str]:
        return {p for p in cls.paths(version) if cls.page_kind(p) == "content"}

    @staticmethod
    def strip_noise(body: bytes) -> bytes:
        """``body`` with the footer noise emptied (the parts ``NOISE_SELECTORS`` name)."""
        return _NOISE_RE.sub(rb"\1\2", body)

    @classmethod
    def change_kind(cls, old_version: int, new_version: int, path: str) -> str:
        """``"new"``, ``"changed"``, ``"soft"`` (footer noise only), ``"unchanged"``, ``"deleted"``
        or ``"absent"``, comparing what the server sends for ``path`` in the two versions."""
        old, new = _resource(old_version, path), _resource(new_version, path)
        was = old is not None and old.status < 400
        now = new is not None and new.status < 400
        if not was:
            return "new" if now else "absent"
        if not now:
            return "deleted"
        assert old is not None and new is not None
        if (old.status, old.headers) != (new.status, new.headers):
            return "changed"
        if old.body == new.body:
            return "unchanged"
        return "soft" if cls.strip_noise(old.body) == cls.strip_noise(new.body) else "changed"

    @classmethod
    def text(cls, version: int, path: str) -> str:
        """The body decoded as a reader sees it (HTML and text only; '' otherwise)."""
        res = _resource(version, path)
        if res is None or not (res.content_type or "").startswith(("text/", "image/svg")):
            return ""
        return res.body.decode("gbk" if path == "/zh/gbk.html" else "utf-8")

    @classmethod
    def containing(cls, version: int, term: str) -> set[str]:
        """Pages (HTML and the PDF) of ``version`` whose text contains ``term``: fulltext ground truth."""
        hits = {p for p in cls.paths(version) if cls.page_kind(p) and term in _visible(cls.text(version, p))}
        if term in "\n".join(_pdf_lines(version)):
            hits.add("/docs/report.pdf")
        return hits


def _visible(html: str) -> str:
    html = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", html)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _pdf_lines(version: int) -> list[str]:
    return re.findall(r"\((.*?)\) Tj", _report(version).decode("latin-1"))


def serve_sample_site(
    version: int = 1, port: int = 0, latency: float = 0.0, routes: Callable[[str], Resource | None] | None = None
) -> SiteServer:
    """Start the sample site on ``127.0.0.1`` and return the running server (stop it when done).
    ``routes`` are extra endpoints asked first (the tests' hostile ones)."""
    return SiteServer(SampleSite(), version, port=port, latency=latency, routes=routes).start()


def main(argv: list[str] | None = None) -> None:
    """Serve the sample site until interrupted; type 1, 2 or 3 and Enter to switch versions."""
    parser = argparse.ArgumentParser(prog="python -m demo.sample_site", description=main.__doc__)
    parser.add_argument("--site-version", type=int, default=1, choices=VERSIONS, help="version to start with")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before each response")
    args = parser.parse_args(argv)
    server = serve_sample_site(args.site_version, args.port, args.latency)
    print(f"Sample site version {server.version} at {server.base_url}/ (Ctrl-C to stop)", flush=True)
    try:
        for line in sys.stdin:
            if line.strip() in {str(v) for v in VERSIONS}:
                server.version = int(line)
                print(f"Now serving version {server.version}", flush=True)
        threading.Event().wait()  # stdin closed (e.g. run in the background): serve until interrupted
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()

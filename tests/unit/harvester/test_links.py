"""Tests for harvester.links (link extraction) and strata.charset (charset sniffing)."""

import codecs
import html
import random
import time

import pytest

from harvester.links import EMBED, NAVIGATION, REFRESH, Link, extract_links, parse_srcset
from strata.charset import codec_for_label, css_charset, decode, html_charset

PAGE = "http://example.com/dir/page.html"

KITCHEN_SINK = b"""<!DOCTYPE html>
<html><head>
<meta charset="utf-8">
<meta http-equiv="Refresh" content="30; URL='/refreshed'">
<link rel="stylesheet" href="/css/main.css">
<link rel="alternate stylesheet" href="/css/alt.css">
<link rel="shortcut icon" href="/favicon.ico">
<link rel="apple-touch-icon" href="/touch.png">
<link rel="preload" href="/font.woff2" as="font">
<link rel="modulepreload" href="/mod.js">
<link rel="preload" as="image" imagesrcset="/hero-1x.png 1x, /hero-2x.png 2x">
<link rel="canonical" href="/canonical">
<link rel="alternate" type="application/rss+xml" href="/feed.xml">
<link rel="dns-prefetch" href="//dns.example.net">
<link rel="preconnect" href="https://connect.example.net">
<script src="/js/app.js"></script>
<script>var s = "<a href='/not-a-link-in-script'>";</script>
<style>
  @import "/css/imported.css";
  @import url(/css/imported-url.css);
  body { background: url("/img/bg.png") }
  /* .x { background: url(/img/commented-out.png) } */
  .y { background-image: url(data:image/png;base64,AAAA) }
</style>
</head>
<body background="/img/body-bg.gif">
<!-- <a href="/in-a-comment">x</a> -->
<a href="a.html">relative</a>
<a href="/abs#frag">absolute with fragment</a>
<a href="javascript:void(0)">js</a>
<a href="mailto:x@example.com">mail</a>
<a href="tel:+1">tel</a>
<a>no href</a>
<map><area href="/area" shape="rect" coords="0,0,1,1"></map>
<img src="/img/a.png" srcset="/img/a-1x.png 1x, /img/a-2x.png 2x" alt="">
<img data-src="/img/lazy.png" data-srcset="/img/lazy-2x.png 2x">
<picture><source srcset="/img/p.webp 640w, /img/p-big.webp 1280w" type="image/webp"></picture>
<iframe src="/frame.html"></iframe>
<frameset><frame src="/frame2.html"></frameset>
<embed src="/flash.swf">
<object data="/object.pdf"></object>
<audio src="/a.mp3"></audio>
<video src="/v.mp4" poster="/poster.jpg"><source src="/v.webm"><track src="/subs.vtt"></video>
<input type="image" src="/button.png">
<input type="text" src="/not-an-image.png">
<div style="background: url('/img/inline.png')">inline</div>
<table background="/img/table.gif"><tr><td background="/img/td.gif">x</td></tr></table>
<svg><image href="/img/svg-image.png"/></svg>
<noscript><img src="/img/noscript.png"></noscript>
</body></html>
"""

EXPECTED_KINDS = {
    "http://example.com/refreshed": REFRESH,
    "http://example.com/css/main.css": EMBED,
    "http://example.com/css/alt.css": EMBED,
    "http://example.com/favicon.ico": EMBED,
    "http://example.com/touch.png": EMBED,
    "http://example.com/font.woff2": EMBED,
    "http://example.com/mod.js": EMBED,
    "http://example.com/hero-1x.png": EMBED,
    "http://example.com/hero-2x.png": EMBED,
    "http://example.com/canonical": NAVIGATION,
    "http://example.com/feed.xml": NAVIGATION,
    "http://example.com/js/app.js": EMBED,
    "http://example.com/css/imported.css": EMBED,
    "http://example.com/css/imported-url.css": EMBED,
    "http://example.com/img/bg.png": EMBED,
    "http://example.com/img/body-bg.gif": EMBED,
    "http://example.com/dir/a.html": NAVIGATION,
    "http://example.com/abs": NAVIGATION,
    "http://example.com/area": NAVIGATION,
    "http://example.com/img/a.png": EMBED,
    "http://example.com/img/a-1x.png": EMBED,
    "http://example.com/img/a-2x.png": EMBED,
    "http://example.com/img/lazy.png": EMBED,
    "http://example.com/img/lazy-2x.png": EMBED,
    "http://example.com/img/p.webp": EMBED,
    "http://example.com/img/p-big.webp": EMBED,
    "http://example.com/frame.html": EMBED,
    "http://example.com/frame2.html": EMBED,
    "http://example.com/flash.swf": EMBED,
    "http://example.com/object.pdf": EMBED,
    "http://example.com/a.mp3": EMBED,
    "http://example.com/v.mp4": EMBED,
    "http://example.com/poster.jpg": EMBED,
    "http://example.com/v.webm": EMBED,
    "http://example.com/subs.vtt": EMBED,
    "http://example.com/button.png": EMBED,
    "http://example.com/img/inline.png": EMBED,
    "http://example.com/img/table.gif": EMBED,
    "http://example.com/img/td.gif": EMBED,
    "http://example.com/img/svg-image.png": EMBED,
    "http://example.com/img/noscript.png": EMBED,
}


def urls(links):
    return [link.url for link in links]


def test_kitchen_sink_kinds():
    links = extract_links(KITCHEN_SINK, PAGE, "text/html; charset=utf-8")
    assert {link.url: link.kind for link in links} == EXPECTED_KINDS
    assert len(links) == len(EXPECTED_KINDS)  # no repeats


def test_kitchen_sink_sources_and_order():
    links = extract_links(KITCHEN_SINK, PAGE, "text/html")
    by_url = {link.url: link for link in links}
    assert by_url["http://example.com/dir/a.html"] == Link("http://example.com/dir/a.html", NAVIGATION, "a@href")
    assert by_url["http://example.com/img/a-2x.png"].source == "img@srcset"
    assert by_url["http://example.com/img/lazy.png"].source == "img@data-src"
    assert by_url["http://example.com/img/inline.png"].source == "div@style"
    assert by_url["http://example.com/css/imported.css"].source == "style"
    assert by_url["http://example.com/refreshed"].source == "meta@refresh"
    assert by_url["http://example.com/poster.jpg"].source == "video@poster"
    assert by_url["http://example.com/object.pdf"].source == "object@data"
    assert by_url["http://example.com/hero-2x.png"].source == "link@imagesrcset"
    order = urls(links)
    assert order.index("http://example.com/css/main.css") < order.index("http://example.com/dir/a.html")
    assert order.index("http://example.com/dir/a.html") < order.index("http://example.com/img/noscript.png")


@pytest.mark.parametrize(
    ("srcset", "expected"),
    [
        ("a.jpg", ["a.jpg"]),
        ("a.jpg 1x, b.jpg 2x", ["a.jpg", "b.jpg"]),
        ("  a.jpg   640w ,\n b.jpg 1280w  ,c.jpg 2x ", ["a.jpg", "b.jpg", "c.jpg"]),
        ("a.jpg 1x,b.jpg 2x", ["a.jpg", "b.jpg"]),
        ("a.jpg,b.jpg 2x", ["a.jpg,b.jpg"]),  # a comma right after a URL is part of it
        ("a.jpg, b.jpg", ["a.jpg", "b.jpg"]),
        (
            "https://cdn.example/w_100,h_50/pic.jpg 100w, https://cdn.example/w_200,h_100/pic.jpg 200w",
            ["https://cdn.example/w_100,h_50/pic.jpg", "https://cdn.example/w_200,h_100/pic.jpg"],
        ),
        ("a.jpg 100w (junk, more), b.jpg 2x", ["a.jpg", "b.jpg"]),
        ("data:image/png;base64,AAA= 1x, b.jpg 2x", ["data:image/png;base64,AAA=", "b.jpg"]),
        ("", []),
        (" , , ", []),
    ],
)
def test_parse_srcset(srcset, expected):
    assert parse_srcset(srcset) == expected


def test_srcset_links_skip_data_uris():
    body = b'<img srcset="data:image/png;base64,AAA= 1x, /real.png 2x, /x,y.png 3x">'
    assert urls(extract_links(body, PAGE, "text/html")) == [
        "http://example.com/real.png",
        "http://example.com/x,y.png",
    ]


def test_base_href_applies_to_links_before_and_after_it():
    body = b"""<html><head>
    <link rel="stylesheet" href="style.css">
    <base href="/other/base/">
    <base href="http://ignored.example/">
    </head><body><a href="page.html">p</a><a href="/root">r</a></body></html>"""
    assert urls(extract_links(body, PAGE, "text/html")) == [
        "http://example.com/other/base/style.css",
        "http://example.com/other/base/page.html",
        "http://example.com/root",
    ]


def test_base_href_to_another_host_and_unusable_base():
    body = b'<base href="https://cdn.example.net/site/"><a href="x">x</a>'
    assert urls(extract_links(body, PAGE, "text/html")) == ["https://cdn.example.net/site/x"]
    body = b'<base href="javascript:alert(1)"><a href="x">x</a>'
    assert urls(extract_links(body, PAGE, "text/html")) == ["http://example.com/dir/x"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("0; url=http://other.example/next", "http://other.example/next"),
        ("0;URL='/quoted'", "http://example.com/quoted"),
        ('5 ; url = "dq.html" ', "http://example.com/dir/dq.html"),
        ("0, url=/comma", "http://example.com/comma"),
        ("0.5; /no-url-keyword", "http://example.com/no-url-keyword"),
        ("url=/no-delay", "http://example.com/no-delay"),
        ("10", None),
        ("", None),
        ("0; url=javascript:alert(1)", None),
    ],
)
def test_meta_refresh(content, expected):
    body = f'<meta http-equiv="refresh" content="{html.escape(content)}">'.encode()
    links = extract_links(body, PAGE, "text/html")
    assert links == ([Link(expected, REFRESH, "meta@refresh")] if expected else [])


def test_css_body():
    css = b"""@charset "utf-8";
    @import "quoted-import.css";
    @import 'single-import.css' screen;
    @import url(url-import.css);
    @IMPORT URL("upper.css");
    /* url(/commented.png) @import "commented.css"; */
    a { background: url(unquoted.png) }
    b { background: url( "double.png" ) }
    c { background: url('single.png') }
    d { background: url(data:image/gif;base64,R0lGOD) }
    e { background: url("data:image/svg+xml;utf8,<svg></svg>") }
    f { src: url(/fonts/f.woff2) format("woff2"), url(https://cdn.example/f.woff) }
    g { background: url() }
    /* unterminated comment url(never.png)"""
    links = extract_links(css, "http://example.com/css/site.css", "text/css")
    assert urls(links) == [
        "http://example.com/css/quoted-import.css",
        "http://example.com/css/single-import.css",
        "http://example.com/css/url-import.css",
        "http://example.com/css/upper.css",
        "http://example.com/css/unquoted.png",
        "http://example.com/css/double.png",
        "http://example.com/css/single.png",
        "http://example.com/fonts/f.woff2",
        "https://cdn.example/f.woff",
        "http://example.com/css/site.css",  # url() means the stylesheet itself
    ]
    assert {(link.kind, link.source) for link in links} == {(EMBED, "css")}


def test_css_pathological_input_is_fast():
    start = time.monotonic()
    for css in (b"/*" * 200_000, b"url(" * 200_000, b'url("' * 200_000, b"@import " * 100_000):
        assert extract_links(css, PAGE, "text/css") == []
    assert time.monotonic() - start < 1.0


def test_gbk_page_with_meta_charset():
    page = (
        '<html><head><meta charset="gbk"><title>图书馆</title></head><body><a '
        'href="/中文/页面.html">链接</a></body></html>'
    )
    links = extract_links(page.encode("gbk"), PAGE, "text/html")
    assert urls(links) == ["http://example.com/%E4%B8%AD%E6%96%87/%E9%A1%B5%E9%9D%A2.html"]


def test_gbk_page_with_http_equiv_and_header_charset_wins():
    page = '<meta http-equiv="Content-Type" content="text/html; charset=GB2312"><a href="/中文">x</a>'
    assert urls(extract_links(page.encode("gbk"), PAGE, "text/html")) == ["http://example.com/%E4%B8%AD%E6%96%87"]
    # The header charset wins over <meta>.
    utf8 = '<meta charset="gbk"><a href="/中文">x</a>'.encode()
    assert urls(extract_links(utf8, PAGE, "text/html; charset=UTF-8")) == ["http://example.com/%E4%B8%AD%E6%96%87"]
    assert urls(extract_links(utf8, PAGE, "text/html", charset="utf-8")) == ["http://example.com/%E4%B8%AD%E6%96%87"]


@pytest.mark.parametrize("bogus", ["bogus-charset", "rot13", "utf-7", "x\x00y", "undefined", ""])
def test_bogus_charset_falls_back_to_utf8(bogus):
    body = f'<meta charset="{bogus}"><a href="/é">x</a>'.encode()
    assert urls(extract_links(body, PAGE, "text/html", charset=bogus)) == ["http://example.com/%C3%A9"]


def test_invalid_bytes_are_replaced():
    body = b'<a href="/bad\xff\xfe">x</a><a href="/good">y</a>'
    assert urls(extract_links(body, PAGE, "text/html; charset=utf-8")) == [
        "http://example.com/bad%EF%BF%BD%EF%BF%BD",
        "http://example.com/good",
    ]
    # Undeclared, and too short to detect: windows-1252, the browsers' default.
    assert urls(extract_links(body, PAGE, "text/html"))[0] == "http://example.com/bad%C3%BF%C3%BE"


def test_xml_declaration_with_other_encoding_is_harmless():
    body = b"<?xml version='1.0' encoding='iso-8859-1'?><html><body><a href='/x'>x</a></body></html>"
    assert urls(extract_links(body, PAGE, "application/xhtml+xml")) == ["http://example.com/x"]


def test_deep_nesting_still_finds_the_link_at_the_bottom():
    # libxml2 stops building a tree at depth 256 (2,048 with huge_tree); events go on.
    body = b"<html><body>" + b"<div>" * 5000 + b'<a href="/bottom">deep</a>' + b"</div>" * 5000
    body += b'<img src="/after.png"></body></html>'
    assert urls(extract_links(body, PAGE, "text/html")) == [
        "http://example.com/bottom",
        "http://example.com/after.png",
    ]


def test_many_links_are_capped_quickly():
    body = b"<html><body>" + b"".join(b'<a href="/l%d">x</a>' % i for i in range(200_000)) + b"</body></html>"
    start = time.monotonic()
    links = extract_links(body, PAGE, "text/html")
    assert time.monotonic() - start < 2.0
    assert len(links) == 10_000
    assert links[0].url == "http://example.com/l0"
    assert links[-1].url == "http://example.com/l9999"
    assert len(extract_links(body, PAGE, "text/html", max_links=3)) == 3
    assert extract_links(body, PAGE, "text/html", max_links=0) == []


def test_max_bytes():
    body = b'<a href="/first">1</a>' + b" " * 1000 + b'<a href="/second">2</a>'
    assert urls(extract_links(body, PAGE, "text/html", max_bytes=500)) == ["http://example.com/first"]


def test_repeats_are_dropped_per_kind():
    body = b'<a href="/x">1</a><a href="/x#y">2</a><img src="/x"><a href="http://EXAMPLE.com:80/x">3</a>'
    assert extract_links(body, PAGE, "text/html") == [
        Link("http://example.com/x", NAVIGATION, "a@href"),
        Link("http://example.com/x", EMBED, "img@src"),
    ]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"", "text/html"),
        (b"   \n\t ", "text/html"),
        (b"\x00\x00\x00", "text/html"),
        (b"<html></html>", "text/html"),
        (b"", "text/css"),
        (b'<a href="/x">x</a>', "image/png"),
        (b'<a href="/x">x</a>', ""),
        (b'<a href="/x">x</a>', None),
    ],
)
def test_empty_and_other_bodies(body, content_type):
    assert extract_links(body, PAGE, content_type) == []


def test_unusable_base_keeps_absolute_links():
    body = b'<a href="relative">r</a><a href="https://example.org/abs">a</a>'
    assert urls(extract_links(body, "not a url", "text/html")) == ["https://example.org/abs"]


def test_random_bytes_never_raise():
    rng = random.Random(99)
    pieces = [
        b"<a href=",
        b"<img srcset='",
        b"<base href=",
        b"<style>",
        b"url(",
        b"@import '",
        b"<meta http-equiv=refresh content='0;url=",
        b"</",
        b">",
        b'"',
        b"'",
        b"\xff",
        b"\x00",
        b"<!--",
        b"<![CDATA[",
        b"<?xml encoding='ebcdic'?>",
        b"<div>" * 50,
        "中".encode("gbk"),
    ]
    for index in range(150):
        if index % 2:
            body = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 2000)))
        else:
            body = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 200)))
        for content_type in ("text/html", "text/css", "application/xhtml+xml; charset=nonsense"):
            for link in extract_links(body, PAGE, content_type, max_links=50):
                assert link.url.startswith(("http://", "https://"))


# strata.charset


@pytest.mark.parametrize(
    ("body", "header", "expected"),
    [
        (b"<p>plain</p>", None, "utf-8"),
        (b'<meta charset="gbk">', None, "gb18030"),
        (b"<meta charset=Shift_JIS>", None, "cp932"),
        (b"<META HTTP-EQUIV='Content-Type' CONTENT='text/html; charset=windows-1251'>", None, "cp1251"),
        (b'<meta charset="iso-8859-1">', None, "cp1252"),
        (b'<meta charset="nonsense"><meta charset="euc-jp">', None, "euc_jp"),
        (b'<meta charset="utf-16">', None, "utf-8"),
        (b'<meta charset="gbk">', "koi8-r", "koi8-r"),
        (b'<meta charset="gbk">', "nonsense", "gb18030"),
        (codecs.BOM_UTF8 + b'<meta charset="gbk">', "koi8-r", "utf-8"),
        (codecs.BOM_UTF16_LE + "<p>".encode("utf-16-le"), None, "utf-16-le"),
        # Chromium honours a <meta> anywhere in <head> (checked after a 9,000-byte comment), but not one
        # past the first 1,024 bytes once <body> has begun.
        (b"<head><!--" + b" " * 9000 + b'--><meta charset="gbk">', None, "gb18030"),
        (b"<head></head><body>" + b" " * 1024 + b'<meta charset="gbk">', None, "utf-8"),
        (b'<body><meta charset="gbk">', None, "gb18030"),
        (b" " * 70000 + b'<meta charset="gbk">', None, "utf-8"),
    ],
)
def test_html_charset(body, header, expected):
    assert html_charset(body, header) == expected


def test_css_charset_and_decode():
    assert css_charset(b'@charset "windows-1252"; a{}') == "cp1252"
    assert css_charset(b'@charset "windows-1252"; a{}', "utf-8") == "utf-8"
    assert css_charset(b"a{}") == "utf-8"
    assert decode(codecs.BOM_UTF8 + b"x\xff", "utf-8") == "x\ufffd"
    assert decode(b"x", "no-such-codec") == "x"


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("UTF8", "utf-8"),
        (" gb2312\t", "gb18030"),
        (" 'gb2312' ", None),  # quotes are the Content-Type parser's business; a label has none
        ("x-sjis", "cp932"),
        ("latin1", "cp1252"),
        (b"utf-8", "utf-8"),
        ("base64", None),
        ("idna", None),
        ("", None),
        (None, None),
        ("\x00", None),
    ],
)
def test_codec_for_label(label, expected):
    assert codec_for_label(label) == expected

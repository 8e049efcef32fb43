"""How a document's charset is decided (strata.charset), on the CJK test site's pages and on edge cases.

Expected answers are what Chromium reported as ``document.characterSet`` for the same pages
(tests/test_cjk_chromium.py checks them live): GBK for undeclared GBK and GB18030 pages and for a
``charset=gbk`` header, gb18030 for a GB18030 ``<meta>``, Shift_JIS, windows-1252 for an
``iso-8859-1`` header, UTF-8 for a ``charset=utf-8`` header on Shift_JIS bytes.
"""

from __future__ import annotations

import pytest

from harvester.change import NoiseRules, main_text
from index.fulltext.text import as_written, extract
from strata.charset import DocumentCharset, charset_param, decode, detect_codec, sniff_html
from tests.support.cjk_site import LIVE_CHARSET, CjkSite

# Chromium's document.characterSet -> (decoder, query encoder) in Python codecs.
CHROMIUM = {
    "GBK": ("gb18030", "gbk"),
    "gb18030": ("gb18030", "gb18030"),
    "Shift_JIS": ("cp932", "cp932"),
    "windows-1252": ("cp1252", "cp1252"),
    "UTF-8": ("utf-8", "utf-8"),
}
PAGES = CjkSite().pages


@pytest.mark.parametrize("target", list(PAGES))
def test_each_page_is_read_as_chromium_reads_it(target):
    page = PAGES[target]
    found = sniff_html(page.body, charset_param(page.content_type))
    assert (found.codec, found.query_codec) == CHROMIUM[LIVE_CHARSET[page.group]], target
    assert (
        found.source
        == {"none": "detected", "meta": "meta", "wrong-header": "header", "header": "header"}[page.declared]
    )
    if page.declared != "wrong-header":
        assert page.marker in decode(page.body, found.codec)


def test_change_detection_and_full_text_read_undeclared_pages_right():
    rules = NoiseRules()
    for page in PAGES.values():
        if page.declared == "none":
            assert page.marker in main_text(page.body, None, rules), page.target
            assert as_written(page.marker) in extract(page.body, page.content_type).text


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("gb2312", ("gb18030", "gbk")),
        ("GBK", ("gb18030", "gbk")),
        ("x-gbk", ("gb18030", "gbk")),
        ("gb18030", ("gb18030", "gb18030")),
        ("Shift_JIS", ("cp932", "cp932")),
        ("windows-31j", ("cp932", "cp932")),
        ("euc-jp", ("euc_jp", "euc_jp")),
        ("big5", ("big5hkscs", "big5hkscs")),
        ("latin1", ("cp1252", "cp1252")),
        ("us-ascii", ("cp1252", "cp1252")),
        ("utf-16", ("utf-8", "utf-8")),  # a <meta> read as ASCII cannot mean UTF-16
    ],
)
def test_meta_labels_give_the_browsers_decoder_and_query_encoder(label, expected):
    found = sniff_html(f'<meta charset="{label}"><p>x</p>'.encode())
    assert (found.codec, found.query_codec, found.source) == (*expected, "meta")


def test_order_bom_header_meta_detection():
    body = '<meta charset="gbk"><p>本网站是市人民政府信息公开平台。</p>'.encode("gbk")
    assert sniff_html(b"\xef\xbb\xbf" + body, "koi8-r") == DocumentCharset("utf-8", "utf-8", "bom")
    assert sniff_html(body, "koi8-r") == DocumentCharset("koi8-r", "koi8-r", "header")
    assert sniff_html(body, "no-such-charset") == DocumentCharset("gb18030", "gbk", "meta")
    assert sniff_html("<p>café</p>".encode()) == DocumentCharset("utf-8", "utf-8", "detected")
    assert sniff_html(b"<p>caf\xe9</p>") == DocumentCharset("cp1252", "cp1252", "default")  # too little to detect
    assert sniff_html(b"") == DocumentCharset("utf-8", "utf-8", "detected")


def test_utf8_cut_by_the_sample_is_still_utf8():
    body = ("<p>" + "图书馆" * 30000 + "</p>").encode()
    assert len(body) > 64 * 1024 and sniff_html(body).codec == "utf-8"
    assert detect_codec(body) == "utf-8"


def test_windows_1252_reads_its_undefined_bytes_as_c1_controls_as_browsers_do():
    assert decode(b"\x80\x81\x8d\x8f\x90\x9d\x9f\xe9", "cp1252") == "\u20ac\x81\x8d\x8f\x90\x9d\u0178\xe9"
    assert decode(b"caf\xe9", "gb18030") == "caf\ufffd"


def test_full_text_of_a_short_undeclared_latin_text_is_windows_1252():
    assert detect_codec(b"caf\xe9 cr\xe8me") == "cp1252"
    assert extract(b"caf\xe9 cr\xe8me", "text/plain").text == "café crème"


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("text/html; charset=gbk", "gbk"),
        ("text/html;charset=GBK", "GBK"),
        ('text/html; Charset="Shift_JIS"', "Shift_JIS"),
        ("text/html; charset='euc-jp'", "'euc-jp'"),  # not quotes: a label no browser knows
        ('text/html; charset="gb\\k"x', "gbk"),  # a quoted string, escapes, then ignored to ";"
        ('text/html; foo="a;charset=utf-8"; charset=gbk', "gbk"),
        ("text/html; charset=gbk; charset=utf-8", "gbk"),  # the first wins
        ('text/html; charset=""; charset=gbk', None),  # ... even an empty one
        ("text/html; q=1; charset=utf-8 ", "utf-8"),
        ("text/html; charset = utf-8", None),  # the name runs to "=": "charset " is not "charset"
        ("text/html; charset=", None),
        ("text/html charset=gbk", None),  # no ";": no parameter, as in Chromium
        ("text/html; xcharset=gbk", None),
        ("text/html", None),
        ("", None),
        (None, None),
    ],
)
def test_the_content_type_charset_is_read_once_for_every_surface(content_type, expected):
    assert charset_param(content_type) == expected


def test_replay_and_search_read_the_header_charset_as_the_harvester_does():
    from index.fulltext.text import extract
    from replay.pagecharset import page_charset

    body = "<p>中文</p>".encode("gbk")
    content_type = 'text/html; foo="a;charset=utf-8"; charset=gbk'  # a regex finds utf-8 first
    # The header's charset is valid, so replay declares nothing of its own ...
    assert page_charset(body, content_type) is None
    # ... and search decodes with GBK, as the browser does.
    assert "中文" in extract(body, content_type).text

"""Link queries in the document's encoding (strata.query_encoding, through extract_links).

Expected URLs are what Chromium gave as ``a.href`` for the same markup (recorded with
/usr/bin/chromium on tests/cjk_site.py's pages and on the small cases below; the live comparison
is tests/test_cjk_chromium.py).
"""

from __future__ import annotations

import pytest

from harvester.links import extract_links
from strata.query_encoding import encode_query
from tests.support.cjk_site import CjkSite

BASE = "http://127.0.0.1:8000"


def hrefs(body: bytes, content_type: str = "text/html", page: str = "/g/") -> list[str]:
    return [link.url[len(BASE) :] for link in extract_links(body, BASE + page, content_type)]


@pytest.mark.parametrize(
    ("href", "codec", "expected"),
    [
        ("?s=大", "gbk", "?s=%B4%F3"),
        ("?s=大", "utf-8", "?s=大"),  # left to normalize_url
        ("a/大?s=大#大", "gbk", "a/大?s=%B4%F3#大"),  # path and fragment untouched
        ("a#x?s=大", "gbk", "a#x?s=大"),  # a "?" in the fragment
        ("a?s=abc", "gbk", "a?s=abc"),
        ("list.html?k=乗车", "gbk", "list.html?k=%81\\%B3%B5"),  # second byte 5C stays a character
        ("list.html?k=表示", "cp932", "list.html?k=%95\\%8E%A6"),
        ("name?n=𠮷", "gb18030", "name?n=%954%B25"),
        ("name?n=𠮷", "gbk", "name?n=%26%23134071%3B"),  # GBK cannot: &#134071;
        ("a?q=€", "gbk", "a?q=%80"),  # as Chromium, unlike Python's gbk
        ("a?q=\x81\x8d", "cp1252", "a?q=%81%8D"),
        ("a?q=\u0416", "cp1251", "a?q=%C6"),
        ("a?q=\ud800", "gbk", "a?q=%26%2365533%3B"),  # a lone surrogate is U+FFFD first
        ("a?q=大", "no-such-codec", "a?q=%E5%A4%A7"),
    ],
)
def test_encode_query(href, codec, expected):
    assert encode_query(href, codec) == expected


def test_links_of_a_gbk_page_are_requested_as_chromium_requests_them():
    body = '<meta charset="gbk"><a href="/列表.html?dept=教育局&amp;page=2">x</a><a href="?s=大">y</a>'.encode("gbk")
    assert hrefs(body) == ["/%E5%88%97%E8%A1%A8.html?dept=%BD%CC%D3%FD%BE%D6&page=2", "/g/?s=%B4%F3"]
    # The same markup in UTF-8: UTF-8 everywhere (the old behaviour on every page).
    body = '<meta charset="utf-8"><a href="?s=大">y</a>'.encode()
    assert hrefs(body) == ["/g/?s=%E5%A4%A7"]


def test_srcset_base_and_css_urls():
    body = (
        '<meta charset="gbk"><base href="/b/?x=大"><a href="">self</a><img srcset="i.png?t=大 2x">'
        '<div style="background: url(c.png?t=大)"></div>'
    ).encode("gbk")
    assert hrefs(body) == ["/b/?x=%B4%F3", "/b/i.png?t=%B4%F3", "/b/c.png?t=%E5%A4%A7"]  # url() in CSS is UTF-8


# What Chromium's a.href gave on the pages a wrong header misleads it on (recorded).
CHROMIUM_WRONG_HEADER = {
    "/gbk-wrong/": [
        "/gbk-wrong/%C3%90%C3%82%C3%8E%C3%85/%C3%81%C3%90%C2%B1%C3%AD.html?dept=%BD%CC%D3%FD%BE%D6&page=2",
        "/gbk-wrong/%C3%8B%C3%91%C3%8B%C3%B7?q=%B4%F3%D1%A7&lang=zh",
        "/gbk-wrong/detail.html?id=7&title=%B9%AB%B8%E6",
        "/gbk-wrong/%C3%8E%C3%84%C2%B5%C2%B5/%C2%B5%C3%9A%C3%92%C2%BB%C3%95%C3%82.html",
        "/gbk-wrong/?s=%B4%F3",
        "/gbk-wrong/list.html?k=%81\\%B3%B5&sort=new",
        "/gbk-wrong/notice.html?id=8",
    ],
    "/sjis-wrong/": [
        "/sjis-wrong/%EF%BF%BD%EF%BF%BD%EF%BF%BDm%EF%BF%BD%E7%82%B9/%EF%BF%BD%EA%97%97.html"
        "?%EF%BF%BD%EF%BF%BD=%EF%BF%BDh%EF%BF%BD%D0%89%EF%BF%BD&page=2",
        "/sjis-wrong/%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD?q=%EF%BF%BD%EF%BF%BDw&lang=ja",
        "/sjis-wrong/detail.html?id=7&title=%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD",
        "/sjis-wrong/%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD/%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD.html",
        "/sjis-wrong/?s=%EF%BF%BD%EF%BF%BD",
        "/sjis-wrong/list.html?k=%EF%BF%BD\\%EF%BF%BD%EF%BF%BD&sort=new",
        "/sjis-wrong/notice.html?id=8",
    ],
}


@pytest.mark.parametrize("target", sorted(CHROMIUM_WRONG_HEADER))
def test_a_wrong_header_misleads_strata_as_it_misleads_chromium(target):
    page = CjkSite().page(target)
    assert hrefs(page.body, page.content_type, target) == CHROMIUM_WRONG_HEADER[target]


def test_every_link_of_a_correctly_read_page_is_a_page_of_the_site():
    site = CjkSite()
    for target, page in site.pages.items():
        if page.declared == "wrong-header" or page.group == "root":
            continue
        for url in hrefs(page.body, page.content_type, target.partition("?")[0]):
            # GB18030's four-byte characters are GBK-encoded on undeclared pages, as Chromium does: 404.
            assert url in site.pages or (page.group == "gb18030-none" and "%26%23" in url), (target, url)

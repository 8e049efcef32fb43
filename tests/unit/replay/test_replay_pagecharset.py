"""``replay.pagecharset``: the charset a browser reads an archived page with, from its bytes."""

from __future__ import annotations

import codecs

import pytest

from replay.pagecharset import DETECT_BYTES, PageCharset, page_charset

ZH = "教育局关于春季学期开学工作的通知，各直属学校做好校园安全检查与学生返校报到工作。" * 4
JA = "東京都教育委員会のお知らせ。新しい学習指導要領について説明会を開催します。" * 4


def html(text: str, codec: str, meta: str = "", pad: int = 0, before: str = "<!-- {} -->") -> bytes:
    head = f'<meta charset="{meta}">' if meta else ""
    before = before.format("x" * pad)
    return f"<html><head>{before}{head}</head><body>{text}</body></html>".encode(codec)


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (codecs.BOM_UTF8 + html(ZH, "utf-8"), "text/html; charset=gbk", None),  # the BOM wins
        (html(ZH, "gbk"), "text/html; charset=GBK", None),  # a valid header
        (html(ZH, "gbk", "gbk"), 'text/html; charset="x-nonsense"', PageCharset("gbk", "gb18030")),
        (html(ZH, "gbk", "gb2312"), "text/html", PageCharset("gb2312", "gb18030")),  # as written
        (html(ZH, "utf-8", "utf-16"), "text/html", PageCharset("utf-8", "utf-8")),  # meta cannot mean UTF-16
        (html(ZH, "utf-8"), None, PageCharset("utf-8", "utf-8")),  # undeclared UTF-8
        (html(ZH, "gbk"), None, None),  # legacy: left to the browser's detector
        (html(ZH + "\U00020000", "gb18030"), "text/html", None),
        (html(JA, "shift_jis"), "text/html", None),
        # where Chromium finds a <meta> (checked in Chromium: tests/replay_cjk_pages.py has one such page)
        (html(ZH, "gbk", "gbk", pad=2000), "text/html", PageCharset("gbk", "gb18030")),  # after a comment
        (html(ZH, "gbk", "gbk", 2000, "<script>var a='{}<p>';</script>"), None, PageCharset("gbk", "gb18030")),
        (html(ZH, "gbk", "gbk", 5000, "<title>{}</title>"), None, PageCharset("gbk", "gb18030")),
        (html(ZH, "gbk", before='<!-- <meta charset="gbk"> -->'), None, None),  # commented out
        (html(ZH, "gbk", "gbk", 1100, "</head><body><p>{}</p>"), None, None),  # in the body, past 1,024
        (html(ZH, "gbk", "gbk", 900, "</head><body><p>{}</p>"), None, PageCharset("gbk", "gb18030")),  # before
        (html("plain ASCII", "ascii"), "text/html", None),
    ],
)
def test_page_charset(body, content_type, expected):
    assert page_charset(body, content_type) == expected


def test_utf8_cut_at_the_end_of_the_sample_is_still_utf8():
    cut = ("教" * DETECT_BYTES).encode()[:DETECT_BYTES]  # 65,536 = 3 x 21,845 + 1: one byte of the next
    assert page_charset(cut, "text/html") == PageCharset("utf-8", "utf-8")

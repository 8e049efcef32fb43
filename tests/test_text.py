"""Text extraction (index.text) and CJK analysis (index.cjk) on hand-made payloads."""

from __future__ import annotations

import gzip
import zlib

from index.cjk import CJKBigramAnalyzer
from index.text import MAX_TEXT_CHARS, extract, mime_group
from strata.sample_site import SampleSite


def html(body: str, head: str = "", lang: str = "en") -> str:
    return f'<!DOCTYPE html><html lang="{lang}"><head>{head}</head><body>{body}</body></html>'


def test_visible_text_only():
    page = html(
        '<header><nav><a href="/">Home</a> menuword</nav></header>'
        "<script>var scriptword = 1;</script><style>.styleword{}</style><noscript>noscriptword</noscript>"
        '<main><h1>Heading</h1><p>First <b>bold</b> para.</p><div hidden>hiddenword</div>'
        '<div aria-hidden="true">ariaword</div><article><header>Article header kept</header></article></main>'
        '<div role="navigation">rolenavword</div><footer>Visits: 123 footerword</footer>',
        head='<title>The title</title><meta name="description" content="Desc here">'
             '<meta name="Keywords" content="alpha, beta">',
    )
    out = extract(page.encode(), "text/html; charset=utf-8")
    assert out.title == "The title" and out.description == "Desc here" and out.keywords == "alpha, beta"
    assert out.text == "Heading\nFirst bold para.\nArticle header kept"
    assert out.language == "en"


def test_inline_elements_do_not_split_cjk_words():
    out = extract(html("<p><b>图书</b>馆的<a href=x>数据</a>安全</p>", lang="zh-CN").encode(), "text/html")
    assert out.text == "图书馆的数据安全" and out.language == "zh"


def test_charset_from_meta_header_and_detection():
    body = html("<p>古籍数字化是图书馆保护文化遗产的重要手段。</p>", head='<meta charset="gbk">')
    assert "古籍数字化" in extract(body.encode("gbk"), "text/html").text              # meta only
    plain = html("<p>古籍数字化是图书馆保护文化遗产的重要手段，数据安全。</p>")
    assert "古籍数字化" in extract(plain.encode("gbk"), "text/html; charset=GBK").text   # header
    detected = extract(plain.encode("gb18030"), "text/html")                          # nothing declared
    assert "古籍数字化" in detected.text
    sjis = html("<p>国立国会図書館は、日本国内で発行されたウェブサイトを収集し、長く保存しています。</p>")
    assert "国立国会図書館" in extract(sjis.encode("shift_jis"), "text/html").text
    assert "café" in extract(html("<p>café</p>").encode("utf-8"), "text/html; charset=bogus-label").text


def test_content_encoding_is_undone_with_a_cap():
    body = html("<p>compressed words</p>").encode()
    assert extract(gzip.compress(body), "text/html", "gzip").text == "compressed words"
    assert extract(zlib.compress(body), "text/html", "deflate").text == "compressed words"
    bomb = gzip.compress(b"<p>" + b"a " * (50 * 1024 * 1024))       # 100 MB of text, 100 KB compressed
    out = extract(bomb, "text/html", "gzip")
    assert len(out.text) <= MAX_TEXT_CHARS and out.truncated
    assert extract(b"not gzip at all", "text/html", "gzip").error
    assert extract(b"x", "text/html", "compress").error


def test_hostile_html_never_raises():
    deep = "<div>" * 100_000 + "deep words" + "</div>" * 100_000 + "<p>after</p>"
    assert "deep words" in extract(deep.encode(), "text/html").text                  # no depth-256 cut
    for body in (b"", b"   ", b"\x00\xff\xfe garbage", b'<?xml version="1.0" encoding="bogus"?><p>x y</p>',
                 b"<p>" * 50_000, b"<html><body><p>unclosed <b>tags"):
        out = extract(body, "text/html")
        assert out.error == "" and isinstance(out.text, str)
    assert "x y" in extract(b'<?xml version="1.0" encoding="bogus"?><p>x y</p>', "text/html").text


def test_text_is_capped_and_normalised():
    out = extract(html("<p>" + "word " * 100_000 + "</p>").encode(), "text/html")
    assert len(out.text) == MAX_TEXT_CHARS and out.truncated
    assert extract(html("<p>ＡＢＣ ｶﾀｶﾅ</p>").encode(), "text/html").text == "ABC カタカナ"   # NFKC


def test_pdf_and_plain_text():
    pdf = SampleSite.resource(1, "/docs/report.pdf").body
    out = extract(pdf, "application/pdf")
    assert "quinquennial" in out.text and out.title == "Web Archive Review"
    assert extract(b"%PDF-1.4 broken", "application/pdf").error
    assert extract("plain 文本".encode(), "text/plain; charset=utf-8").text == "plain 文本"
    assert extract(b"\x89PNG...", "image/png").text == ""


def test_mime_groups():
    assert [mime_group(m) for m in ("text/html", "application/xhtml+xml", "application/pdf", "image/png",
                                    "text/plain", "text/css", "application/javascript", "application/json",
                                    "video/webm", "application/octet-stream", None)] == [
        "html", "html", "pdf", "image", "text", "css", "script", "data", "video", "other", "other"]


def test_bigrams_and_positions():
    analyzer = CJKBigramAnalyzer()
    tokens = [(t.text, t.pos) for t in analyzer("AI技术 国家图书馆。会议", positions=True, mode="index")]
    assert tokens == [("ai", 0), ("技术", 1), ("术", 1), ("国家", 2), ("家图", 3), ("图书", 4), ("书馆", 5),
                      ("馆", 5), ("会议", 6), ("议", 6)]
    assert [t.text for t in analyzer("国会", mode="query")] == ["国会"]
    assert [t.text for t in analyzer("图书馆", mode="query")] == ["图书", "书馆"]
    assert [t.text for t in analyzer("The library of a", mode="query")] == ["library"]   # stop words, 1 letter

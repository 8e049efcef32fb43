"""Text extraction (index.fulltext.text) and CJK analysis (index.fulltext.cjk) on hand-made payloads."""

from __future__ import annotations

import gzip
import zlib

from demo.sample_site import SampleSite
from index.fulltext.cjk import CJKBigramAnalyzer
from index.fulltext.text import MAX_TEXT_CHARS, extract, mime_group


def html(body: str, head: str = "", lang: str = "en") -> str:
    return f'<!DOCTYPE html><html lang="{lang}"><head>{head}</head><body>{body}</body></html>'


def test_visible_text_only():
    page = html(
        '<header><nav><a href="/">Home</a> menuword</nav></header>'
        "<script>var scriptword = 1;</script><style>.styleword{}</style><noscript>noscriptword</noscript>"
        "<main><h1>Heading</h1><p>First <b>bold</b> para.</p><div hidden>hiddenword</div>"
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
    assert "古籍数字化" in extract(body.encode("gbk"), "text/html").text  # meta only
    plain = html("<p>古籍数字化是图书馆保护文化遗产的重要手段，数据安全。</p>")
    assert "古籍数字化" in extract(plain.encode("gbk"), "text/html; charset=GBK").text  # header
    detected = extract(plain.encode("gb18030"), "text/html")  # nothing declared
    assert "古籍数字化" in detected.text
    sjis = html("<p>国立国会図書館は、日本国内で発行されたウェブサイトを収集し、長く保存しています。</p>")
    assert "国立国会図書館" in extract(sjis.encode("shift_jis"), "text/html").text
    assert "café" in extract(html("<p>café</p>").encode("utf-8"), "text/html; charset=bogus-label").text


def test_content_encoding_is_undone_with_a_cap():
    body = html("<p>compressed words</p>").encode()
    assert extract(gzip.compress(body), "text/html", "gzip").text == "compressed words"
    assert extract(zlib.compress(body), "text/html", "deflate").text == "compressed words"
    bomb = gzip.compress(b"<p>" + b"a " * (50 * 1024 * 1024))  # 100 MB of text, 100 KB compressed
    out = extract(bomb, "text/html", "gzip")
    assert len(out.text) <= MAX_TEXT_CHARS and out.truncated
    assert extract(b"not gzip at all", "text/html", "gzip").error
    assert extract(b"x", "text/html", "compress").error


def test_hostile_html_never_raises():
    deep = "<div>" * 100_000 + "deep words" + "</div>" * 100_000 + "<p>after</p>"
    assert "deep words" in extract(deep.encode(), "text/html").text  # no depth-256 cut
    for body in (
        b"",
        b"   ",
        b"\x00\xff\xfe garbage",
        b'<?xml version="1.0" encoding="bogus"?><p>x y</p>',
        b"<p>" * 50_000,
        b"<html><body><p>unclosed <b>tags",
    ):
        out = extract(body, "text/html")
        assert out.error == "" and isinstance(out.text, str)
    assert "x y" in extract(b'<?xml version="1.0" encoding="bogus"?><p>x y</p>', "text/html").text


def test_text_is_capped_and_normalised():
    out = extract(html("<p>" + "word " * 100_000 + "</p>").encode(), "text/html")
    assert len(out.text) == MAX_TEXT_CHARS and out.truncated
    assert extract(html("<p>ＡＢＣ ｶﾀｶﾅ</p>").encode(), "text/html").text == "ABC カタカナ"  # NFKC


def test_pdf_and_plain_text():
    pdf = SampleSite.resource(1, "/docs/report.pdf").body
    out = extract(pdf, "application/pdf")
    assert "quinquennial" in out.text and out.title == "Web Archive Review"
    assert extract(b"%PDF-1.4 broken", "application/pdf").error
    assert extract("plain 文本".encode(), "text/plain; charset=utf-8").text == "plain 文本"
    assert extract(b"\x89PNG...", "image/png").text == ""


def test_mime_groups():
    assert [
        mime_group(m)
        for m in (
            "text/html",
            "application/xhtml+xml",
            "application/pdf",
            "image/png",
            "text/plain",
            "text/css",
            "application/javascript",
            "application/json",
            "video/webm",
            "application/octet-stream",
            None,
        )
    ] == ["html", "html", "pdf", "image", "text", "css", "script", "data", "video", "other", "other"]


def test_bigrams_and_positions():
    analyzer = CJKBigramAnalyzer()
    tokens = [(t.text, t.pos) for t in analyzer("AI技术 国家图书馆。会议", positions=True, mode="index")]
    assert tokens == [
        ("ai", 0),
        ("技术", 1),
        ("术", 1),
        ("国家", 2),
        ("家图", 3),
        ("图书", 4),
        ("书馆", 5),
        ("馆", 5),
        ("会议", 6),
        ("议", 6),
    ]
    assert [t.text for t in analyzer("国会", mode="query")] == ["国会"]
    assert [t.text for t in analyzer("图书馆", mode="query")] == ["图书", "书馆"]
    assert [t.text for t in analyzer("The library of a", mode="query")] == ["librari"]  # stop words, 1 letter


def test_english_words_are_stemmed_and_cjk_is_not():
    analyzer = CJKBigramAnalyzer()
    terms = [t.text for t in analyzer("Archives archived archive ARCHIVING 国家图书馆 mkzhgbk2 café u.s", mode="index")]
    assert terms == ["archiv"] * 4 + ["国家", "家图", "图书", "书馆", "馆", "mkzhgbk2", "café", "u.s"]
    assert [t.text for t in analyzer("libraries happy", mode="query")] == ["librari", "happi"]
    assert [t.text for t in CJKBigramAnalyzer(stemming=False)("archives", mode="query")] == ["archives"]


def _positions(text: str) -> dict[str, set[int]]:
    """term -> positions, from the analyzer itself: the reference for the index's semantics."""
    out: dict[str, set[int]] = {}
    for token in CJKBigramAnalyzer()(text, positions=True, mode="index"):
        out.setdefault(token.text, set()).add(token.pos)
    return out


def test_content_weights_are_the_analyzers_terms():
    from collections import Counter

    from index.fulltext.cjk import content_weights

    analyzer = CJKBigramAnalyzer()
    title, body = "国立国会図書館 Web Archive", SampleSite.text(1, "/ja/index.html") + " AI技术 国家图书馆。会议 the x"
    expected: Counter = Counter()
    for text, boost in ((title, 3), (body, 1)):
        for token in analyzer(text, mode="index"):
            expected[token.text] += 2 * boost
    weights, length = content_weights([(title, 3.0), ("", 1.5), (body, 1.0)])
    assert weights == dict(expected)
    assert length == sum(1 for text in (title, body) for _ in analyzer(text, mode="index"))


def test_phrase_in_follows_the_analyzers_positions():
    """``phrase_in`` on random mixed texts agrees with the analyzer's positions (tokens at
    consecutive positions), except that a Chinese word must be a substring: its bigrams at
    consecutive positions across a run boundary (``图书。书馆``) are not ``图书馆``."""
    import random

    from index.fulltext.cjk import is_cjk, phrase_in

    analyzer = CJKBigramAnalyzer()
    rng = random.Random(5)
    pieces = list("图书馆会议数据") + [
        " ",
        "。",
        "the ",
        "x ",
        "Read ",
        "room ",
        ".",
        "A",
        "read.room ",
        "Reading ",
        "rooms ",
    ]
    compared = 0
    for _ in range(4000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 30)))
        query = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        tokens = [t.text for t in analyzer(query, mode="query")]
        if len(tokens) < 2:
            continue
        chained = all(len(t) == 2 and is_cjk(t) for t in tokens) and all(
            a[1] == b[0] for a, b in zip(tokens, tokens[1:], strict=False)
        )
        if chained:
            expected = tokens[0] + "".join(t[1] for t in tokens[1:]) in text
        else:
            positions = _positions(text)
            expected = any(
                all(p + i in positions.get(t, ()) for i, t in enumerate(tokens)) for p in positions.get(tokens[0], ())
            )
        assert phrase_in(tokens, text) == expected, (tokens, text)
        compared += 1
    assert compared > 1000
    assert phrase_in(["read", "room"], "the Reading of the rooms") is True  # stop words take no position
    assert phrase_in(["read", "room"], "x.reading room") is False  # x.reading is one token
    assert phrase_in(["图书", "书馆"], "图书。书馆") is False
    assert phrase_in(["图书", "书馆"], "国家图书馆") is True
    assert phrase_in(["馆", "会议"], "图书馆，会议") is True  # the run's last character


def test_boilerplate_apart_from_the_main_text():
    page = (
        '<html><body class="home has-sidebar nav-open"><div id="page" class="site">'
        '<div class="global-nav"><a href="/">Home</a> <a href="/a">Archive</a></div>'
        '<div class="page-header"><p>Site slogan</p></div><ul class="breadcrumbs"><li>Here</li></ul>'
        "<p>Real text with <a href=/x>one link</a> inside a long enough sentence.</p>"
        '<ul><li><a href="/1">A linked story title</a> 2024</li><li><a href="/2">Another story</a></li></ul>'
        '<article><header class="entry-header">Kept header</header><p>Body.</p></article>'
        '<aside class="widget">Side box</aside><div class="site_footer">Footer words</div>'
        "</div></body></html>"
    )
    out = extract(page.encode(), "text/html")
    assert out.text == "Real text with one link inside a long enough sentence.\nKept header\nBody."
    for words in ("Home Archive", "Site slogan", "Here", "A linked story title 2024", "Another story", "Side box"):
        assert words in out.boilerplate, words
    assert "Footer words" in out.boilerplate and "Real text" not in out.boilerplate

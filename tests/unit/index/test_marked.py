"""Two captures of a page marked in place (``index.compare.marked``): what is marked, what is taken out, and
where addresses go."""

from __future__ import annotations

import lxml.html

from index.compare.marked import MAX_WORDS, mark_pair

OLD = """<html><head><base href="http://cdn.test/x/"><script>steal()</script>
<meta http-equiv="refresh" content="0;url=http://evil.test/"></head>
<body onload="steal()"><h1>News</h1><p>The room opens at <b>nine</b> every day.</p>
<p>我们在北京开会</p><img src="a.png" srcset="a.png 1x, b.png 2x" onerror="x()">
<a href="javascript:x()">j</a><iframe src="http://evil.test/"></iframe>
<form action="http://evil.test/"><input formaction="http://evil.test/"></form>
<div style="background:url(bg.png)">styled</div></body></html>"""
NEW = """<html><body><h1>News</h1><p>The room opens at <b>ten</b> every weekday.</p>
<p>我们在上海开会</p></body></html>"""


def address(ts: str):
    return lambda url, mod: f"/c/{ts}{mod}/{url}"


def test_removed_and_added_words_are_marked_where_they_stand():
    out = mark_pair(
        (OLD.encode(), "text/html", None),
        (NEW.encode(), "text/html", None),
        "http://site.test/",
        address("1"),
        address("2"),
    )
    old, new = lxml.html.fromstring(out.old_html), lxml.html.fromstring(out.new_html)
    assert [d.text for d in old.xpath("//del")] == ["nine", "day", "北京", "j", "styled"] and out.removed == 6
    assert [i.text for i in new.xpath("//ins")] == ["ten", "weekday", "上海"] and out.added == 4
    assert old.xpath("//b/del/text()") == ["nine"]  # inside the element that held it
    assert new.xpath("string(//p[2])") == "我们在上海开会"  # nothing put between CJK words


def test_nothing_active_is_left_and_addresses_stay_in_the_archive():
    out = mark_pair(
        (OLD.encode(), "text/html", None),
        (NEW.encode(), "text/html", None),
        "http://site.test/",
        address("1"),
        address("2"),
    )
    html = out.old_html.lower()
    for gone in (
        "<script",
        "steal()",
        "onerror",
        "onload",
        "<iframe",
        "http-equiv",
        "<base",
        "javascript:",
        "formaction",
        "action=",
    ):
        assert gone not in html, gone
    doc = lxml.html.fromstring(out.old_html)
    assert doc.xpath("//img/@src") == ["/c/1im_/http://cdn.test/x/a.png"]  # against the page's <base>
    assert doc.xpath("//img/@srcset") == ["/c/1im_/http://cdn.test/x/a.png 1x, /c/1im_/http://cdn.test/x/b.png 2x"]
    assert doc.xpath("//a/@href") == ["#"]
    assert "url(/c/1im_/http://cdn.test/x/bg.png)" in doc.xpath("//div/@style")[0]


def test_a_page_too_long_to_compare_is_shown_unmarked():
    long = ("<html><body><p>" + " ".join(f"w{i}" for i in range(MAX_WORDS + 1)) + "</p></body></html>").encode()
    out = mark_pair(
        (long, "text/html", None), (NEW.encode(), "text/html", None), "http://site.test/", address("1"), address("2")
    )
    assert out.note and out.removed == out.added == 0 and "<del" not in out.old_html

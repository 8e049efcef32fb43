"""One HTML parser a thread, reused page after page: each page's links are exactly those a fresh
parser finds, whatever the page before it left unfinished, and a parser that failed is not reused."""

from __future__ import annotations

import random
import threading

from lxml import etree

from harvester import links as links_module
from harvester.links import extract_links

BASE = "http://site.test/dir/page.html"

PAGES = [
    b'<html><head><base href="http://other.test/b/"></head><body><a href="x.html">x</a></body></html>',
    b'<p><a href="unclosed.html">no end tags',  # left open: close() must finish it
    b'<a href="half.html',  # the document ends inside an attribute
    b'<body><a href="after.html">after</a><img src="/i.png" srcset="a.png 1x, b.png 2x">',
    b"<style>body{background:url(bg.png)}",  # an unterminated <style>
    b'<html><body><a href="q?x=\xe4">latin</a></body></html>',
    b"",
    b"   \n ",
    b'<meta http-equiv="refresh" content="0; url=/next.html"><base href="/late/"><a href=l.html>l</a>',
    b"\x00\x01\x02 binary <a href=bin.html>",
    b"<table>" * 3000 + b'<a href="deep.html">deep</a>',
    b"".join(b'<a href="/%d.html">%d</a>' % (i, i) for i in range(300)),
]


def _fresh(body: bytes, content_type: str = "text/html", max_links: int = 10_000):
    links_module._parser_slot.held = None  # no parser held: extract_links makes a new one
    found = extract_links(body, BASE, content_type, max_links=max_links)
    links_module._parser_slot.held = None
    return found


def test_a_reused_parser_finds_what_a_fresh_one_finds_in_any_order():
    expected = {i: _fresh(page) for i, page in enumerate(PAGES)}
    order = list(range(len(PAGES))) * 5
    random.Random(7).shuffle(order)
    for i in order:
        assert extract_links(PAGES[i], BASE, "text/html") == expected[i], PAGES[i][:60]
    assert links_module._parser_slot.held is not None  # the parser was kept for reuse


def test_a_page_cut_short_by_the_link_cap_leaves_nothing_for_the_next():
    many = PAGES[-1]
    assert len(extract_links(many, BASE, "text/html", max_links=5)) == 5
    assert extract_links(PAGES[3], BASE, "text/html") == _fresh(PAGES[3])


def test_charsets_are_per_page():
    gbk = "<a href='q?w=中文'>中文</a>".encode("gbk")
    first = _fresh(gbk, "text/html; charset=gbk")
    assert extract_links(PAGES[0], BASE, "text/html") == _fresh(PAGES[0])
    assert extract_links(gbk, BASE, "text/html; charset=gbk") == first
    assert extract_links(PAGES[5], BASE, "text/html") == _fresh(PAGES[5])


def test_a_parser_that_raised_is_dropped():
    expected = _fresh(PAGES[3])
    extract_links(PAGES[0], BASE, "text/html")
    held = links_module._parser_slot.held
    assert held is not None

    class Failing:
        def feed(self, data):
            raise etree.ParserError("gave up")

        def close(self):
            raise AssertionError("not reached")

    links_module._parser_slot.held = (Failing(), held[1])
    assert extract_links(PAGES[3], BASE, "text/html") == []  # what was found before it gave up
    assert links_module._parser_slot.held is None  # not put back
    assert extract_links(PAGES[3], BASE, "text/html") == expected
    assert links_module._parser_slot.held is not None
    assert not isinstance(links_module._parser_slot.held[0], Failing)  # a new parser


def test_threads_have_their_own_parser():
    expected = [_fresh(page) for page in PAGES]
    failures: list[str] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(60):
            i = rng.randrange(len(PAGES))
            if extract_links(PAGES[i], BASE, "text/html") != expected[i]:
                failures.append(f"page {i} in thread {seed}")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures

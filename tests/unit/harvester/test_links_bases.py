"""Link extraction resolves absolute and path-absolute links against less than the page's URL (so
that the URL cache hits across pages): it must give exactly what resolving against the page gives."""

from __future__ import annotations

import itertools

from harvester.links import _Collector
from strata.urls import normalize_url

BASES = [
    "http://a.test/dir/page.html?q=1#f",
    "https://a.test:8443/x/y/",
    "http://A.TEST:80/",
    "http://127.0.0.1:8080/deep/er/still.htm",
    "http://[::1]:9/p",
    "http://xn--bcher-kva.test/ä/ö",
]
RAWS = [
    "/",
    "/a/b.htm",
    "/a/./../b",
    "/a?x=1&y=%zz",
    "/a#frag",
    "//other.test/p",
    "/\\other.test/p",
    "/\t/other.test/p",
    "/\n/other.test/p",
    "/a\tb",
    "/a\\b",
    "/ä/ö",
    "/%2e%2e/x",
    "http://b.test/p",
    "https://b.test:443/p/../q",
    "http://b.test\\p",
    "http:/relative",
    "http:relative",
    "http://\tb.test/p",
    "http://",
    "/..",
    "rel/ative",
    "?only=query",
    "#only",
    "",
]


def test_shortcut_bases_resolve_as_the_page_does():
    for base, raw in itertools.product(BASES, RAWS):
        collector = _Collector(base, 100)
        collector.before_base = None  # no <base href> to wait for
        collector.add(raw, "navigation", "a@href")
        expected = normalize_url(raw, normalize_url(base))
        got = [link.url for link in collector.links]
        assert got == ([expected] if expected else []), (base, raw)


def test_a_base_href_moves_the_origin_too():
    collector = _Collector("http://a.test/p", 100)
    collector.set_base("https://b.test:8443/dir/")
    collector.add("/x", "navigation", "a@href")
    assert [link.url for link in collector.links] == ["https://b.test:8443/x"]

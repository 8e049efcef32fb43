"""Tests for harvester.robots: RFC 9309 matching, status handling, limits and the per-run cache."""

import asyncio

import pytest

from harvester.robots import MAX_ROBOTS_BYTES, RobotsCache, RobotsRules, product_token

UA = "StrataBot/1.0 (+https://example.org/strata)"

ROBOTS = """\ufeff# Example robots.txt
Disallow: /ignored-before-any-group

User-agent: *
Disallow: /private/
Allow: /private/public/
Disallow: /*.pdf$
Disallow: /search
Allow: /search/about
Disallow: /tmp*/x
Allow: /page
Disallow: /page
Disallow: /%7Ejoe/
Disallow: /caf\u00e9
Disallow: /a%2fb
Allow: /*.html
Disallow: /folder/
disallow: relative-no-slash
Disallow:
Crawl-delay: 7

User-agent: OtherBot
Disallow: /
"""


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/", True),
        ("/robots.txt", True),
        ("/ignored-before-any-group", True),
        ("/private/", False),
        ("/private/x", False),
        ("/private/public/x", True),  # longer allow wins
        ("/doc.pdf", False),
        ("/dir/doc.pdf", False),
        ("/doc.pdf?download=1", True),  # $ anchors the end of path and query
        ("/doc.PDF", True),  # paths are case-sensitive
        ("/search", False),
        ("/searching", False),  # rules are prefixes
        ("/search/about", True),
        ("/search/about/more", True),
        ("/search?q=1", False),
        ("/tmp/x", False),
        ("/tmp123/x", False),
        ("/tmp/y", True),
        ("/page", True),  # equal length allow and disallow: allow
        ("/~joe/", False),  # %7E in the rule is "~"
        ("/%7ejoe/home", False),
        ("/caf%C3%A9", False),  # non-ASCII in the rule is UTF-8 percent-encoded
        ("/caf%c3%a9/x", False),
        ("/café", False),
        ("/a%2Fb", False),  # reserved escapes compare case-insensitively ...
        ("/a/b", True),  # ... but are not decoded
        ("/folder/a.html", False),  # "/folder/" (8) is longer than "/*.html" (7)
        ("/other/a.html", True),
        ("/relative-no-slash", False),
    ],
)
def test_rules_table(path, allowed):
    rules = RobotsRules.from_response(200, ROBOTS.encode(), UA)
    assert rules.allowed("http://example.com" + path) is allowed


@pytest.mark.parametrize(
    ("robots", "path", "allowed"),
    [
        ("User-agent: *\nDisallow: /", "/anything", False),
        ("User-agent: *\nDisallow: /\nAllow: /$", "/", True),
        ("User-agent: *\nDisallow: /\nAllow: /$", "/x", False),
        ("User-agent: *\nDisallow: /*", "/x", False),
        ("User-agent: *\nDisallow: /*", "/robots.txt", True),
        ("User-agent: *\nDisallow: /a*b*c$", "/a-b-c", False),
        ("User-agent: *\nDisallow: /a*b*c$", "/a-b-c-d", True),
        ("User-agent: *\nDisallow: /a*b*c$", "/abcbc", False),
        ("User-agent: *\nDisallow: /a$b", "/a$b", False),  # "$" inside a pattern is literal
        ("User-agent: *\nDisallow: /*?", "/x?y=1", False),
        ("User-agent: *\nDisallow: /*?", "/x", True),
        ("User-agent: *\nDisallow: /**/deep", "/a/deep", False),
        ("User-agent: *\nDisallow: /a b", "/a%20b", False),
        ("User-agent: *\nDisallow:", "/x", True),
        ("User-agent: *\nAllow:", "/x", True),
        ("", "/x", True),
        ("Disallow: /", "/x", True),  # no group at all
        ("User-agent: OtherBot\nDisallow: /", "/x", True),  # no group for us and no "*"
        ("User-agent: *\nDisallow: /star\nUser-agent: stratabot\nDisallow: /mine", "/star", True),
        ("User-agent: *\nDisallow: /star\nUser-agent: stratabot\nDisallow: /mine", "/mine", False),
        ("USER-AGENT: STRATABOT/2.0\nDISALLOW: /upper", "/upper", False),
        ("User-agent: Strata\nDisallow: /prefix-only", "/prefix-only", True),  # "Strata" is not "StrataBot"
        ("User-agent: a\nUser-agent: StrataBot\nUser-agent: b\nDisallow: /shared", "/shared", False),
        ("User-agent: StrataBot\nDisallow: /one\n\nUser-agent: StrataBot\nDisallow: /two", "/two", False),
        ("User-agent: StrataBot\nDisallow: /one\n\nUser-agent: StrataBot\nDisallow: /two", "/one", False),
        ("User-agent: StrataBot\nSitemap: http://x/s.xml\nDisallow: /after-sitemap", "/after-sitemap", False),
        ("User-agent: *\r\nDisallow: /crlf\r\n", "/crlf", False),
        ("User-agent: *\rDisallow: /cr\r", "/cr", False),
        ("User-agent: * # comment\nDisallow: /c # comment\n", "/c", False),
        ("User-agent: *\nDisallow : /spaced", "/spaced", False),
    ],
)
def test_rules_edge_cases(robots, path, allowed):
    assert RobotsRules.parse(robots, UA).allowed("https://example.com" + path) is allowed


def test_crawl_delay():
    assert RobotsRules.parse(ROBOTS, UA).crawl_delay == 7.0
    assert RobotsRules.parse("User-agent: *\nDisallow: /", UA).crawl_delay is None
    text = "User-agent: StrataBot\nCrawl-delay: 2\nUser-agent: StrataBot\nCrawl-delay: 5\nUser-agent: *\nCrawl-delay: 9"
    assert RobotsRules.parse(text, UA).crawl_delay == 5.0
    for bad in ("soon", "-1", "nan", "inf", ""):
        assert RobotsRules.parse(f"User-agent: *\nCrawl-delay: {bad}", UA).crawl_delay is None


@pytest.mark.parametrize(
    ("status", "body", "allowed"),
    [
        (200, b"User-agent: *\nDisallow: /x", False),
        (200, None, True),
        (204, b"", True),
        (301, b"User-agent: *\nDisallow: /", True),  # redirects left after the fetcher's 5
        (400, b"", True),
        (401, b"", True),
        (403, b"", True),
        (404, b"User-agent: *\nDisallow: /", True),
        (410, b"", True),
        (429, b"", False),
        (500, b"", False),
        (503, b"User-agent: *\nAllow: /", False),
        (100, b"", False),
        (600, b"", False),
        (None, None, False),
    ],
)
def test_status_handling(status, body, allowed):
    rules = RobotsRules.from_response(status, body, UA)
    assert rules.allowed("http://example.com/x") is allowed
    assert rules.allowed("http://example.com/robots.txt") is True


def test_only_500_kib_are_parsed_and_a_cut_line_is_dropped():
    head = b"User-agent: *\nDisallow: /early\n"
    filler = b"# " + b"x" * 1000 + b"\n"
    body = head + filler * ((MAX_ROBOTS_BYTES - len(head)) // len(filler))
    # A line straddling the limit must not be read short ("Disallow: /" would block everything).
    body += b" " * (MAX_ROBOTS_BYTES - len(body) - 5) + b"\nDisallow: /straddling\nDisallow: /late\n"
    assert len(body) > MAX_ROBOTS_BYTES
    rules = RobotsRules.from_response(200, body, UA)
    assert not rules.allowed("http://example.com/early")
    assert rules.allowed("http://example.com/straddling")
    assert rules.allowed("http://example.com/late")
    assert rules.allowed("http://example.com/other")


def test_invalid_utf8_does_not_raise():
    body = b"User-agent: *\n\xff\xfe\x80garbage\nDisallow: /caf\xe9\nDisallow: /ok-rule\n\x00\x00\n"
    rules = RobotsRules.from_response(200, body, UA)
    assert not rules.allowed("http://example.com/ok-rule")
    assert not rules.allowed("http://example.com/caf%EF%BF%BD")
    assert rules.allowed("http://example.com/caf%E9")


def test_pathological_pattern_is_fast():
    rules = RobotsRules.parse("User-agent: *\nDisallow: /" + "*a" * 200 + "b$", UA)
    assert rules.allowed("http://example.com/" + "a" * 2000)


def test_product_token():
    assert product_token(UA) == "stratabot"
    assert product_token("Mozilla/5.0 (compatible)") == "mozilla"
    assert product_token("  my_bot-x2") == "my_bot-x"
    assert product_token("") == ""
    assert product_token("/weird") == ""


class FakeFetch:
    def __init__(self, responses=None, release=None):
        self.calls = []
        self.responses = responses or {}
        self.release = release

    async def __call__(self, url):
        self.calls.append(url)
        if self.release is not None:
            await self.release.wait()
        response = self.responses.get(url, (200, b"User-agent: *\nDisallow: /private"))
        if isinstance(response, Exception):
            raise response
        return response


def test_cache_coalesces_concurrent_lookups():
    async def main():
        fetch = FakeFetch(release=asyncio.Event())
        cache = RobotsCache(fetch, UA)
        lookups = [asyncio.ensure_future(cache.rules_for(f"http://example.com/page{i}")) for i in range(20)]
        lookups.append(asyncio.ensure_future(cache.allowed("http://Example.com:80/private/x")))
        await asyncio.sleep(0)
        fetch.release.set()
        results = await asyncio.gather(*lookups)
        assert fetch.calls == ["http://example.com/robots.txt"]
        assert all(rules is results[0] for rules in results[:-1])
        assert results[-1] is False
        # Later lookups use the cache.
        assert await cache.allowed("http://example.com/public") is True
        assert len(fetch.calls) == 1

    asyncio.run(main())


def test_cache_is_keyed_by_scheme_host_and_port():
    async def main():
        fetch = FakeFetch()
        cache = RobotsCache(fetch, UA)
        for url in (
            "http://example.com/a",
            "https://example.com/a",
            "http://example.com:8080/a",
            "http://www.example.com/a",
            "http://example.com/b",
            "HTTPS://EXAMPLE.COM:443/b",
        ):
            await cache.rules_for(url)
        assert fetch.calls == [
            "http://example.com/robots.txt",
            "https://example.com/robots.txt",
            "http://example.com:8080/robots.txt",
            "http://www.example.com/robots.txt",
        ]

    asyncio.run(main())


def test_cache_failures_disallow_for_a_while_then_retry():
    async def main():
        now = [0.0]
        fetch = FakeFetch(
            {
                "http://down.example/robots.txt": (503, b""),
                "http://gone.example/robots.txt": OSError("connection refused"),
                "http://missing.example/robots.txt": (404, b""),
            }
        )
        cache = RobotsCache(fetch, UA, ttl=3600, error_ttl=60, clock=lambda: now[0])
        assert await cache.allowed("http://down.example/x") is False
        assert await cache.allowed("http://gone.example/x") is False
        assert await cache.allowed("http://missing.example/x") is True
        assert (
            await cache.rules_for("http://gone.example/")
        ).reason == "unreachable (connection refused): disallow all"
        assert len(fetch.calls) == 3
        now[0] = 61.0
        fetch.responses["http://down.example/robots.txt"] = (200, b"")
        assert await cache.allowed("http://down.example/x") is True
        assert await cache.allowed("http://gone.example/x") is False
        assert await cache.allowed("http://missing.example/x") is True
        assert len(fetch.calls) == 5  # down and gone again; missing still cached
        now[0] = 3700.0
        await cache.rules_for("http://missing.example/x")
        assert fetch.calls[-1] == "http://missing.example/robots.txt"

    asyncio.run(main())


def test_cache_with_unusable_url_and_cancelled_waiter():
    async def main():
        fetch = FakeFetch(release=asyncio.Event())
        cache = RobotsCache(fetch, UA)
        assert (await cache.rules_for("mailto:x@example.com")).allowed("http://example.com/") is False
        first = asyncio.ensure_future(cache.rules_for("http://example.com/"))
        second = asyncio.ensure_future(cache.rules_for("http://example.com/"))
        await asyncio.sleep(0)
        first.cancel()
        fetch.release.set()
        assert (await second).allowed("http://example.com/private") is False
        assert fetch.calls == ["http://example.com/robots.txt"]

    asyncio.run(main())

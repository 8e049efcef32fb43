"""``normalize_url``'s plain path (``_plain_normal``): whenever it answers, the full rules give the
same URL; and it does answer for the plain URLs and links a harvest meets most."""

import random

import pytest

from strata.urls import MAX_URL_LENGTH, _normalize, _plain_normal, normalize_url

BASES = [
    None,
    "http://127.0.0.1:8765/",
    "http://127.0.0.1:8765/news/2024-01/05/content_17.htm",
    "http://example.com/dir/page.html?q=1",
    "http://example.com/dir/",
    "https://sub.example.com:8443/a/b/c",
    "https://example.com",  # not normal itself: joined by the full rules
    "http://Example.com/x/",
    "http://example.com:80/x/",
    "http://0x7f.1/x/",
    "http://example.com/a/../b/",
    "http://example.com/%2e/x",
    "http://example.com/x?",
    "ftp://example.com/x/",
    "http://[::1]/x/",
    "http://1.2.3/x/",
]

AWKWARD = [
    "http://example.com/",
    "http://example.com",
    "http://example.com/?",
    "http://example.com/a?",
    "http://example.com/a?b",
    "http://example.com:80/",
    "https://example.com:443/",
    "http://example.com:443/",
    "http://example.com:080/",
    "http://example.com:0/",
    "http://example.com:65535/",
    "http://example.com:65536/",
    "http://example.com./",
    "http://Example.com/",
    "HTTP://example.com/",
    "http://127.0.0.1/",
    "http://127.0.0.01/",
    "http://255.255.255.255/",
    "http://256.0.0.1/",
    "http://1.2.3/",
    "http://0x7f.0.0.1/",
    "http://0x/",
    "http://1/",
    "http://a.1/",
    "http://a.0x1/",
    "http://a.0xg/",
    "http://a-.b_/",
    "http://-a.b/",
    "http://" + "a" * 63 + ".com/",
    "http://" + "a" * 64 + ".com/",
    "http://" + ".".join(["abcdefghi"] * 26) + "/",
    "http://xn--nxasmq6b.com/",
    "http://xn--zz.com/",
    "http://user@example.com/",
    "http://example.com/a/./b",
    "http://example.com/a/../b",
    "http://example.com/a/.",
    "http://example.com/a/..",
    "http://example.com/.hidden",
    "http://example.com/a/.%2E/b",
    "http://example.com/a/%2E",
    "http://example.com/a/%2e",
    "http://example.com/a%2fb",
    "http://example.com/a%2Fb",
    "http://example.com/a%zzb",
    "http://example.com/a%",
    "http://example.com/a\\b",
    "http://example.com/a?b\\c",
    "http://example.com/a#f",
    "http://example.com/a?b#f",
    "http://example.com/a'b?c'd",
    "http://example.com/a^b?c^d",
    "http://example.com/a|b?c|d",
    "http://example.com/a{b}?c{d}",
    "http://example.com/a`b?c`d",
    "http://example.com/[x]?[y]",
    "http://example.com/a;b=c?d;e",
    "http://example.com/a:b",
    "http://example.com//a",
    "http://example.com/a?b?c",
    "http://example.com/a?%41",
    "http://example.com/a b",
    "http://example.com/\u00e9",
    " http://example.com/a",
    "http://example.com/a\t",
    "http:/example.com/a",
    "http:example.com",
    "//example.com/a",
    "//example.com",
    "/",
    "/a/b.htm",
    "/a/./b",
    "/a/../b",
    "/.x",
    "/%2E/x",
    "/a?b",
    "/a?",
    "/a#x",
    "/a b",
    "/a\\b",
    "",
    "a",
    "a.htm",
    "a/b.htm?c=d",
    ".",
    "..",
    "./a",
    "../a",
    "%2E/a",
    "%2e%2e/a",
    "a/./b",
    "a/../b",
    "?q=1",
    "#frag",
    "a:b",
    "a:b/c",
    "b/a:c",
    "a?b:c",
    "mailto:x@example.com",
    "javascript:alert(1)",
    "content_2.htm",
    "index_1.htm",
    "x%20y",
    "x%2fy",
]

PIECES = [
    "a", "B", "z9", "_", "-", ".", "..", "/", "//", "?", "#", "%", "%2F", "%2f", "%2E", "%2e", "%41", "%zz",
    ":", ":80", ":8080", ":0", "@", "\\", " ", "\t", "'", '"', "<", ">", "^", "`", "{", "|", "}", "~", "[", "]",
    ";", "=", "&", "+", "!", "$", "(", ")", "*", ",", "\u00e9", "\u4e2d", "0x7f", "127", "255", "256", "1",
    "http://", "https://", "HTTP://", "example.com", "ex.com", "127.0.0.1", "index.htm", "content_3.htm",
]  # fmt: skip


# Mostly what the plain path accepts, with now and then a piece that may need a rule.
NEAR_PLAIN = ["a", "b1", "-", "_", ".", "/", "/", "?", "=", "&", "%41", "%2E", ".htm", "~", "!", "(", "..", "//", ":"]


def _random_url(rng: random.Random) -> str:
    start = rng.choice(["http://", "https://", "", "", "/", "//", "http://example.com", "http://127.0.0.1:8765"])
    pieces = PIECES if rng.random() < 0.5 else NEAR_PLAIN
    return start + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))


def _check(url: str, base: str | None) -> bool:
    plain = _plain_normal(url, base)
    if plain is None:
        return False
    try:
        full = _normalize(url, base)
    except (ValueError, UnicodeError):
        full = None
    assert plain == full, (url, base)
    return True


def test_a_joined_url_past_the_length_limit_is_refused_either_way():
    base = "http://example.com/" + "d/" * 600
    link = "p" * 900
    assert len(base) < MAX_URL_LENGTH and len(link) < MAX_URL_LENGTH < len(base) + len(link)
    rooted = "/" + "p" * (MAX_URL_LENGTH - 8)  # a path-absolute link, joined to the origin
    assert normalize_url(link, base) is None and normalize_url(rooted, base) is None
    assert _normalize(link, base) is None and _normalize(rooted, base) is None


@pytest.mark.parametrize("base", BASES)
def test_the_plain_path_agrees_with_the_rules_on_awkward_urls(base):
    for url in AWKWARD:
        _check(url, base)


def test_the_plain_path_agrees_with_the_rules_on_random_urls():
    rng = random.Random(1405)
    answered = 0
    for _ in range(40_000):
        answered += _check(_random_url(rng), rng.choice(BASES))
    assert answered > 1_500  # the random URLs reach the plain path, not only the full rules


def test_the_plain_path_answers_for_a_harvests_urls_and_links():
    base = "http://127.0.0.1:8765/news/2024-01/05/content_17.htm"
    origin = "http://127.0.0.1:8765/"
    cases = [
        ("http://127.0.0.1:8765/news/list/index_3.htm", None),
        ("https://www.example.com/a/b?id=42&page=2", None),
        ("/static/site.css", origin),
        ("/news/2024-01/04/content_16.htm", origin),
        ("content_18.htm", base),
        ("../content_1.htm", base),  # a dot segment: the full rules
    ]
    answered = [_plain_normal(url, b) is not None for url, b in cases]
    assert answered == [True, True, True, True, True, False]
    for url, b in cases:
        assert normalize_url(url, b) == _normalize(url, b)

"""Tests for strata.urls: one table of (input, base, expected) cases."""

import random

import httpx
import pytest

from strata.urls import MAX_URL_LENGTH, normalize_url, url_host, url_origin

BASE = "http://example.com/dir/page.html"

CASES = [
    # Case, ports, fragments, dot segments.
    ("http://Example.COM:80/a/../b#x", None, "http://example.com/b"),
    ("HTTPS://EXAMPLE.com:443", None, "https://example.com/"),
    ("https://example.com:8443/x", None, "https://example.com:8443/x"),
    ("http://example.com:443/", None, "http://example.com:443/"),
    ("http://example.com:080/", None, "http://example.com/"),
    ("http://example.com:/", None, "http://example.com/"),
    ("http://example.com", None, "http://example.com/"),
    ("http://example.com?q=1", None, "http://example.com/?q=1"),
    ("http://example.com/a?", None, "http://example.com/a"),
    ("http://example.com/a/./b/../../c/", None, "http://example.com/c/"),
    ("http://example.com/a/b/..", None, "http://example.com/a/"),
    ("http://example.com/../../x", None, "http://example.com/x"),
    ("http://example.com/a/%2e%2E/b/%2e", None, "http://example.com/b/"),
    ("http://example.com/a//b", None, "http://example.com/a//b"),
    ("http://example.com/p?a=1&b=2&a=0", None, "http://example.com/p?a=1&b=2&a=0"),
    ("http://example.com/#only-fragment", None, "http://example.com/"),
    # Relative references.
    ("../other.html", BASE, "http://example.com/other.html"),
    ("sub/x.png?v=2#top", BASE, "http://example.com/dir/sub/x.png?v=2"),
    ("/root", BASE, "http://example.com/root"),
    ("//cdn.Example.net/lib.js", BASE, "http://cdn.example.net/lib.js"),
    ("//cdn.example.net/lib.js", "https://example.com/", "https://cdn.example.net/lib.js"),
    ("?page=2", BASE, "http://example.com/dir/page.html?page=2"),
    ("#section", BASE, "http://example.com/dir/page.html"),
    ("", BASE, "http://example.com/dir/page.html"),
    ("http:other", BASE, "http://example.com/dir/other"),
    ("https://other.org/abs", BASE, "https://other.org/abs"),
    ("https://other.org/abs", "not a base", "https://other.org/abs"),
    ("relative", None, None),
    ("relative", "mailto:a@b.c", None),
    ("relative", "/also/relative", None),
    # Whitespace and controls browsers strip; backslashes.
    ("  \t http://example.com/a\n b \r\n", None, "http://example.com/a%20b"),
    ("\x00\x1fhttp://example.com/\x01", None, "http://example.com/"),
    ("http://example.com/a\x01b", None, "http://example.com/a%01b"),
    ("http:\\\\example.com\\a\\b?x=\\", None, "http://example.com/a/b?x=\\"),
    ("\\\\example.com\\x", BASE, "http://example.com/x"),
    # Percent-encoding: UTF-8, no double encoding, hex uppercased.
    (
        "http://example.com/中文/页面?q=图书馆",
        None,
        "http://example.com/%E4%B8%AD%E6%96%87/%E9%A1%B5%E9%9D%A2?q=%E5%9B%BE%E4%B9%A6%E9%A6%86",
    ),
    ("http://example.com/%E4%B8%AD%e6%96%87", None, "http://example.com/%E4%B8%AD%E6%96%87"),
    ('http://example.com/a b<c>"d`{e}', None, "http://example.com/a%20b%3Cc%3E%22d%60%7Be%7D"),
    ("http://example.com/?a b<c>`{}", None, "http://example.com/?a%20b%3Cc%3E`{}"),
    ("http://example.com/100%/x%zz", None, "http://example.com/100%/x%zz"),
    ("http://example.com/caf\u00e9", None, "http://example.com/caf%C3%A9"),
    ("http://example.com/\ud800", None, "http://example.com/%EF%BF%BD"),
    ("http://example.com/%2Fslash", None, "http://example.com/%2Fslash"),
    ("http://example.com/a;b=c,d:e@f!$'()*+~", None, "http://example.com/a;b=c,d:e@f!$'()*+~"),
    # Hosts: IDNA, percent-decoding, trailing dot, IP forms.
    ("http://Bücher.example/", None, "http://xn--bcher-kva.example/"),
    ("http://例え.テスト/パス", None, "http://xn--r8jz45g.xn--zckzah/%E3%83%91%E3%82%B9"),
    ("http://ＥＸＡＭＰＬＥ。com/", None, "http://example.com/"),
    ("http://i❤.ws/", None, "http://xn--i-7iq.ws/"),
    ("http://xn--bcher-kva.example/", None, "http://xn--bcher-kva.example/"),
    ("http://ex%61mple.com/", None, "http://example.com/"),
    ("http://example.com./", None, "http://example.com/"),
    ("http://under_score.example.com/", None, "http://under_score.example.com/"),
    ("http://user:secret@example.com/p", None, "http://example.com/p"),
    ("http://evil.com@good.com/", None, "http://good.com/"),
    ("http://127.0.0.1:8080/", None, "http://127.0.0.1:8080/"),
    ("http://2130706433/", None, "http://127.0.0.1/"),
    ("http://0x7f.0.0.1/", None, "http://127.0.0.1/"),
    ("http://127.1/", None, "http://127.0.0.1/"),
    ("http://0177.0.0.01/", None, "http://127.0.0.1/"),
    ("http://0/", None, "http://0.0.0.0/"),
    ("http://[::1]:8000/", None, "http://[::1]:8000/"),
    ("http://[2001:DB8:0:0::1]/", None, "http://[2001:db8::1]/"),
    # Rejected.
    ("javascript:alert(1)", BASE, None),
    ("  JavaScript:void(0)", BASE, None),
    ("mailto:someone@example.com", BASE, None),
    ("data:text/html,<p>x</p>", BASE, None),
    ("tel:+123", BASE, None),
    ("ftp://example.com/file", BASE, None),
    ("file:///etc/passwd", BASE, None),
    ("about:blank", BASE, None),
    ("http://", None, None),
    ("http:///path", None, None),
    ("http://:80/", None, None),
    ("http://example.com:0/", None, None),
    ("http://example.com:65536/", None, None),
    ("http://example.com:99999999999999999999/", None, None),
    ("http://example.com:8o/", None, None),
    ("http://example.com:80:80/", None, None),
    ("http://exa mple.com/", None, None),
    ("http://exa<mple.com/", None, None),
    ("http://a..b/", None, None),
    ("http://example.com%2F@x/", None, "http://x/"),
    ("http://ex%2Fample.com/", None, None),
    ("http://256.0.0.1/", None, None),
    ("http://1.2.3.4.5/", None, None),
    ("http://08.0.0.1/", None, None),
    ("http://1_0.5/", None, None),
    ("http://example.123/", None, None),
    ("http://[::1/", None, None),
    ("http://[not-ipv6]/", None, None),
    ("http://[fe80::1%25eth0]/", None, None),
    ("http://[::1]junk/", None, None),
    ("http://\u200b/", None, None),
    ("http://" + "a" * 300 + ".com/", None, None),
    ("http://example.com/" + "a" * MAX_URL_LENGTH, None, None),
    ("http://example.com/" + "é" * 1000, None, None),  # fine in, too long once encoded
]


@pytest.mark.parametrize(("url", "base", "expected"), CASES)
def test_normalize_url(url, base, expected):
    assert normalize_url(url, base) == expected


@pytest.mark.parametrize(("url", "base", "expected"), [c for c in CASES if c[2]])
def test_normalize_url_is_idempotent_and_httpx_fixed_point(url, base, expected):
    assert normalize_url(expected) == expected
    # What httpx puts on the wire is what we recorded.
    assert str(httpx.URL(expected)) == expected


@pytest.mark.parametrize("bad", [None, b"http://example.com/", 42, ["http://x/"]])
def test_non_strings_give_none(bad):
    assert normalize_url(bad) is None
    assert normalize_url("x", base=bad) is None


def test_never_raises_on_random_strings():
    rng = random.Random(1234)
    alphabet = "http:/\\?#[]@%.:abcXYZ019 \t\n\x00-_~é中\ud800\U0001f600" + "".join(map(chr, range(32)))
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        for candidate in (text, "http://" + text, "https://ex.com/" + text):
            result = normalize_url(candidate, base=rng.choice([None, BASE, text]))
            assert result is None or normalize_url(result) == result


def test_url_host():
    assert url_host("http://User@WWW.Example.COM:8080/x") == "www.example.com"
    assert url_host("http://[::1]:8000/") == "::1"
    assert url_host("http://2130706433/") == "127.0.0.1"
    assert url_host("http://Bücher.example/") == "xn--bcher-kva.example"
    assert url_host("mailto:a@b.c") == ""
    assert url_host("/relative") == ""


def test_url_origin():
    assert url_origin("http://Example.com/a?b") == "http://example.com:80"
    assert url_origin("https://example.com:8443/") == "https://example.com:8443"
    assert url_origin("https://[::1]/") == "https://[::1]:443"
    assert url_origin("javascript:x") is None

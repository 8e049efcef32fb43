"""``surt_key`` against the ``surt`` package pywb keys its index with: the same key for every URL,
whether it takes its own plain path or hands the URL to the package."""

import random

import pytest
from surt import surt

from index.cdx.surtkey import _plain_key, surt_key

AWKWARD = [
    "http://example.com",
    "http://example.com/",
    "http://example.com?",
    "http://example.com/?",
    "http://Example.COM/A/B/",
    "https://www.example.com/",
    "https://www2.Example.com/x",
    "http://www.com/",
    "http://www./",
    "http://wwwx.example.com/",
    "http://example.com:80/a",
    "https://example.com:443/a",
    "http://example.com:443/a",
    "https://example.com:80/a",
    "http://example.com:8080/a?b=1",
    "http://example.com:08080/a",
    "http://example.com:0/a",
    "http://example.com:99999/a",
    "http://example.com:/a",
    "http://127.0.0.1:8765/news/index.htm",
    "http://10.0.0.255/",
    "http://1.2.3/",
    "http://01.2.3.4/",
    "http://1.02.3.4/",
    "http://256.1.1.1/",
    "http://1234/",
    "http://1.2.3.4.5/",
    "http://example.com/a//b",
    "http://example.com/a/./b",
    "http://example.com/a/../b",
    "http://example.com/a/..",
    "http://example.com/a/.",
    "http://example.com/../a",
    "http://example.com/a%20b",
    "http://example.com/a%2Fb?q=%41",
    "http://example.com/a b",
    "http://example.com/a#frag",
    "http://user:pw@example.com/",
    "http://[::1]/",
    "http://example.com/(S(abcdefghijklmnopqrstuvwx))/page.aspx",
    "http://example.com/(abcdefghijklmnopqrstuvwx)/page.aspx",
    "http://example.com/a?jsessionid=0123456789abcdef0123456789abcdef&b=1",
    "http://example.com/a?JSESSIONID=0123456789abcdef0123456789abcdef",
    "http://example.com/a?PHPSESSID=0123456789abcdef0123456789abcdef",
    "http://example.com/a?sid=0123456789abcdef0123456789abcdef",
    "http://example.com/a?ASPSESSIONIDabcdefgh=abcdefghijklmnopqrstuvwx",
    "http://example.com/a?cfid=1&cftoken=2&x=3",
    "http://example.com/a?b=2&a=1&a&a=&c",
    "http://example.com/a?&&",
    "http://example.com/a?&",
    "http://example.com/a?Z=1&z=2",
    "http://example.com/a??b=1",
    "http://example.com/a?b=1?c",
    "http://http://example.com/",
    "HTTP://example.com/",
    "ftp://example.com/",
    "http://example..com/",
    "http://.example.com/",
    "http://example.com./",
    "http://ex_ample.com/",
    "http://例え.jp/",
    "http://example.com/中文",
    "https://www.gov.cn/zhengce/2024-03/05/content_1234.htm",
    "http://example.com/a;b=c/d:e,f+g!h$i'j*k~l",
    "urn:strata:run:20261202161000-ab12",
    "urn:Strata:Run:X",
    "urn:uuid:0f3c/../x?B=1",
    "urn:",
]


def _outcome(make_key, url: str):
    """The key, or the error (the package refuses a port out of range, for one)."""
    try:
        return make_key(url)
    except Exception as exc:
        return type(exc)


@pytest.mark.parametrize("url", AWKWARD)
def test_awkward_urls_get_the_packages_key(url):
    assert _outcome(surt_key, url) == _outcome(surt, url)


def test_plain_urls_do_take_the_fast_path():
    assert _plain_key("http://127.0.0.1:8765/news/2024-03/05/content_1.htm") == (
        "1,0,0,127:8765)/news/2024-03/05/content_1.htm"
    )
    assert _plain_key("https://www.Example.com/A/?b=2&a=1") == "com,example)/a?a=1&b=2"
    assert _plain_key("http://example.com/a%20b") is None  # escapes are left to the package
    assert _plain_key("urn:strata:run:20261202161000-ab12") == "urn:strata:run:20261202161000-ab12"


def _random_url(rnd: random.Random) -> str:
    host = rnd.choice(
        ["example.com", "WWW.Example.org", "www3.gov.cn", "127.0.0.1", "10.1.200.255", "a-b.c", "0.0.0.0", "x.y.z.w.v"]
    )
    port = rnd.choice(["", "", ":80", ":443", ":8080", ":1", ":65535", ":65536"])
    pieces = ["a", "B", "index", "htm", ".", "..", "", "-", "_", "~", ";", ":", ",", "+", "!", "$", "'", "(", ")", "*"]
    path = "".join(rnd.choice(["/", "", ""]) + rnd.choice(pieces) for _ in range(rnd.randrange(0, 6)))
    if path and not path.startswith("/"):
        path = "/" + path
    sid = "0123456789abcdef0123456789ABCDEF"
    args = ["a=1", "B=2", "a", "a=", "sid=x", "c=3=4", "", "z=?", "Q=r&s", f"jsessionid={sid}", f"SID={sid}", "cfid=1"]
    query = rnd.choice(["", "?", "?" + "&".join(rnd.choice(args) for _ in range(rnd.randrange(1, 5)))])
    return rnd.choice(["http", "https"]) + "://" + host + port + path + query


def test_random_urls_agree_with_the_package():
    rnd = random.Random(14)
    urls = [_random_url(rnd) for _ in range(5000)]
    wrong = [(url, _outcome(surt_key, url), _outcome(surt, url)) for url in urls]
    wrong = [w for w in wrong if w[1] != w[2]]
    assert wrong == []
    assert sum(_plain_key(url) is not None for url in urls) > 1000  # the fast path was exercised

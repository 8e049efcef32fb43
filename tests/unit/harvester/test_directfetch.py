"""harvester.directfetch (the fetch process's fetch) against ``harvester.fetch.fetch`` through httpx.

The oracle is what the fetch process did before: ``fetch`` with an httpx client on ``H11Transport``.
On the same canned answers, awkward ones included, both must give every field of the result the
same and send the same request bytes; on awkward URLs and headers the request built here must be
httpx's (and the plain path must really be taken for plain URLs); cookies a response sets must go
back with the next request as httpx sends them; failures must read the same.
"""

from __future__ import annotations

import asyncio
import random
import socket

import httpx
import pytest

from harvester.directfetch import MAX_KNOWN_ORIGINS, DirectFetcher
from harvester.fetch import fetch, make_client
from harvester.h11transport import H11Transport, origin_of
from tests.support.canned_server import ANSWERS, RawServer, result_fields

HEADERS = {"Accept-Encoding": "gzip", "If-None-Match": '"v1"', "If-Modified-Since": "Tue, 01 Dec 2026 10:00:00 GMT"}


def _client() -> tuple[httpx.AsyncClient, H11Transport]:
    transport = H11Transport(2)
    return make_client(2, 5.0, 5.0, "test-agent", transport=transport), transport


async def _fetch_all(urls: list[str], headers: dict, direct: bool, deadline: float = 5.0) -> list[dict]:
    """Each URL in turn on one client: through ``DirectFetcher``, or through ``fetch`` and httpx."""
    client, transport = _client()
    fetcher = DirectFetcher(client, transport)
    async with client:
        if direct:
            return [result_fields(await fetcher.fetch(url, headers, deadline, 10**8), ("ip",)) for url in urls]
        return [result_fields(await fetch(client, url, headers=headers, deadline=deadline), ("ip",)) for url in urls]


def _through_httpx(urls: list[str], headers: dict, deadline: float = 5.0) -> list[dict]:
    return asyncio.run(_fetch_all(urls, headers, False, deadline))


def _direct(urls: list[str], headers: dict, deadline: float = 5.0) -> list[dict]:
    return asyncio.run(_fetch_all(urls, headers, True, deadline))


def _both_ways(answer: tuple[bytes, bool], paths: list[str]) -> tuple[list[dict], list[bytes], list[bytes]]:
    """Fetch ``paths`` from a server giving ``answer``, through httpx, then directly: the direct
    results (asserted equal to httpx's), and the request heads each way sent."""
    server = RawServer(answer)
    try:
        urls = [f"http://127.0.0.1:{server.port}{path}" for path in paths]
        theirs = _through_httpx(urls, HEADERS)
        sent_by_httpx, server.heads = server.heads, []
        ours = _direct(urls, HEADERS)
    finally:
        server.stop()
    assert ours == theirs
    return ours, sent_by_httpx, server.heads


@pytest.mark.parametrize("name", list(ANSWERS))
def test_every_field_and_every_request_byte_is_what_fetch_through_httpx_gives(name):
    ours, sent_by_httpx, sent = _both_ways(ANSWERS[name], ["/a/b.html?q=1", "/c%20d/"] * 2)
    assert sent == sent_by_httpx and len(sent) >= 1
    if name == "more than its length":
        assert ours[0]["surplus"] == 3


AWKWARD_URLS = [
    "http://127.0.0.1:8000/",
    "http://example.org/a/b.html?x=1&y=2",
    "https://example.org/",
    "https://example.org:443/default-port",
    "http://example.org:80/default-port",
    "http://example.org:8080/other-port",
    "http://EXAMPLE.org/upper-host",
    "http://example.org",
    "http://example.org?q",
    "http://example.org/a?",
    "http://example.org/./a",
    "http://example.org/a/../b",
    "http://example.org/a/.",
    "http://example.org/a/..?x",
    "http://example.org/a/.b/..c/",
    "http://example.org/a b",
    "http://example.org/a%20b%zz%",
    "http://example.org/a`b{c}",
    'http://example.org/?a`b{c}"',
    "http://example.org/<a>",
    "http://example.org/a#frag",
    "http://example.org/a?q#frag",
    "http://user:pw@example.org/",
    "http://example.org/caf\u00e9",
    "http://example.org/?q=caf\u00e9",
    "http://b\u00fccher.example/",
    "http://[::1]:8080/v6",
    "http://999.1.1.1/bad-v4",
    "http://1.2.3/three-parts",
    "http://example.org:99999/bad-port",
    "HTTP://example.org/upper-scheme",
    "ftp://example.org/file",
    "http://example.org/a\\b",
    "http://example.org/a;b=c;d",
    "http://example.org//double//slash",
    "http://example.org/%2e%2e/encoded-dots",
    "http://example.org/\x7f",
    "http://example.org/" + "a" * 70000,
]

HEADER_SETS = [
    {},
    HEADERS,
    {"User-Agent": "other-agent"},
    {"accept": "text/html", "Accept": "*/*"},
    {"CONNECTION": "close"},
    {"X-Long": "v" * 5000},
    {"X-Caf\u00e9": "1"},
    {"X-Name": "caf\u00e9"},
    {"Host": "elsewhere.example"},
]


def _random_url(rng: random.Random) -> str:
    alphabet = "abcXYZ019-._~!$&'()*+,;=:@/%?#[]\\^`{|}\"<> \t\u00e9\u4e2d"
    scheme = rng.choice(["http", "https", "HTTP", "ftp"])
    host = rng.choice(["example.org", "127.0.0.1:8080", "Example.ORG", "[::1]", "ex%41mple.org", "a@b"])
    tail = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 24)))
    return f"{scheme}://{host}/{tail}"


def _as_built(build, url: str, headers: dict):
    try:
        return build(url, headers)
    except Exception as exc:  # noqa: BLE001 - the same failure is the expected answer
        return type(exc)


def test_the_request_is_the_one_httpx_builds_for_awkward_urls_and_headers():
    client, transport = _client()
    fetcher = DirectFetcher(client, transport)
    built_by_httpx = 0
    original = client.build_request

    def counted(*args, **kwargs):
        nonlocal built_by_httpx
        built_by_httpx += 1
        return original(*args, **kwargs)

    def httpx_builds(url: str, headers: dict):
        request = original("GET", url, headers=headers)
        return origin_of(request.url), request.url.raw_path, request.headers.raw

    def built_here(url: str, headers: dict):
        where, target, sent = fetcher.request(url, headers)
        return (where if isinstance(where, tuple) else origin_of(where)), target, sent

    client.build_request = counted  # type: ignore[method-assign]
    rng = random.Random(14)
    urls = AWKWARD_URLS + [_random_url(rng) for _ in range(3000)]
    for url in urls:
        for headers in HEADER_SETS:
            assert _as_built(built_here, url, headers) == _as_built(httpx_builds, url, headers), (url, headers)

    built_by_httpx = 0
    for url in ["http://127.0.0.1:8000/", "http://example.org/a/b.html?x=1&y=2", "https://example.org/%41;b"]:
        fetcher.request(url, HEADERS)
    assert built_by_httpx == 0  # plain URLs: the request is built here


def test_the_origins_kept_are_bounded_and_still_right_after_a_reset():
    client, transport = _client()
    fetcher = DirectFetcher(client, transport)
    for i in range(MAX_KNOWN_ORIGINS + 10):
        where, _, sent = fetcher.request(f"http://h{i}.example/", {})
        assert where == (b"http", f"h{i}.example".encode(), 80) and sent[0] == (b"Host", f"h{i}.example".encode())
    assert len(fetcher._origins) <= MAX_KNOWN_ORIGINS


def test_a_cookie_set_by_one_answer_goes_back_with_the_next_request_as_httpx_sends_it():
    answer = (
        b"HTTP/1.1 200 OK\r\nSet-Cookie: session=abc; Path=/\r\nSet-Cookie: caf\xe9=\xe9t\xe9; Path=/\r\n"
        b"Content-Length: 2\r\n\r\nok",
        False,
    )
    _, sent_by_httpx, sent = _both_ways(answer, ["/first", "/second"])
    assert sent == sent_by_httpx
    assert b"Cookie: session=abc" in sent[1] and b"Cookie" not in sent[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_failures_read_the_same():
    silent = RawServer((b"", False))  # reads requests, never answers
    try:
        urls = [
            f"http://127.0.0.1:{_free_port()}/refused",
            f"ftp://127.0.0.1:{silent.port}/file",
            f"http://127.0.0.1:{silent.port}/never-answered",
        ]
        theirs = _through_httpx(urls, {}, deadline=0.5)
        ours = _direct(urls, {}, deadline=0.5)
    finally:
        silent.stop()
    assert ours == theirs
    assert [r["error"] for r in ours][1:] == ["unsupported URL scheme", "no response within the 0.5 s deadline"]
    assert ours[0]["error"].startswith("connection failed")

"""The sample site and its server, over real sockets on 127.0.0.1.

The ground truth that the rest of the suite trusts (paths, change kinds, markers) is checked
here against the bytes the server actually sends, with tools independent of the model
(lxml for noise and links, pypdf for the PDF, zlib for PNG and gzip).
"""

from __future__ import annotations

import gzip
import io
import re
import socket
import statistics
import struct
import threading
import time
import zlib
from collections import deque
from urllib.parse import urldefrag, urljoin, urlsplit

import httpx
import lxml.html
import pypdf
import pytest

from demo.sample_site import (
    INDEX_PATTERNS,
    MARKERS,
    NOISE_XPATHS,
    VERSIONS,
    SampleSite,
    _content,
    _resource,
    serve_sample_site,
)
from demo.site_server import SiteServer
from tests.support import hostile

IDENTITY = {"Accept-Encoding": "identity"}
KINDS = {"new", "changed", "soft", "unchanged", "deleted", "absent"}


@pytest.fixture(scope="module")
def server():
    srv = serve_sample_site(1, routes=hostile.resolve)
    yield srv
    srv.stop()


@pytest.fixture
def site(server):
    server.version = 1
    server.latency = 0.0
    server.reset_counters()
    return server


@pytest.fixture
def client(site):
    with httpx.Client(base_url=site.base_url, timeout=5.0) as c:
        yield c


@pytest.fixture(scope="module")
def served(server):
    """(version, path) -> (status, headers, identity body) for every path of every version."""
    out = {}
    with httpx.Client(base_url=server.base_url, timeout=5.0, headers=IDENTITY) as c:
        for version in VERSIONS:
            server.version = version
            for path in SampleSite.all_paths():
                r = c.get(path)
                out[version, path] = (r.status_code, r.headers, r.content)
    server.version = 1
    return out


def raw_get(port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET") -> tuple[bytes, bytes]:
    """One request on a fresh socket, read to EOF: (head, raw body as framed on the wire)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


def head_fields(head: bytes) -> dict[str, str]:
    return {
        k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head.decode().split("\r\n")[1:])
    }


def dechunk(raw: bytes) -> list[bytes]:
    chunks = []
    while True:
        size_line, _, raw = raw.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            assert raw == b"\r\n"
            return chunks
        chunks.append(raw[:size])
        assert raw[size : size + 2] == b"\r\n"
        raw = raw[size + 2 :]


def without_noise(body: bytes) -> bytes:
    doc = lxml.html.document_fromstring(body)
    for xpath in NOISE_XPATHS:
        for el in doc.xpath(xpath):
            el.drop_tree()
    return lxml.html.tostring(doc)


# -- versions and ground truth -----------------------------------------------------------------


def test_versions_switch_at_runtime(site, client):
    assert client.get("/news/article-0013.html").status_code == 404
    site.version = 2
    assert client.get("/news/article-0013.html").status_code == 200
    assert client.get("/news/article-0004.html").status_code == 404
    assert client.get("/news/article-0007.html").status_code == 410
    news = client.get("/news/").text
    assert news.index("article-0014") < news.index("article-0013") < news.index("article-0012")
    assert "article-0004" not in news and "article-0007" not in news
    site.version = 3
    assert client.get("/news/article-0015.html").status_code == 200
    assert client.get("/news/article-0002.html").status_code == 404
    site.version = 1
    assert client.get("/news/article-0013.html").status_code == 404
    assert [r.version for r in site.request_log] == [1, 2, 2, 2, 2, 3, 3, 1]


def test_served_bytes_are_the_ground_truth(served):
    for (version, path), (status, headers, body) in served.items():
        res = SampleSite.resource(version, path)
        if res is None:
            assert status == 404, (version, path)
            continue
        assert (status, body) == (res.status, res.body), (version, path)
        assert headers["content-type"] == res.content_type
        assert "content-encoding" not in headers  # identity was asked for


def test_change_kinds_agree_with_served_bytes(served):
    seen = set()
    for old, new in [(1, 2), (2, 3), (1, 3)]:
        for path in SampleSite.all_paths():
            kind = SampleSite.change_kind(old, new, path)
            seen.add(kind)
            (s0, h0, b0), (s1, h1, b1) = served[old, path], served[new, path]
            live0, live1 = s0 < 400, s1 < 400
            assert (live0, live1) == {
                "new": (False, True),
                "deleted": (True, False),
                "absent": (False, False),
            }.get(kind, (True, True)), (old, new, path, kind)
            if kind == "unchanged":
                assert (s0, b0, h0.get("location")) == (s1, b1, h1.get("location")), path
            elif kind == "soft":
                assert b0 != b1 and without_noise(b0) == without_noise(b1), path
            elif kind == "changed":
                is_html = h0["content-type"].startswith("text/html")
                assert s0 != s1 or (without_noise(b0) != without_noise(b1) if is_html else b0 != b1), path
    assert seen == KINDS


def test_change_kinds_as_designed():
    expected = {
        "/": ("changed", "changed"),
        "/news/page/3.html": ("soft", "changed"),
        "/news/article-0001.html": ("unchanged", "unchanged"),
        "/news/article-0002.html": ("soft", "deleted"),
        "/news/article-0003.html": ("changed", "soft"),
        "/news/article-0004.html": ("deleted", "absent"),
        "/news/article-0007.html": ("deleted", "absent"),
        "/news/article-0013.html": ("new", "unchanged"),
        "/news/article-0015.html": ("absent", "new"),
        "/about.html": ("soft", "soft"),
        "/zh/gbk.html": ("soft", "unchanged"),
        "/ja/index.html": ("unchanged", "soft"),
        "/docs/report.pdf": ("unchanged", "changed"),
        "/img/photo.png": ("changed", "unchanged"),
        "/kitchen-sink.html": ("unchanged", "unchanged"),
        "/go": ("unchanged", "unchanged"),
    }
    for path, kinds in expected.items():
        assert (SampleSite.change_kind(1, 2, path), SampleSite.change_kind(2, 3, path)) == kinds, path
    assert SampleSite.change_kind(1, 3, "/news/article-0002.html") == "deleted"
    assert SampleSite.change_kind(1, 1, "/nowhere.html") == "absent"


def test_strip_noise_matches_noise_selectors(served):
    for (_, path), (_, headers, body) in served.items():
        if headers["content-type"].startswith("text/html") and b"<footer>" in body:
            stripped = SampleSite.strip_noise(body)
            assert stripped != body
            assert without_noise(stripped) == without_noise(body), path


def test_deterministic():
    before = {(v, p): SampleSite.resource(v, p) for v in VERSIONS for p in SampleSite.all_paths()}
    _content.cache_clear()
    _resource.cache_clear()
    for key, res in before.items():
        assert SampleSite.resource(*key) == res


def _links(url: str, ctype: str, body: bytes) -> set[str]:
    """Every URL a page or stylesheet refers to, found with lxml and regexes (not the model)."""
    found: set[str] = set()
    css_urls = re.compile(r"""url\(\s*['"]?([^'")]+)|@import\s+['"]([^'"]+)""")
    if ctype.startswith("text/css"):
        return {urljoin(url, a or b) for a, b in css_urls.findall(body.decode())}
    if not ctype.startswith("text/html") or not body:
        return found
    doc = lxml.html.document_fromstring(body)
    base = url
    for el in doc.iter("base"):
        base = urljoin(url, el.get("href"))
        break
    attrs = {"a": "href", "area": "href", "link": "href", "img": "src", "script": "src", "iframe": "src"}
    attrs |= {
        "frame": "src",
        "embed": "src",
        "object": "data",
        "audio": "src",
        "video": "src",
        "source": "src",
    }
    for el in doc.iter(*attrs):
        if value := el.get(attrs[el.tag]):
            found.add(urljoin(base, value))
        for candidate in (el.get("srcset") or "").split(","):
            if candidate.strip():
                found.add(urljoin(base, candidate.split()[0]))
    for el in doc.xpath("//meta[@http-equiv='refresh']"):
        found.add(urljoin(base, el.get("content").split("url=", 1)[1]))
    for text in doc.xpath("//style/text() | //@style"):
        found |= {urljoin(base, a or b) for a, b in css_urls.findall(text)}
    return found


def test_crawl_from_home_finds_exactly_the_paths(site, client):
    for version in VERSIONS:
        site.version = version
        root = site.base_url
        seen, queue = set(), deque([root + "/"])
        while queue:
            url = queue.popleft()
            path = urlsplit(url).path
            if path in seen:
                continue
            seen.add(path)
            r = client.get(path)
            assert r.status_code in (200, 301, 302), (version, path, r.status_code)
            targets = _links(url, r.headers["content-type"], r.content)
            if "location" in r.headers:
                targets.add(urljoin(url, r.headers["location"]))
            for target in targets:
                target = urldefrag(target).url
                if target.startswith(root + "/"):
                    queue.append(target)
        assert seen | {"/robots.txt"} == SampleSite.paths(version)
        assert not any(p.startswith("/hostile/") for p in seen)
    assert SampleSite.paths(1) - SampleSite.paths(1, obey_robots=True) == {"/private/secret.html"}
    assert "Disallow: /private/" in client.get("/robots.txt").text


def test_page_kinds():
    assert SampleSite.index_paths(2) == {"/", "/news/", "/news/page/2.html", "/news/page/3.html", "/docs/"}
    content = SampleSite.content_paths(2)
    assert "/news/article-0014.html" in content and "/zh/index.html" in content
    assert not content & SampleSite.index_paths(2)
    assert SampleSite.page_kind("/static/site.css") is None and SampleSite.page_kind("/go") is None
    assert all(re.compile(p) for p in INDEX_PATTERNS)


def test_markers_hit_exactly_their_page():
    assert len(set(MARKERS.values())) == len(MARKERS)
    for path, marker in MARKERS.items():
        live = [v for v in VERSIONS if path in SampleSite.paths(v)]
        for version in live:
            assert SampleSite.containing(version, marker) == {path}


def test_cjk_pages(site, client):
    zh = client.get("/zh/index.html")
    assert zh.headers["content-type"] == "text/html; charset=utf-8"
    assert "国家图书馆加强数据安全管理" in zh.text
    gbk = client.get("/zh/gbk.html")
    assert gbk.headers["content-type"] == "text/html"  # the charset is only in the page
    assert b'<meta charset="gbk">' in gbk.content
    with pytest.raises(UnicodeDecodeError):
        gbk.content.decode("utf-8")
    assert "古籍数字化是图书馆" in gbk.content.decode("gbk")
    ja = client.get("/ja/index.html").text
    assert "国立国会図書館" in ja and "わかりやすく" in ja and "ウェブアーカイブ" in ja
    assert SampleSite.containing(1, "图书馆") == {"/zh/index.html", "/zh/gbk.html"}
    assert SampleSite.containing(1, "数据安全") == {"/zh/index.html"}
    assert SampleSite.containing(1, "国立国会図書館") == {"/ja/index.html"}


def test_pdf_has_extractable_text(site, client):
    for version in VERSIONS:
        site.version = version
        r = client.get("/docs/report.pdf")
        assert r.headers["content-type"] == "application/pdf"
        text = pypdf.PdfReader(io.BytesIO(r.content)).pages[0].extract_text()
        assert "quinquennial" in text and "preserved websites" in text
        assert ("Revised edition" in text) == (version == 3)
    assert SampleSite.containing(3, "quinquennial") == {"/docs/report.pdf"}


def test_pngs_are_valid():
    for path in SampleSite.paths(1):
        if not path.endswith(".png"):
            continue
        data = SampleSite.resource(1, path).body
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        pos, chunks = 8, {}
        while pos < len(data):
            (length,) = struct.unpack(">I", data[pos : pos + 4])
            tag, payload = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
            assert struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0] == zlib.crc32(tag + payload)
            chunks[tag] = payload
            pos += 12 + length
        width, height = struct.unpack(">II", chunks[b"IHDR"][:8])
        assert len(zlib.decompress(chunks[b"IDAT"])) == height * (1 + 3 * width), path


# -- transport ---------------------------------------------------------------------------------


def test_conditional_requests_get_real_304s(site, client):
    r = client.get("/static/site.css")
    etag, last_modified = r.headers["etag"], r.headers["last-modified"]
    r304 = client.get("/static/site.css", headers={"If-None-Match": etag})
    assert r304.status_code == 304 and r304.content == b"" and "content-length" not in r304.headers
    assert r304.headers["etag"] == etag
    assert client.get("/static/site.css", headers={"If-Modified-Since": last_modified}).status_code == 304
    older = "Mon, 01 Jan 2018 00:00:00 GMT"
    assert client.get("/static/site.css", headers={"If-Modified-Since": older}).status_code == 200
    assert client.get("/static/site.css", headers={"If-None-Match": '"other"'}).status_code == 200
    # A page with only Last-Modified, and one with no validators at all.
    lm = client.get("/news/article-0001.html").headers["last-modified"]
    assert client.get("/news/article-0001.html", headers={"If-Modified-Since": lm}).status_code == 304
    plain = client.get("/news/article-0008.html")
    assert "etag" not in plain.headers and "last-modified" not in plain.headers
    assert client.get("/news/article-0008.html", headers={"If-None-Match": "*"}).status_code == 200
    # The gzip variant has its own tag; either tag revalidates.
    gz = client.get("/docs/guide.html")
    assert gz.headers["content-encoding"] == "gzip" and gz.headers["etag"].endswith('-gzip"')
    assert client.get("/docs/guide.html", headers={"If-None-Match": gz.headers["etag"]}).status_code == 304
    # Unchanged across versions: the v1 validators still hold in v3.
    site.version = 3
    assert client.get("/static/site.css", headers={"If-None-Match": etag}).status_code == 304
    assert client.get("/docs/report.pdf", headers={"If-Modified-Since": last_modified}).status_code == 200
    assert [rec.status for rec in site.request_log].count(304) == 5


def test_gzip_only_when_accepted(site):
    truth = SampleSite.resource(1, "/news/").body
    with httpx.Client(base_url=site.base_url, timeout=5) as c:
        r = c.get("/news/", headers={"Accept-Encoding": "gzip"})
        assert r.headers["content-encoding"] == "gzip" and r.headers["vary"] == "Accept-Encoding"
        assert r.content == truth
    head, raw = raw_get(site.port, "/news/", {"Accept-Encoding": "gzip, deflate"})
    fields = head_fields(head)
    assert fields["content-encoding"] == "gzip" and raw[:2] == b"\x1f\x8b"
    assert int(fields["content-length"]) == len(raw) and gzip.decompress(raw) == truth
    for accept in ("identity", "gzip;q=0, *;q=1", "br", None):
        head, raw = raw_get(site.port, "/news/", {"Accept-Encoding": accept} if accept else {})
        assert "content-encoding" not in head_fields(head) and raw == truth, accept


def test_chunked_framing(site):
    for path, gzipped in [
        ("/news/page/2.html", False),
        ("/kitchen-sink.html", False),
        ("/docs/guide.html", True),
    ]:
        head, raw = raw_get(site.port, path, {"Accept-Encoding": "gzip"})
        fields = head_fields(head)
        assert fields["transfer-encoding"] == "chunked" and "content-length" not in fields
        chunks = dechunk(raw)
        assert len(chunks) >= 3, path
        body = b"".join(chunks)
        assert ("content-encoding" in fields) == gzipped
        assert (gzip.decompress(body) if gzipped else body) == SampleSite.resource(1, path).body


def test_head_and_http10(site):
    head, raw = raw_get(site.port, "/about.html", IDENTITY, method="HEAD")
    assert raw == b"" and int(head_fields(head)["content-length"]) == len(SampleSite.resource(1, "/about.html").body)
    with socket.create_connection(("127.0.0.1", site.port), timeout=5) as sock:
        sock.sendall(b"GET /ja/index.html HTTP/1.0\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert "transfer-encoding" not in head_fields(head)  # no chunked coding for HTTP/1.0
    assert body == SampleSite.resource(1, "/ja/index.html").body


def test_redirect_chain(site, client):
    r = client.get("/go")
    assert (r.status_code, r.headers["location"]) == (302, "/old-about")
    r = client.get("/old-about")
    assert (r.status_code, r.headers["location"]) == (301, "/about.html")
    r = client.get("/go", follow_redirects=True)
    assert r.status_code == 200 and str(r.url).endswith("/about.html")
    assert [h.status_code for h in r.history] == [302, 301]


def test_keep_alive_and_no_delayed_ack_stalls(site, client):
    durations = []
    for _ in range(15):
        start = time.perf_counter()
        assert client.get("/news/page/2.html").status_code == 200  # chunked: several writes
        durations.append(time.perf_counter() - start)
    assert site.connection_count == 1
    assert statistics.median(durations) < 0.025  # a delayed-ACK stall is about 40 ms


def test_counters_and_request_log(site):
    head, raw = raw_get(site.port, "/contact.html", {"X-Probe": "yes"})
    assert site.request_count == 1
    assert site.bytes_sent == len(head) + 4 + len(raw)
    (rec,) = site.request_log
    assert (rec.method, rec.path, rec.status) == ("GET", "/contact.html", 200)
    assert rec.header("x-probe") == "yes"
    raw_get(site.port, "/missing.html")
    assert site.request_log[-1].status == 404
    site.reset_counters()
    assert (site.request_count, site.bytes_sent, site.request_log) == (0, 0, [])


def test_latency():
    with serve_sample_site(1, latency=0.2) as srv:
        start = time.perf_counter()
        assert httpx.get(srv.url("/robots.txt"), timeout=5).status_code == 200
        assert time.perf_counter() - start >= 0.2


def test_stop_is_prompt_and_releases_the_port():
    srv = serve_sample_site(1, routes=hostile.resolve)
    port = srv.port
    trickle = socket.create_connection(("127.0.0.1", port), timeout=5)
    trickle.sendall(b"GET /hostile/trickle HTTP/1.1\r\nHost: x\r\n\r\n")
    assert trickle.recv(1024).startswith(b"HTTP/1.1 200")
    idle = httpx.Client(timeout=5)
    assert idle.get(srv.url("/")).status_code == 200  # leaves a keep-alive connection open
    start = time.perf_counter()
    srv.stop()
    assert time.perf_counter() - start < 1.0
    trickle.settimeout(2)
    while trickle.recv(1024):  # the mid-response connection is closed, not left hanging
        pass
    trickle.close()
    idle.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
    with SiteServer(SampleSite(), 2, port=port) as again:
        assert again.base_url == f"http://127.0.0.1:{port}"
        assert httpx.get(again.url("/news/article-0013.html"), timeout=5).status_code == 200
    assert not again.running


# -- hostile endpoints -------------------------------------------------------------------------


def test_hostile_trickle(site):
    with httpx.Client(timeout=2) as c, c.stream("GET", site.url("/hostile/trickle")) as r:
        assert r.headers["content-length"] == "120"
        start, got = time.perf_counter(), b""
        for piece in r.iter_raw():
            got += piece
            if time.perf_counter() - start > 1.0:
                break
    assert 2 <= len(got) <= 5  # one byte every half second


def test_hostile_huge(site):
    with httpx.Client(timeout=5) as c, c.stream("GET", site.url("/hostile/huge")) as r:
        assert int(r.headers["content-length"]) == 50 * 1024 * 1024
        got = 0
        for piece in r.iter_raw():
            got += len(piece)
            if got > 1 << 20:
                break
    assert got > 1 << 20


def test_hostile_bomb(site):
    head, raw = raw_get(site.port, "/hostile/bomb", {"Accept-Encoding": "identity"})
    assert head_fields(head)["content-encoding"] == "gzip"  # sent compressed whatever was asked
    assert len(raw) < 300_000
    inflater, total, data = zlib.decompressobj(31), 0, raw
    while data:
        total += len(inflater.decompress(data, 1 << 24))
        data = inflater.unconsumed_tail
    assert inflater.eof and total == 200 * 1024 * 1024


def test_hostile_pages(site, client):
    deep = client.get("/hostile/deep.html").text
    assert deep.count("<div>") == 5000 and deep.index('href="/hostile/empty.html"') > deep.rindex("<div>")
    bad = client.get("/hostile/badcharset.html")
    assert bad.headers["content-type"] == "text/html" and b'<meta charset="x-bogus">' in bad.content
    empty = client.get("/hostile/empty.html")
    assert (empty.status_code, empty.content, empty.headers["content-length"]) == (200, b"", "0")
    assert empty.headers["content-type"].startswith("text/html")
    loop = client.get("/hostile/redirect-loop")
    assert (loop.status_code, loop.headers["location"]) == (302, "/hostile/redirect-loop")
    with pytest.raises(httpx.TooManyRedirects):
        client.get("/hostile/redirect-loop", follow_redirects=True)
    many = client.get("/hostile/manylinks.html")
    assert many.headers["transfer-encoding"] == "chunked" and many.content.count(b"<a href=") == 200_000
    assert client.get("/hostile/nothing").status_code == 404


def test_hostile_endpoints_not_linked():
    for version in VERSIONS:
        for path in SampleSite.paths(version):
            assert b"/hostile/" not in SampleSite.resource(version, path).body


def test_context_manager_and_threads_settle():
    before = threading.active_count()
    with serve_sample_site(2) as srv:
        with httpx.Client(timeout=5) as c:
            assert c.get(srv.url("/")).status_code == 200
    deadline = time.monotonic() + 2
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert threading.active_count() <= before

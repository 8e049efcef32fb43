"""A server that sends more than its ``Content-Length`` on a kept-alive connection: the surplus is
never read as the next response. Every other URL is archived with its own bytes, the URL after the
surplus goes out on a new connection, and the capture with the surplus is flagged in its record."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.fetch import fetch, make_client
from harvester.job import validate_job
from harvester.run import Harvest
from harvester.surplus import h11_connection
from index.collection import Collection
from tests.support.wire_server import WireServer, http_response

HTML = [(b"Content-Type", b"text/html; charset=utf-8")]
# A Chinese page whose server counts characters, not UTF-8 bytes: its Content-Length is a third of
# its length in bytes, and the rest of the page is left on the wire.
ZH_TEXT = (
    '<!doctype html><html><head><meta charset="utf-8"><title>国家图书馆</title></head>'
    "<body><h1>中文网页</h1><p>图书馆收藏了大量的中文网页，这一页的长度按字符计算，而不是按字节计算。</p></body></html>"
)
ZH_BODY = ZH_TEXT.encode("utf-8")
SURPLUS_PAGES = {"/zh.html", "/extra-response.html", "/junk.html"}


def page(name: str) -> bytes:
    return f"<html><body><p>this is {name} and only {name}</p></body></html>".encode()


def site_routes() -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(what the server sends for each path, the payload each path must be archived with)."""
    order = ["/zh.html", "/a.html", "/extra-response.html", "/b.html", "/junk.html", "/c.html", "/d.html"]
    home = "<html><body>" + "".join(f'<a href="{p}">{p}</a>' for p in order) + "</body></html>"
    stored = {"/": home.encode(), **{p: page(p) for p in order}, "/zh.html": ZH_BODY[: len(ZH_TEXT)]}
    routes = {path: http_response(200, HTML, body) for path, body in stored.items()}
    routes["/zh.html"] = http_response(200, HTML, ZH_BODY, content_length=len(ZH_TEXT))
    # A whole second response after the body: read as the next URL's answer, it would archive
    # that URL with these bytes, status 200, and no error anywhere.
    routes["/extra-response.html"] = http_response(
        200, HTML, page("/extra-response.html"), after=http_response(200, HTML, b"<p>bytes of no URL</p>")
    )
    routes["/junk.html"] = http_response(200, HTML, page("/junk.html"), after=b"\x00\xff\r\n\r\njunk\r\n")
    return routes, stored


def archived(root, name: str) -> dict[str, list]:
    """url -> [(status, payload, WARC-Strata-Note, WARC-IP-Address)] of every response record."""
    out: dict[str, list] = {}
    for path in sorted(Collection.open(root, name).archive_dir.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type != "response":
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI")
                out.setdefault(url, []).append(
                    (
                        record.http_headers.get_statuscode(),
                        record.content_stream().read(),
                        record.rec_headers.get_header("WARC-Strata-Note"),
                    )
                )
    return out


@pytest.mark.parametrize("fetch_process", [True, False], ids=["fetch-process", "in-process"])
def test_every_url_is_archived_with_its_own_bytes(root, fetch_process):
    routes, stored = site_routes()
    with WireServer(routes) as server:
        job = validate_job(
            "t",
            {
                "seeds": [server.base_url + "/"],
                "delay": 0.0,
                "depth": 1,
                "concurrency": 1,
                "fetch_process": fetch_process,
            },
        )
        run = Harvest(Collection.open(root, "c", create=True), job)
        summary = asyncio.run(run.run())
        log = list(server.log)
    assert (run.fetcher.process is not None) == fetch_process
    assert summary["errors"] == 0 and summary["status"] == "finished"
    captures = archived(root, "c")
    expected = {server.base_url + path: body for path, body in stored.items()}
    assert set(captures) == set(expected) | {server.base_url + "/robots.txt"}
    for url, body in expected.items():
        ((status, payload, note),) = captures[url]
        assert (status, payload) == ("200", body), url
        path = url[len(server.base_url) :]
        if path in SURPLUS_PAGES:
            assert note and note.startswith("content-length-surplus (at least "), url
        else:
            assert note is None, url
    # each URL asked for once; whatever followed a surplus went out on a connection of its own
    assert sorted(r.path for r in log) == sorted(["/robots.txt", *stored])
    connections = [r.connection for r in log]
    for i, request in enumerate(log[:-1]):
        if request.path in SURPLUS_PAGES:
            assert log[i + 1].connection not in connections[: i + 1], (request.path, log[i + 1].path)
        else:
            assert log[i + 1].connection == request.connection  # kept alive otherwise (one connection)
    assert len(set(connections)) == 1 + len(SURPLUS_PAGES)
    assert any("content-length-surplus" in note for note in summary["notes"])


def test_the_fetch_sees_the_surplus_and_h11_is_reachable():
    """The two private paths the check depends on (httpx -> httpcore -> h11) still lead to h11."""
    routes, _ = site_routes()
    routes["/closing.html"] = http_response(200, HTML + [(b"Connection", b"close")], b"<p>bye</p>", after=b"more")

    async def go():
        client = make_client(1, 5.0, 5.0, "strata-test")
        try:
            async with client.stream("GET", server.base_url + "/a.html") as response:
                assert h11_connection(response) is not None
                await response.aread()  # read to its end: the connection is kept
            zh = await fetch(client, server.base_url + "/zh.html")
            after = await fetch(client, server.base_url + "/a.html")
            closing = await fetch(client, server.base_url + "/closing.html")
            assert closing.surplus == 4 and closing.read_body() == b"<p>bye</p>"  # flagged, though not kept alive
            return zh, after
        finally:
            await client.aclose()

    with WireServer(routes) as server:
        zh, after = asyncio.run(go())
        log = list(server.log)
    assert zh.surplus == len(ZH_BODY) - len(ZH_TEXT) and zh.read_body() == ZH_BODY[: len(ZH_TEXT)]
    assert after.surplus == 0 and after.read_body() == page("/a.html")
    assert [r.connection for r in log] == [1, 1, 2, 2]


def test_a_transport_without_h11_has_no_surplus():
    async def go():
        client = make_client(
            1, 5.0, 5.0, "t", transport=httpx.MockTransport(lambda r: httpx.Response(200, content=b"x"))
        )
        try:
            return await fetch(client, "http://127.0.0.1:1/")
        finally:
            await client.aclose()

    result = asyncio.run(go())
    assert result.status == 200 and result.surplus == 0 and result.read_body() == b"x"


def test_through_the_network_guard_too():
    """The console's harvests fetch through ``GuardedTransport``: the same check holds there."""
    from harvester.guard import GuardedTransport, NetworkPolicy

    routes, stored = site_routes()

    async def go():
        transport = GuardedTransport(NetworkPolicy.from_strings(["127.0.0.0/8"]))
        client = make_client(1, 5.0, 5.0, "strata-test", transport=transport)
        try:
            return [await fetch(client, server.base_url + p) for p in ("/zh.html", "/a.html", "/junk.html", "/b.html")]
        finally:
            await client.aclose()

    with WireServer(routes) as server:
        results = asyncio.run(go())
        log = list(server.log)
    assert [r.read_body() for r in results] == [stored[p] for p in ("/zh.html", "/a.html", "/junk.html", "/b.html")]
    assert [bool(r.surplus) for r in results] == [True, False, True, False]
    assert {r.ip for r in results} == {"127.0.0.1"}
    assert [r.connection for r in log] == [1, 2, 2, 3]

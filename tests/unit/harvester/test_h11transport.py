"""harvester.h11transport (the fetch process's transport) against httpx's own, on the same bytes.

A raw socket server answers each request with canned bytes, awkward ones included; ``fetch`` runs
once over httpx's transport (``AsyncioTransport``: httpcore) and once over ``H11Transport``, and
every field of the two results must be equal. Then what only a pool shows: keep-alive reuse, a
closed connection not reused, the connection limit, and TLS against a throwaway CA (trustme).
"""

from __future__ import annotations

import asyncio
import ssl

import pytest
import trustme

from harvester.fetch import fetch, make_client
from harvester.h11transport import H11Transport
from tests.support.canned_server import ANSWERS, RawServer, result_fields


async def _fetch_twice(url: str, transport) -> list[dict]:
    async with make_client(2, 5.0, 5.0, "test-agent", transport=transport) as client:
        return [result_fields(await fetch(client, url, headers={"Accept-Encoding": "gzip"})) for _ in range(2)]


@pytest.mark.parametrize("name", list(ANSWERS))
def test_every_field_is_what_httpx_s_own_transport_gives(name):
    server = RawServer(ANSWERS[name])
    try:
        url = f"http://127.0.0.1:{server.port}/a/b.html?q=1"
        theirs = asyncio.run(_fetch_twice(url, None))
        ours = asyncio.run(_fetch_twice(url, H11Transport(2)))
    finally:
        server.stop()
    assert ours == theirs
    if name == "more than its length":
        assert ours[0]["surplus"] == 3


def _connections_for(answer: tuple[bytes, bool], urls: int) -> int:
    server = RawServer(answer)

    async def run() -> None:
        async with make_client(1, 5.0, 5.0, "t", transport=H11Transport(1)) as client:
            for i in range(urls):
                result = await fetch(client, f"http://127.0.0.1:{server.port}/{i}")
                assert result.error is None and result.status == 200
                result.close()

    try:
        asyncio.run(run())
    finally:
        server.stop()
    return server.accepted


def test_a_kept_alive_connection_is_reused_and_a_closed_one_is_not():
    assert _connections_for(ANSWERS["200 with a length"], 5) == 1
    assert _connections_for(ANSWERS["HTTP/1.0 read to the close"], 5) == 5
    assert _connections_for(ANSWERS["more than its length"], 3) == 3  # surplus: never read as the next answer


def test_no_more_connections_open_than_the_limit():
    """Three origins, two connections: the oldest idle one is closed to make room."""
    servers = [RawServer(ANSWERS["200 with a length"]) for _ in range(3)]
    transport = H11Transport(2)
    most = 0

    async def run() -> None:
        nonlocal most
        async with make_client(2, 5.0, 5.0, "t", transport=transport) as client:
            for i in range(12):
                batch = [
                    fetch(client, f"http://127.0.0.1:{s.port}/{i}") for s in (servers + servers)[i % 3 : i % 3 + 2]
                ]
                for result in await asyncio.gather(*batch):
                    assert result.status == 200, result.error
                    result.close()
                most = max(most, transport.open_connections())

    try:
        asyncio.run(run())
    finally:
        for s in servers:
            s.stop()
    assert most == 2
    assert sum(s.accepted for s in servers) > 3  # connections were closed for others, and opened again


def test_tls_verifies_the_server_and_keeps_the_connection():
    ca = trustme.CA()
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(tls)
    server = RawServer(ANSWERS["200 with a length"], tls)
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    url = f"https://127.0.0.1:{server.port}/secret.html"
    try:
        untrusted = asyncio.run(_fetch_twice(url, H11Transport(1)))  # certifi's bundle: the test CA is not in it
        ok = asyncio.run(_fetch_twice(url, H11Transport(1, ssl_context=trusted)))
    finally:
        server.stop()
    assert "CERTIFICATE_VERIFY_FAILED" in (untrusted[0]["error"] or "")
    assert [r["body"] for r in ok] == [b"hello", b"hello"] and ok[0]["error"] is None
    assert server.accepted == 3  # two refused handshakes, then one connection for both requests

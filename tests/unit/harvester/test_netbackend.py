"""harvester.netbackend: httpcore on plain asyncio, against real servers on 127.0.0.1.

Every test goes over a real socket: the site server (keep-alive, chunked, gzip), a listener that
never answers, a port nobody listens on, a forward proxy, a server that drops idle connections,
and a TLS server with a certificate made here (skipped when ``cryptography`` is missing).
"""

from __future__ import annotations

import asyncio
import datetime
import gzip
import ipaddress
import os
import socket
import ssl
import threading
import time
from http.server import ThreadingHTTPServer

import httpcore
import httpx
import pytest

from demo.site_server import Resource, SiteServer
from harvester import netbackend
from harvester.fetch import fetch, make_client
from harvester.netbackend import AsyncioBackend, AsyncioStream, AsyncioTransport
from tests.conftest import free_port
from tests.integration.test_worker import _Proxy

TEXT = ("<!DOCTYPE html><title>t</title>" + "<p>Strata harvests, line by line.</p>\n" * 4000).encode()
BLOB = os.urandom(3 * 1024 * 1024 + 17)  # bigger than a socket read, incompressible


class Model:
    def resolve(self, version, path, headers):
        html = (("Content-Type", "text/html; charset=utf-8"),)
        if path == "/chunked":
            return Resource(headers=html, body=TEXT, chunked=True)
        if path == "/gzip":
            return Resource(headers=html, body=TEXT, gzip=True)
        if path == "/chunked-gzip":
            return Resource(headers=html, body=TEXT, gzip=True, chunked=True)
        if path == "/blob":
            return Resource(headers=(("Content-Type", "application/octet-stream"),), body=BLOB)
        return Resource(headers=html, body=f"page {path}".encode())


@pytest.fixture
def server():
    with SiteServer(Model()) as srv:
        yield srv


def client(**kwargs):
    values = {"concurrency": 1, "connect_timeout": 5.0, "timeout": 5.0, "user_agent": "strata-test", **kwargs}
    return make_client(**values)


def test_requests_share_one_keep_alive_connection_made_by_this_backend(server):
    async def go():
        async with client() as c:
            bodies, streams = [], set()
            for i in range(6):
                response = await c.get(server.url(f"/page{i}"))
                bodies.append(response.text)
                stream = response.extensions["network_stream"]
                assert isinstance(stream, AsyncioStream)
                streams.add(id(stream))
                sock = stream.get_extra_info("socket")
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
                assert stream.get_extra_info("server_addr") == ("127.0.0.1", server.port)
                assert stream.get_extra_info("client_addr")[0] == "127.0.0.1"
                assert stream.get_extra_info("ssl_object") is None
                assert stream.get_extra_info("is_readable") is False
            return bodies, streams

    bodies, streams = asyncio.run(go())
    assert bodies == [f"page /page{i}" for i in range(6)]
    assert len(streams) == 1 and server.connection_count == 1 and server.request_count == 6


def test_chunked_gzip_and_large_bodies_are_stored_byte_exact(server):
    async def go():
        async with client() as c:
            out = {}
            for path in ("/chunked", "/gzip", "/chunked-gzip", "/blob"):
                result = await fetch(c, server.url(path), headers={"Accept-Encoding": "gzip"})
                assert result.error is None and result.status == 200 and result.truncated is None
                out[path] = (result.read_body(), dict(result.headers))
                result.close()
            return out

    out = asyncio.run(go())
    zipped = gzip.compress(TEXT, mtime=0)  # what the server sends: still content-encoded in the record
    assert out["/chunked"][0] == TEXT and "Transfer-Encoding" not in out["/chunked"][1]
    assert out["/gzip"][0] == zipped and out["/gzip"][1]["Content-Encoding"] == "gzip"
    assert out["/chunked-gzip"][0] == zipped
    assert out["/blob"][0] == BLOB
    assert server.connection_count == 1


def test_a_server_that_never_answers_is_a_read_timeout():
    listener = socket.create_server(("127.0.0.1", 0))  # the kernel completes the handshake; no one reads
    try:

        async def go():
            async with client(timeout=0.3) as c:
                return await fetch(c, f"http://127.0.0.1:{listener.getsockname()[1]}/")

        result = asyncio.run(go())
    finally:
        listener.close()
    assert result.status is None and result.error == "timed out"


def test_a_refused_connection_is_connection_failed():
    port = free_port()

    async def go():
        async with client() as c:
            return await fetch(c, f"http://127.0.0.1:{port}/")

    result = asyncio.run(go())
    assert result.status is None
    assert result.error.startswith("connection failed (") and "111" in result.error


def _dropping_listener(port: int) -> tuple[socket.socket, socket.socket]:
    """A listener on 127.0.0.2:``port`` whose accept queue is full: the kernel drops further SYNs,
    as a route that loses packets does (a broken IPv6 route is the usual one)."""
    listener = socket.socket()
    listener.bind(("127.0.0.2", port))
    listener.listen(0)
    filler = socket.create_connection(("127.0.0.2", port), timeout=2)
    return listener, filler


def test_a_name_whose_first_address_drops_connects_to_the_next_after_the_attempt_delay(server, monkeypatch):
    """RFC 8305: the next address is tried after HAPPY_EYEBALLS_DELAY, not after the connect timeout."""
    listener, filler = _dropping_listener(server.port)
    stream = socket.SOCK_STREAM
    infos = [
        (socket.AF_INET, stream, 6, "", ("127.0.0.2", server.port)),
        (socket.AF_INET, stream, 6, "", ("127.0.0.1", server.port)),
    ]

    async def resolve(host, port):  # the resolver is the boundary: a name with a dead address first
        assert host == "dual.example" and port == server.port
        return infos

    monkeypatch.setattr(netbackend, "address_infos", resolve)

    async def go():
        async with client(connect_timeout=5.0) as c:
            started = time.monotonic()
            result = await fetch(c, f"http://dual.example:{server.port}/page")
            return result, time.monotonic() - started

    try:
        result, took = asyncio.run(go())
    finally:
        filler.close()
        listener.close()
    assert result.status == 200 and result.read_body() == b"page /page"
    assert netbackend.HAPPY_EYEBALLS_DELAY <= took < 2.0


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "2001:db8::7", "10.1.2.3", "localhost"])
def test_addresses_written_out_are_what_the_resolver_would_give(host):
    """A literal skips the resolver's thread, with the family, address and port the OS gives it."""
    ours = asyncio.run(netbackend.address_infos(host, 8080))
    theirs = socket.getaddrinfo(host, 8080, type=socket.SOCK_STREAM)
    assert [(i[0], i[1], i[4]) for i in ours] == [(i[0], i[1], i[4]) for i in theirs]


def test_a_write_to_a_peer_that_does_not_read_times_out():
    listener = socket.create_server(("127.0.0.1", 0))
    try:

        async def go():
            stream = await AsyncioBackend().connect_tcp("127.0.0.1", listener.getsockname()[1], timeout=5)
            try:
                with pytest.raises(httpcore.WriteTimeout):
                    await stream.write(b"x" * (64 << 20), timeout=0.3)
            finally:
                await stream.aclose()
            with pytest.raises(httpcore.ReadError):
                await stream.read(10)
            with pytest.raises(httpcore.WriteError):
                await stream.write(b"more")

        asyncio.run(go())
    finally:
        listener.close()


def test_socket_options_and_local_address_are_applied(server):
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]

    async def go():
        transport = AsyncioTransport(local_address="127.0.0.1", socket_options=options)
        async with httpx.AsyncClient(transport=transport) as c:
            response = await c.get(server.url("/x"))
            sock = response.extensions["network_stream"].get_extra_info("socket")
            return response.text, sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)

    assert asyncio.run(go()) == ("page /x", 1)


class _Forward(_Proxy):
    """Answers "via proxy" to any GET (and notes the request target), with keep-alive."""

    protocol_version = "HTTP/1.1"


class _DropsIdle(_Forward):
    timeout = 0.2  # an idle keep-alive connection is closed after this, without a word


def _serve(handler):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    httpd.seen = []
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def test_make_client_proxy_goes_through_the_new_backend():
    proxy = _serve(_Forward)
    try:

        async def go():
            async with client(proxy=f"http://127.0.0.1:{proxy.server_address[1]}") as c:
                result = await fetch(c, "http://example.invalid/page")
                answer = result.status, result.read_body()
                result.close()
                return answer

        assert asyncio.run(go()) == (200, b"via proxy")
        assert proxy.seen == ["http://example.invalid/page"]
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_a_connection_the_server_dropped_while_idle_is_replaced():
    httpd = _serve(_DropsIdle)
    try:

        async def go():
            async with client() as c:
                url = f"http://127.0.0.1:{httpd.server_address[1]}/"
                first = await c.get(url)
                stream = first.extensions["network_stream"]
                await asyncio.sleep(0.6)
                assert stream.get_extra_info("is_readable") is True  # EOF is waiting
                second = await c.get(url)
                assert second.extensions["network_stream"] is not stream
                return first.text, second.text

        assert asyncio.run(go()) == ("via proxy", "via proxy")
    finally:
        httpd.shutdown()
        httpd.server_close()


# -- TLS ---------------------------------------------------------------------------------------------
def _self_signed(tmp_path):
    pytest.importorskip("cryptography", reason="no certificate tooling: cryptography is not installed")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


def test_tls_round_trip_with_keep_alive_and_verification(tmp_path):
    cert_file, key_file = _self_signed(tmp_path)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Forward)
    httpd.daemon_threads = True
    httpd.seen = []
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert_file, key_file)
    httpd.socket = server_ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    trusting = ssl.create_default_context(cafile=str(cert_file))
    try:

        async def go():
            async with httpx.AsyncClient(transport=AsyncioTransport(verify=trusting)) as c:
                streams = set()
                for path in ("/a", "/b", "/c"):
                    response = await c.get(f"https://localhost:{port}{path}")
                    assert response.text == "via proxy"
                    stream = response.extensions["network_stream"]
                    assert isinstance(stream, AsyncioStream)
                    ssl_object = stream.get_extra_info("ssl_object")
                    assert ssl_object is not None and ssl_object.version().startswith("TLS")
                    streams.add(id(stream))
                assert len(streams) == 1
            async with client() as c:  # the harvest's client trusts only real CAs
                return await fetch(c, f"https://localhost:{port}/d")

        refused = asyncio.run(go())
        assert refused.error.startswith("connection failed (") and "CERTIFICATE_VERIFY_FAILED" in refused.error
        assert httpd.seen == ["/a", "/b", "/c"]
    finally:
        httpd.shutdown()
        httpd.server_close()

"""A job's proxies: a dead one rests while the others carry its URLs, errors name it (never its
credentials), https goes through an http:// proxy with CONNECT or through a SOCKS5 proxy, a run
where every proxy failed fails, and proxies of other kinds are refused when the job is read.

The proxies are small ones written here on 127.0.0.1: a forwarding HTTP proxy (absolute-form GET
and CONNECT tunnels) and a SOCKS5 one (RFC 1928, no authentication, CONNECT); the https origin is a local TLS server
with a certificate from a throwaway CA
(trustme); the dead proxy is a closed port."""

from __future__ import annotations

import asyncio
import http.client
import select
import socket
import socketserver
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import httpx
import pytest
import trustme

from harvester.guard import GuardedTransport, NetworkPolicy
from harvester.job import validate_job
from harvester.run import Harvest
from index.collection import Collection
from index.storage.state import HarvestState
from strata.errors import ConfigError
from tests.conftest import free_port

LOCAL = NetworkPolicy.from_strings(["127.0.0.1/32"])
PAGES = {
    "/": b'<!DOCTYPE html><title>home</title><a href="/a.html">a</a> <a href="/b.html">b</a> '
    b'<a href="/c.html">c</a> <img src="/d.png">',
    "/a.html": b"<!DOCTYPE html><title>a</title><p>a</p>",
    "/b.html": b"<!DOCTYPE html><title>b</title><p>b</p>",
    "/c.html": b"<!DOCTYPE html><title>c</title><p>c</p>",
    "/d.png": b"\x89PNG\r\n\x1a\n not really",
}


class _Origin(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = PAGES.get(self.path)
        self.server.seen.append(self.path)
        if body is None:
            self.send_response(404)
            body = b"not here"
        else:
            self.send_response(200)
        self.send_header("Content-Type", "image/png" if self.path.endswith(".png") else "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _Proxy(BaseHTTPRequestHandler):
    """Forwards absolute-form GETs and tunnels CONNECT; logs what it carried."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        target = urlsplit(self.path)
        self.server.seen.append(("GET", self.path))
        upstream = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=10)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection")}
        upstream.request("GET", target.path + (f"?{target.query}" if target.query else ""), headers=headers)
        response = upstream.getresponse()
        body = response.read()
        upstream.close()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_CONNECT(self):
        host, _, port = self.path.rpartition(":")
        self.server.seen.append(("CONNECT", self.path))
        upstream = socket.create_connection((host, int(port)), timeout=10)
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        sockets = [self.connection, upstream]
        try:
            while True:
                readable, _, _ = select.select(sockets, [], [], 10)
                if not readable:
                    return
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is self.connection else self.connection).sendall(data)
        finally:
            upstream.close()
            self.close_connection = True

    def log_message(self, *args):
        pass


class _Socks5(socketserver.BaseRequestHandler):
    """RFC 1928: no authentication, CONNECT only; logs the (host, port) asked for."""

    def _read(self, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = self.request.recv(count - len(data))
            if not chunk:
                raise ConnectionError("client left")
            data += chunk
        return data

    def handle(self):
        version, methods = self._read(2)
        if version != 5 or 0 not in self._read(methods):
            self.request.sendall(b"\x05\xff")
            return
        self.request.sendall(b"\x05\x00")
        _, command, _, kind = self._read(4)
        if kind == 1:
            host = socket.inet_ntoa(self._read(4))
        elif kind == 3:
            host = self._read(self._read(1)[0]).decode("idna")
        else:
            host = socket.inet_ntop(socket.AF_INET6, self._read(16))
        port = int.from_bytes(self._read(2), "big")
        self.server.seen.append((host, port))
        if command != 1:
            self.request.sendall(b"\x05\x07\x00\x01" + bytes(6))
            return
        upstream = socket.create_connection((host, port), timeout=10)
        self.request.sendall(b"\x05\x00\x00\x01" + bytes(6))
        sockets = [self.request, upstream]
        try:
            while True:
                readable, _, _ = select.select(sockets, [], [], 10)
                if not readable:
                    return
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is self.request else self.request).sendall(data)
        finally:
            upstream.close()


class _ThreadingTCP(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Server:
    def __init__(self, handler, tls: ssl.SSLContext | None = None):
        server_class = ThreadingHTTPServer if issubclass(handler, BaseHTTPRequestHandler) else _ThreadingTCP
        self.httpd = server_class(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.httpd.seen = []
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def seen(self):
        return self.httpd.seen

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


socketserver.TCPServer.allow_reuse_address = True


@pytest.fixture
def ca():
    return trustme.CA()


@pytest.fixture
def servers(ca):
    cert = ca.issue_cert("127.0.0.1", "localhost")
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(tls)
    made = {
        "plain": _Server(_Origin),
        "tls": _Server(_Origin, tls),
        "proxy": _Server(_Proxy),
        "socks": _Server(_Socks5),
    }
    yield made
    for server in made.values():
        server.stop()


def _harvest(root, seed, proxies, ca, **fields):
    job = validate_job(
        "proxied",
        {
            "seeds": [seed],
            "delay": 0.0,
            "depth": 2,
            "timeout": 10.0,
            "fulltext": False,
            "robots": "ignore",
            "proxies": proxies,
            **fields,
        },
    )
    client_tls = ssl.create_default_context()
    ca.configure_trust(client_tls)  # the one boundary faked: the trust store knows the test CA
    transport = GuardedTransport(LOCAL, proxies=job.proxies, verify=client_tls, dns_timeout=5.0)
    coll = Collection.open(root, "c", create=True)
    return asyncio.run(Harvest(coll, job, transport=transport).run()), coll


def _archived(coll) -> set[str]:
    with HarvestState(coll.db_path) as state:
        return {row["url"] for row in state.known_urls() if row["last_status"] == 200}


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_dead_proxy_rests_and_its_urls_go_through_the_live_one(root, servers, ca, scheme):
    origin = servers["plain" if scheme == "http" else "tls"]
    base = f"{scheme}://127.0.0.1:{origin.port}"
    dead = f"http://user:s3cret@127.0.0.1:{free_port()}"
    live = f"http://127.0.0.1:{servers['proxy'].port}"
    summary, coll = _harvest(root, base + "/", [dead, live], ca)
    assert summary["status"] == "finished" and summary["failure"] is None
    assert _archived(coll) == {base + path for path in PAGES}  # every URL archived
    assert sorted(origin.seen) == sorted(PAGES)  # each fetched once
    if scheme == "https":
        assert ("CONNECT", f"127.0.0.1:{origin.port}") in servers["proxy"].seen
    else:
        assert {path for _, path in servers["proxy"].seen} == {base + p for p in PAGES}
    dead_name = dead.replace("user:s3cret@", "")
    named = [e for e in summary["recent_errors"] if e["url"] == dead_name]
    assert named and "proxy unreachable" in named[0]["error"] and "out of rotation for 60 s" in named[0]["error"]
    assert len(named) == 1  # resting: tried once, not every second URL
    assert any(f"proxy {dead_name} failed 1 time(s)" in note for note in summary["notes"])
    assert "s3cret" not in repr(summary)


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_socks5_proxies_carry_both_schemes_and_a_dead_one_rests(root, servers, ca, scheme):
    origin = servers["plain" if scheme == "http" else "tls"]
    base = f"{scheme}://127.0.0.1:{origin.port}"
    dead = f"socks5://user:s3cret@127.0.0.1:{free_port()}"
    live = f"socks5://127.0.0.1:{servers['socks'].port}"
    summary, coll = _harvest(root, base + "/", [dead, live], ca)
    assert summary["status"] == "finished" and summary["failure"] is None
    assert _archived(coll) == {base + path for path in PAGES}
    assert sorted(origin.seen) == sorted(PAGES)
    assert ("127.0.0.1", origin.port) in servers["socks"].seen
    named = [e for e in summary["recent_errors"] if e["url"] == dead.replace("user:s3cret@", "")]
    assert len(named) == 1 and "proxy unreachable" in named[0]["error"]
    assert "s3cret" not in repr(summary)


def test_a_run_where_every_proxy_failed_fails_and_names_them(root, servers, ca):
    dead = [f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"]
    summary, _ = _harvest(root, f"http://127.0.0.1:{servers['plain'].port}/", dead, ca)
    assert summary["status"] == "failed" and summary["urls_fetched"] == 0
    assert summary["failure"].startswith("every proxy failed: ")
    assert all(name in summary["failure"] for name in dead)
    assert servers["plain"].seen == []


def test_https_through_an_http_proxy_verifies_the_origin_s_certificate(servers, ca):
    """CONNECT tunnels TLS end to end: a certificate nobody trusts fails, and the proxy stays in rotation."""

    async def get(url, verify):
        transport = GuardedTransport(LOCAL, proxies=[f"http://127.0.0.1:{servers['proxy'].port}"], verify=verify)
        async with httpx.AsyncClient(transport=transport, trust_env=False, timeout=10) as client:
            try:
                return await client.get(url)
            finally:
                assert transport.proxy_pool.resting() == []

    url = f"https://127.0.0.1:{servers['tls'].port}/a.html"
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        asyncio.run(get(url, True))
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    assert asyncio.run(get(url, trusted)).content == PAGES["/a.html"]


@pytest.mark.parametrize(
    "proxy, message",
    [
        ("socks4://127.0.0.1:1080", "SOCKS4 is not supported; write socks5://"),
        ("socks4a://u:pw@127.0.0.1:1080", "socks4a://127.0.0.1:1080: SOCKS4 is not supported"),
        ("https://u:pw@127.0.0.1:3128", "https://127.0.0.1:3128: only http:// and socks5:// proxies are supported"),
        ("ftp://127.0.0.1:21", "only http:// and socks5:// proxies are supported"),
    ],
)
def test_unsupported_proxies_are_refused_when_the_job_is_read(proxy, message):
    validate_job("j", {"seeds": ["http://example.org/"], "proxies": ["http://p:3128", "socks5://u:pw@p:1080"]})
    with pytest.raises(ConfigError, match="field 'proxies'") as exc:
        validate_job("j", {"seeds": ["http://example.org/"], "proxies": [proxy]})
    assert message in exc.value.message and "pw@" not in exc.value.message

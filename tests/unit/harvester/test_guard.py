"""The SSRF guard: numeric host spellings, IPv4-mapped IPv6, DNS answers and redirect hops.

Canary servers listen on loopback addresses the guard must not reach and count every connection
they accept; each test expects 0. The sample site on 127.0.0.1 plays the allowed host.
"""

from __future__ import annotations

import asyncio
import socket
import threading

import httpx
import pytest

from demo.site_server import Resource, SiteServer
from harvester.guard import BlockedAddress, GuardedTransport, GuardError, NetworkPolicy, check_url
from harvester.job import validate_job
from harvester.run import Harvest
from index.collection import Collection
from index.storage.state import HarvestState
from strata.errors import ConfigError


class Canary:
    """A TCP listener that only counts connections (and answers nothing useful)."""

    def __init__(self, host: str, port: int = 0):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.host, self.port = self.sock.getsockname()
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\ncanary")
            finally:
                conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def canaries():
    made = []

    def make(host: str, port: int = 0) -> Canary:
        canary = Canary(host, port)
        made.append(canary)
        return canary

    yield make
    for canary in made:
        canary.close()


LOCAL_ONLY = NetworkPolicy.from_strings(["127.0.0.1/32"])


async def _get(url: str, policy: NetworkPolicy, **kwargs) -> httpx.Response:
    async with httpx.AsyncClient(transport=GuardedTransport(policy, **kwargs), trust_env=False, timeout=5) as client:
        return await client.get(url)


# -- the policy -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "address, kind",
    [
        ("127.0.0.1", "loopback"),
        ("127.0.0.2", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("100.64.0.1", "non-global"),
        ("224.0.0.1", "multicast"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("2002:7f00:1::", "loopback"),
        ("64:ff9b::a9fe:a9fe", "link-local"),
        ("fe80::1%eth0", "link-local"),
    ],
)
def test_non_global_addresses_are_refused(address, kind):
    reason = NetworkPolicy().refusal(address)
    assert reason and kind in reason and "--allow-network" in reason


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "8.8.8.8"])
def test_global_addresses_pass(address):
    assert NetworkPolicy().refusal(address) is None


@pytest.mark.parametrize(
    "address, message",
    [
        # IPv4-compatible (::/96): Python calls these global; the stack reaches the IPv4 address inside
        ("::127.0.0.2", "::7f00:2 (that is 127.0.0.2) is a loopback address;"),
        ("::7f00:1", "::7f00:1 (that is 127.0.0.1) is a loopback address;"),
        ("::10.0.0.1", "::a00:1 (that is 10.0.0.1) is a private address;"),
        ("::169.254.169.254", "::a9fe:a9fe (that is 169.254.169.254) is a link-local address;"),
        ("::8.8.8.8", "::808:808 is a reserved address;"),  # deprecated form: refused anyway
        # IPv4-translated (SIIT, ::ffff:0:0/96)
        ("::ffff:0:7f00:1", "::ffff:0:7f00:1 (that is 127.0.0.1) is a loopback address;"),
        ("::ffff:0:808:808", "::ffff:0:808:808 is a reserved address;"),
        # reserved blocks
        ("240.0.0.1", "240.0.0.1 is a reserved address;"),
        ("255.255.255.255", "255.255.255.255 is a reserved address;"),
        ("100::1", "100::1 is a reserved address;"),
        ("400::1", "400::1 is a reserved address;"),
        # articles read right
        ("0.0.0.0", "0.0.0.0 is an unspecified address;"),
        ("::", ":: is an unspecified address;"),
        ("127.0.0.1", "127.0.0.1 is a loopback address;"),
        ("fe80::1", "fe80::1 is a link-local address;"),
        ("100.64.0.1", "100.64.0.1 is a non-global address;"),
    ],
)
def test_reserved_and_ipv4_compatible_forms_are_refused_in_plain_words(address, message):
    assert NetworkPolicy().refusal(address).startswith(message)


@pytest.mark.parametrize("address", ["::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"])
def test_mapped_nat64_and_6to4_forms_of_public_addresses_pass(address):
    assert NetworkPolicy().refusal(address) is None


def test_an_ipv4_compatible_url_never_connects(canaries):
    canary = canaries("127.0.0.2")
    with pytest.raises(BlockedAddress, match="127.0.0.2"):
        asyncio.run(_get(f"http://[::127.0.0.2]:{canary.port}/", NetworkPolicy()))
    assert canary.connections == 0


def test_allowed_ranges_cover_their_mapped_forms_only():
    policy = NetworkPolicy.from_strings(["127.0.0.1/32, 10.9.0.0/16"])
    assert policy.refusal("127.0.0.1") is None
    assert policy.refusal("::ffff:127.0.0.1") is None
    assert policy.refusal("10.9.200.1") is None
    assert policy.refusal("127.0.0.2") and policy.refusal("::ffff:127.0.0.2") and policy.refusal("10.8.0.1")
    with pytest.raises(ConfigError, match="not a network"):
        NetworkPolicy.from_strings(["localhost"])


def test_every_address_of_a_name_must_pass():
    with pytest.raises(GuardError, match="resolves to 10.0.0.5"):
        LOCAL_ONLY.pick("two.example", ["127.0.0.1", "10.0.0.5"])
    assert LOCAL_ONLY.pick("one.example", ["127.0.0.1"]) == "127.0.0.1"


def test_env_adds_allowed_ranges(monkeypatch):
    monkeypatch.setenv("STRATA_ALLOW_NETWORKS", "192.0.2.0/24")
    policy = NetworkPolicy.from_env(["127.0.0.1"])
    assert policy.refusal("127.0.0.1") is None and policy.refusal("192.0.2.7") is None


# -- requests through the transport, canaries counting ------------------------------------------------
def test_numeric_spellings_of_loopback_never_connect(canaries):
    canary = canaries("127.0.0.1")
    port = canary.port
    urls = [
        f"http://2130706433:{port}/",
        f"http://0x7f.0.0.1:{port}/",
        f"http://127.1:{port}/",
        f"http://0:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}/",
        f"http://[::ffff:7f00:1]:{port}/",
        f"http://0x7f000001:{port}/",
        f"http://localhost:{port}/",
        f"http://127.0.0.1:{port}/",
    ]
    for url in urls:
        with pytest.raises(BlockedAddress, match="SSRF guard"):
            asyncio.run(_get(url, NetworkPolicy()))
    assert canary.connections == 0


def test_allowing_one_address_does_not_open_its_neighbours(canaries, site):
    two, three = canaries("127.0.0.2"), canaries("127.0.0.3")
    urls = [
        f"http://2130706434:{two.port}/",
        f"http://0x7f.0.0.2:{two.port}/",
        f"http://127.2:{two.port}/",
        f"http://[::ffff:127.0.0.2]:{two.port}/",
        f"http://127.0.0.3:{three.port}/",
        f"http://0x7f000003:{three.port}/",
    ]
    for url in urls:
        with pytest.raises(BlockedAddress):
            asyncio.run(_get(url, LOCAL_ONLY))
    assert (two.connections, three.connections) == (0, 0)
    assert asyncio.run(_get(site.base_url + "/", LOCAL_ONLY)).status_code == 200


def test_the_connection_goes_to_the_checked_address(site):
    """A name resolved once, checked, and pinned: the request reaches that address with its Host header."""
    calls = []

    async def resolver(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"] if len(calls) == 1 else ["127.0.0.2"]  # a rebinding second answer

    response = asyncio.run(_get(f"http://pinned.example:{site.port}/about.html", LOCAL_ONLY, resolver=resolver))
    assert response.status_code == 200 and calls == ["pinned.example"]
    assert site.request_log[-1].header("Host") == f"pinned.example:{site.port}"


def test_slow_dns_and_bad_schemes_are_refused():
    async def never(host: str, port: int) -> list[str]:
        await asyncio.sleep(10)
        return []

    with pytest.raises(GuardError, match="could not be resolved"):
        asyncio.run(check_url("http://slow.example/", NetworkPolicy(), never, timeout=0.1))
    with pytest.raises(GuardError, match="only http and https"):
        asyncio.run(check_url("file:///etc/passwd", NetworkPolicy()))
    with pytest.raises(ConfigError, match="SOCKS4 is not supported"):
        GuardedTransport(NetworkPolicy(), proxies=["socks4://127.0.0.1:1"])


def test_a_proxy_address_is_checked_too(canaries):
    canary = canaries("127.0.0.2")
    with pytest.raises(BlockedAddress):
        asyncio.run(_get("http://127.0.0.1:9/", LOCAL_ONLY, proxies=[f"http://127.0.0.2:{canary.port}"]))
    assert canary.connections == 0


def test_a_socks5_proxy_address_is_checked_too(canaries):
    canary = canaries("127.0.0.2")
    with pytest.raises(BlockedAddress, match=r"socks5://127\.0\.0\.2:\d+ \(refused by the SSRF guard"):
        asyncio.run(_get("http://127.0.0.1:9/", LOCAL_ONLY, proxies=[f"socks5://127.0.0.2:{canary.port}"]))
    assert canary.connections == 0


# -- a whole harvest: a redirect from an allowed host to a forbidden one --------------------------------
class Redirects:
    def __init__(self, targets: dict[str, str]):
        self.targets = targets

    def resolve(self, version, path, headers):
        if path == "/robots.txt":
            return Resource(404, (("Content-Type", "text/plain"),), b"none")
        if path in self.targets:
            return Resource(302, (("Location", self.targets[path]), ("Content-Type", "text/html")), b"moved")
        links = "".join(f'<a href="{p}">{p}</a>' for p in self.targets)
        return Resource(200, (("Content-Type", "text/html"),), f"<html><body>{links}</body></html>".encode())


def test_a_redirect_to_a_forbidden_address_is_refused_on_that_hop(root, canaries):
    two, three = canaries("127.0.0.2"), canaries("127.0.0.3")
    model = Redirects(
        {
            "/a": f"http://127.0.0.2:{two.port}/secret",
            "/b": f"http://2130706435:{three.port}/",
            "/c": f"http://[::ffff:127.0.0.2]:{two.port}/",
        }
    )
    with SiteServer(model) as server:
        job = validate_job(
            "guarded",
            {"seeds": [server.base_url + "/"], "delay": 0.0, "scope": "any", "robots": "ignore", "timeout": 5.0},
        )
        coll = Collection.open(root, "guarded", create=True)
        transport = GuardedTransport(LOCAL_ONLY)
        summary = asyncio.run(Harvest(coll, job, transport=transport).run())
    assert summary["status"] == "finished"
    assert (two.connections, three.connections) == (0, 0)
    assert transport.refused == 3
    with HarvestState(coll.db_path) as state:
        captured = {c["url"]: c["status"] for c in state.captures()}
        errors = {c["url"]: c["reason"] for c in state.checks(summary["run_id"]) if c["outcome"] == "error"}
    assert captured[server.base_url + "/a"] == 302  # the allowed hop is archived as a redirect
    assert set(errors) == {
        f"http://127.0.0.2:{two.port}/secret",
        f"http://127.0.0.3:{three.port}/",
        f"http://[::ffff:7f00:2]:{two.port}/",
    }
    assert all("SSRF guard" in reason for reason in errors.values())

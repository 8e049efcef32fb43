"""SSRF guard: harvests started from the staff console reach only the public internet.

A URL string says little about where a request goes: ``http://2130706433/``, ``http://0x7f.0.0.1/``
and ``http://127.1/`` reach 127.0.0.1, ``http://0/`` reaches 0.0.0.0, ``[::ffff:127.0.0.1]`` is
loopback in IPv6 clothing, and a public name can resolve (or later re-resolve) to a private
address. So the guard works on addresses, not strings:

1. resolve the host (``getaddrinfo``, which parses every numeric spelling the way the socket
   layer will), with a deadline, since DNS ignores httpx's timeouts;
2. check **every** address: unwrap IPv4-mapped, IPv4-compatible, IPv4-translated, 6to4, Teredo
   and NAT64 IPv6 forms, then refuse anything not globally routable (loopback, private,
   link-local, shared, multicast, reserved, unspecified; the deprecated IPv4-compatible and
   -translated forms always) unless a network in the policy's allow list holds it;
3. connect to the address that was checked (the request URL is rewritten to it; the ``Host``
   header and TLS SNI keep the name), so a second DNS answer cannot change the destination.

``GuardedTransport`` does this for every request it sends. The harvester records each redirect
hop as its own fetch, so each hop passes through the guard again. Through a proxy, the proxy's
own address is checked and pinned, and the target is checked but resolved again by the proxy
(on the proxy's network, not ours).

The allow list is server configuration (``strata worker --allow-network``), never a job field:
whoever edits a job must not be able to widen it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable

import httpx

from harvester.netbackend import AsyncioTransport
from harvester.proxies import PROXY_REST, ProxyBackend, ProxyPool, is_proxy_down
from strata.errors import ConfigError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[list[str]]]

ENV_ALLOW = "STRATA_ALLOW_NETWORKS"
DEFAULT_PORTS = {"http": 80, "https": 443}
SOCKS_PORT = 1080
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Deprecated IPv4-compatible (RFC 4291 2.5.5.1) and SIIT IPv4-translated (RFC 2765) forms: Python
# calls ``::127.0.0.2`` and ``::ffff:0:7f00:1`` global, yet stacks that still route them reach
# the IPv4 address inside. They are unwrapped to say so, and refused even around a public address.
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")


class BlockedAddress(httpx.ConnectError):
    """A request the guard refused; the harvester records it as a fetch error."""


class GuardError(ValueError):
    """A URL refused before any request (console forms)."""


def _kind(ip: IPAddress) -> str:
    for attr, name in (
        ("is_unspecified", "unspecified"),
        ("is_loopback", "loopback"),
        ("is_link_local", "link-local"),
        ("is_multicast", "multicast"),
        ("is_reserved", "reserved"),
        ("is_private", "private"),
    ):
        if getattr(ip, attr):
            return name
    return "non-global"


def embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address stands for (mapped, 6to4, Teredo, NAT64)."""
    if ip.version != 6:
        return []
    out = []
    if ip.ipv4_mapped:
        out.append(ip.ipv4_mapped)
    if ip.sixtofour:
        out.append(ip.sixtofour)
    if ip.teredo:
        out.extend(ip.teredo)
    if ip in _NAT64 or ip in _IPV4_TRANSLATED or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return out


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


class NetworkPolicy:
    """Which addresses a guarded request may reach: global ones, plus the listed networks."""

    def __init__(self, allow: Iterable[IPNetwork] = ()):
        self.allow = tuple(allow)

    @classmethod
    def from_strings(cls, items: Iterable[str] | None) -> NetworkPolicy:
        networks = []
        for item in items or ():
            for part in str(item).replace(",", " ").split():
                try:
                    networks.append(ipaddress.ip_network(part, strict=False))
                except ValueError:
                    raise ConfigError(
                        f"{part!r} is not a network; write it as an address or CIDR range, "
                        "e.g. 127.0.0.1/32 or 10.1.0.0/16"
                    ) from None
        return cls(networks)

    @classmethod
    def from_env(cls, extra: Iterable[str] | None = None) -> NetworkPolicy:
        """``--allow-network`` values plus ``STRATA_ALLOW_NETWORKS`` (comma or space separated)."""
        return cls.from_strings([*(extra or ()), os.environ.get(ENV_ALLOW, "")])

    def describe(self) -> str:
        return ", ".join(str(n) for n in self.allow) or "none"

    def _allowed(self, ip: IPAddress) -> bool:
        return any(ip.version == net.version and ip in net for net in self.allow)

    def refusal(self, address: str | IPAddress) -> str | None:
        """Why ``address`` may not be reached, or None when it may."""
        try:
            ip = ipaddress.ip_address(str(address).split("%", 1)[0])
        except ValueError:
            return f"{address!r} is not an IP address"
        if self._allowed(ip):
            return None
        inner = embedded_ipv4(ip)
        if inner and all(self._allowed(v4) for v4 in inner):
            return None
        for candidate in (*inner, ip):  # the embedded IPv4 names the real destination
            if self._allowed(candidate):
                continue
            # is_global alone passes reserved blocks (Python calls ::127.0.0.2 global). IPv4-mapped
            # and NAT64 forms, in ::/8 too, are in real use and judged by the address they stand for.
            reserved = candidate.is_reserved and not (
                candidate == ip and ip.version == 6 and (ip.ipv4_mapped or ip in _NAT64)
            )
            if not candidate.is_global or candidate.is_multicast or reserved:
                shown = f"{ip} (that is {candidate})" if candidate != ip else str(ip)
                kind = _kind(candidate)
                return (
                    f"{shown} is {_article(kind)} {kind} address; the harvester reaches only public addresses "
                    f"unless the server allows the range (--allow-network; allowed now: {self.describe()})"
                )
        return None

    def pick(self, host: str, addresses: list[str]) -> str:
        """The address to connect to; every address the name has must be allowed."""
        if not addresses:
            raise GuardError(f"{host} has no address")
        for address in addresses:
            reason = self.refusal(address)
            if reason:
                raise GuardError(f"{host} resolves to {reason}" if host != address else reason)
        return addresses[0]


async def system_resolve(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for info in infos:
        address = str(info[4][0])  # an IP address (an int only for families not asked for here)
        if address not in seen:
            seen.append(address)
    return seen


def _host_and_port(url: httpx.URL) -> tuple[str, int]:
    host = url.raw_host.decode("ascii")
    port = url.port or DEFAULT_PORTS.get(url.scheme, 80)
    return host, port


async def check_url(
    url: str | httpx.URL, policy: NetworkPolicy, resolver: Resolver = system_resolve, timeout: float = 10.0
) -> str:
    """Resolve ``url``'s host and check it; the address to connect to, or ``GuardError``."""
    try:
        parsed = httpx.URL(str(url))
    except httpx.InvalidURL as exc:
        raise GuardError(f"{url!r} is not a usable URL ({exc})") from None
    if parsed.scheme not in DEFAULT_PORTS:
        raise GuardError(f"{url!r}: only http and https URLs are fetched")
    host, port = _host_and_port(parsed)
    if not host:
        raise GuardError(f"{url!r} has no host")
    try:
        addresses = await asyncio.wait_for(resolver(host, port), timeout)
    except (OSError, TimeoutError, UnicodeError) as exc:
        raise GuardError(f"{host} could not be resolved ({exc or 'timed out'})") from None
    return policy.pick(host, addresses)


def check_url_sync(url: str, policy: NetworkPolicy, resolver: Resolver = system_resolve, timeout: float = 10.0) -> str:
    """``check_url`` for synchronous callers (the console's form validation)."""
    return asyncio.run(check_url(url, policy, resolver, timeout))


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that checks and pins the destination of every request it sends.

    ``proxies`` (http:// URLs, https ones going through with ``CONNECT``, or socks5://) are rotated per request
    by a ``harvester.proxies.ProxyPool``: one that cannot be reached rests for ``proxy_rest``
    seconds and the request is retried through the next. Each proxy's address is checked and
    pinned on first use. Idle connections are pooled per destination name, so a TLS connection made for
    one name is never reused for another name that resolves to the same address.
    """

    def __init__(
        self,
        policy: NetworkPolicy,
        *,
        resolver: Resolver = system_resolve,
        dns_timeout: float = 10.0,
        proxies: Iterable[str] = (),
        limits: httpx.Limits | None = None,
        verify: bool | ssl.SSLContext = True,
        proxy_rest: float = PROXY_REST,
    ):
        self.policy = policy
        self.resolver = resolver
        self.dns_timeout = dns_timeout
        self.limits = limits or httpx.Limits(max_connections=64, max_keepalive_connections=16)
        self.verify = verify
        self.proxies = [str(p) for p in proxies]
        #: Rotation, rests and failure events of the proxies (None without proxies).
        self.proxy_pool = ProxyPool(self.proxies, rest=proxy_rest) if self.proxies else None
        self._direct: dict[tuple[str, str, int], httpx.AsyncHTTPTransport] = {}
        self._proxied: dict[int, httpx.AsyncHTTPTransport] = {}
        self.refused = 0

    async def _check(self, url: httpx.URL, request: httpx.Request) -> str:
        try:
            return await check_url(url, self.policy, self.resolver, self.dns_timeout)
        except GuardError as exc:
            self.refused += 1
            raise BlockedAddress(f"refused by the SSRF guard: {exc}", request=request) from None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {url.scheme!r}", request=request)
        address = await self._check(url, request)
        if self.proxy_pool is not None:
            return await self._through_proxies(request)
        host, port = _host_and_port(url)
        extensions = dict(request.extensions)
        if url.scheme == "https":
            extensions.setdefault("sni_hostname", host)
        pinned = httpx.Request(
            request.method,
            url.copy_with(host=address),
            headers=request.headers,
            stream=request.stream,
            extensions=extensions,
        )
        key = (url.scheme, host, port)
        transport = self._direct.get(key)
        if transport is None:
            transport = self._direct[key] = AsyncioTransport(
                verify=self.verify, trust_env=False, limits=self.limits, retries=0
            )
        return await transport.handle_async_request(pinned)

    async def _through_proxies(self, request: httpx.Request) -> httpx.Response:
        """Send through the next proxy in rotation, then through the others while they fail."""
        pool = self.proxy_pool
        assert pool is not None  # only called when the job has proxies
        tried: list[str] = []
        refused_only = True
        for index in pool.order():
            name = pool.names[index]
            try:
                transport = await self._proxy_transport(index, request)
            except BlockedAddress as exc:  # the guard refuses the proxy's own address
                pool.down(index, str(exc))
                tried.append(f"{name} ({exc})")
                continue
            refused_only = False
            try:
                return await transport.handle_async_request(request)
            except httpx.ProxyError as exc:  # CONNECT refused: maybe the origin; this request only
                reason = str(exc) or type(exc).__name__
                pool.passed_over(index, reason)
                tried.append(f"{name} ({reason})")
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if not is_proxy_down(exc):
                    raise  # e.g. TLS with the origin through the tunnel
                reason = str(exc) or type(exc).__name__
                pool.down(index, reason)
                tried.append(f"{name} ({reason})")
        message = pool.none_left(tried)
        if tried and refused_only:
            raise BlockedAddress(message, request=request)
        raise httpx.ProxyError(message, request=request)

    async def _proxy_transport(self, index: int, request: httpx.Request) -> httpx.AsyncHTTPTransport:
        transport = self._proxied.get(index)
        if transport is None:
            proxy_url = httpx.URL(self.proxies[index])
            # the proxy's own address, checked as the guard checks any: a socks5:// URL as http://
            as_http = (
                proxy_url
                if proxy_url.scheme == "http"
                else proxy_url.copy_with(scheme="http", port=proxy_url.port or SOCKS_PORT)
            )
            address = await self._check(as_http, request)
            transport = self._proxied[index] = AsyncioTransport(
                proxy=httpx.Proxy(as_http.copy_with(scheme=proxy_url.scheme, host=address)),
                verify=self.verify,
                trust_env=False,
                limits=self.limits,
                retries=0,
                network_backend=ProxyBackend(),
            )
        return transport

    async def aclose(self) -> None:
        for transport in [*self._direct.values(), *self._proxied.values()]:
            await transport.aclose()
        self._direct.clear()
        self._proxied.clear()

"""A job's proxy pool: rotation per request, a rest for a proxy that fails, failures that name it.

Proxies are ``http://`` (http URLs forwarded, https ones tunnelled with ``CONNECT``) or
``socks5://`` (both tunnelled; httpcore's SOCKS5 client needs ``socksio``, a dependency for that).

``ProxyPool`` hands each request the proxies to try, in order: the next one in rotation first,
then the others, leaving out any that is resting. A proxy that cannot be reached (its connection
refused or timed out, or the network guard refusing its address) rests for ``rest`` seconds
(60 by default) and the request goes on through the next one, so a dead proxy in a pool of two
no longer fails every second URL. A proxy that answers a ``CONNECT`` with an error is passed
over for that request only: the origin behind it may be what failed, and the same origin would
fail through every proxy. When no proxy is left, the request fails with every proxy's reason.

Every failure is kept as an event (``take_events``) for the harvest to list among the run's
errors; ``exhausted`` says that some request found no proxy at all (such a run fails). Proxies
are named without their credentials everywhere (``proxy_name``).

``ProxyBackend`` is the network backend of a proxy's connection pool: every TCP connection such a
pool opens goes to the proxy, so a connection failure there is the proxy's (``ProxyUnreachable``
in the ``__cause__`` of httpx's ``ConnectError``), unlike a TLS failure with the origin through a
tunnel, which leaves the proxy in rotation.
"""

from __future__ import annotations

import time
import typing
from collections.abc import Callable, Iterable

import httpcore
import httpx

from harvester.netbackend import AsyncioBackend
from strata.errors import ConfigError

__all__ = ["PROXY_REST", "ProxyBackend", "ProxyPool", "ProxyUnreachable", "check_proxy_url", "proxy_name"]

#: Seconds a proxy that could not be reached stays out of rotation.
PROXY_REST = 60.0
#: http:// proxies forward http URLs and tunnel https ones (CONNECT); socks5:// ones tunnel both
#: (httpcore's SOCKS5 client over socksio, the package httpx's ``socks`` extra installs).
SUPPORTED_SCHEMES = ("http", "socks5", "socks5h")


def proxy_name(url: str | httpx.URL) -> str:
    """``scheme://host:port`` of a proxy URL: never its user name or password."""
    try:
        parsed = httpx.URL(str(url))
    except (httpx.InvalidURL, TypeError):
        return "an unparsable proxy URL"
    host = parsed.host
    host = f"[{host}]" if ":" in host else host
    return f"{parsed.scheme}://{host}" + (f":{parsed.port}" if parsed.port else "")


def check_proxy_url(value: str) -> str:
    """A proxy URL a job may hold; ValueError saying what to write instead."""
    try:
        parsed = httpx.URL(value)
    except (httpx.InvalidURL, TypeError):
        raise ValueError(f"{proxy_name(value)} is not a URL; write it as http://host:port") from None
    if parsed.scheme in ("socks4", "socks4a"):
        raise ValueError(
            f"{proxy_name(value)}: SOCKS4 is not supported; write socks5:// (SOCKS5) or use an http:// proxy"
        )
    if parsed.scheme not in SUPPORTED_SCHEMES:
        raise ValueError(
            f"{proxy_name(value)}: only http:// and socks5:// proxies are supported (https URLs go "
            "through an http:// proxy with CONNECT)"
        )
    if not parsed.host:
        raise ValueError(f"{value!r} has no host; write it as http://host:port")
    return value


class ProxyUnreachable(httpcore.ConnectError):
    """No TCP connection to the proxy itself."""


class ProxyConnectTimeout(ProxyUnreachable, httpcore.ConnectTimeout):
    """No TCP connection to the proxy within the connect timeout."""


class ProxyBackend(AsyncioBackend):
    """``AsyncioBackend`` whose connection failures say that the proxy is what failed."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            return await super().connect_tcp(host, port, timeout, local_address, socket_options)
        except httpcore.ConnectTimeout as exc:
            raise ProxyConnectTimeout(str(exc)) from exc
        except httpcore.ConnectError as exc:
            raise ProxyUnreachable(str(exc)) from exc


def is_proxy_down(exc: BaseException) -> bool:
    """Whether an httpx error from a proxied request means the proxy could not be reached."""
    return isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout) and isinstance(exc.__cause__, ProxyUnreachable)


class ProxyPool:
    def __init__(self, urls: Iterable[str], rest: float = PROXY_REST, clock: Callable[[], float] = time.monotonic):
        self.urls = [str(u) for u in urls]
        for url in self.urls:
            try:
                check_proxy_url(url)
            except ValueError as exc:
                raise ConfigError(f"field 'proxies': {exc}") from None
        self.names = [proxy_name(u) for u in self.urls]
        self.rest = rest
        self._clock = clock
        self._next = 0
        self._resting_until = [0.0] * len(self.urls)
        self._events: list[tuple[str, str]] = []
        self.exhausted: str | None = None  # the first "every proxy failed" message, if any

    def __len__(self) -> int:
        return len(self.urls)

    def order(self) -> list[int]:
        """The proxies one request may try, the next in rotation first; resting ones left out."""
        count = len(self.urls)
        start = self._next
        self._next = (start + 1) % count
        now = self._clock()
        return [i for i in ((start + k) % count for k in range(count)) if self._resting_until[i] <= now]

    def down(self, index: int, reason: str) -> None:
        """Proxy ``index`` could not be reached: out of rotation for ``rest`` seconds."""
        self._resting_until[index] = self._clock() + self.rest
        self._events.append(
            (
                self.names[index],
                f"proxy unreachable ({reason}); out of rotation for "
                f"{self.rest:g} s, its requests go through the others",
            )
        )

    def passed_over(self, index: int, reason: str) -> None:
        self._events.append((self.names[index], f"proxy failed a request ({reason}); tried the next proxy"))

    def resting(self) -> list[str]:
        now = self._clock()
        return [name for name, until in zip(self.names, self._resting_until, strict=True) if until > now]

    def none_left(self, tried: list[str]) -> str:
        """The message for a request no proxy could carry (and the pool's ``exhausted``)."""
        parts = list(tried) + [
            f"{name} (resting after a failure)"
            for name in self.resting()
            if not any(t.startswith(name + " ") for t in tried)
        ]
        message = "every proxy failed: " + "; ".join(parts)
        self.exhausted = self.exhausted or message
        return message

    def take_events(self) -> list[tuple[str, str]]:
        events, self._events = self._events, []
        return events

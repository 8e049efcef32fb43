"""One HTTP fetch, recorded as received.

The body is read from ``response.stream`` (what ``aiter_raw()`` iterates): de-chunked but still
content-encoded, exactly the bytes a WARC ``response`` payload must hold (and what
``WARC-Payload-Digest`` covers). Since the stored body is no longer chunked, ``Transfer-Encoding`` is
dropped from the stored headers. Every fetch has an overall deadline (a read timeout alone does not
bound a slow trickle) and a size cap; redirects are not followed here: each hop is its own capture.

Not through ``aiter_raw()``, because that closes the response as soon as the body ends, which hands
the connection back to the pool: bytes the server sent past the message must be looked for before
that (``harvester.surplus``). When there are any, the connection is closed, never reused, and
``FetchResult.surplus`` says how many had arrived (the record is flagged).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import http.cookiejar
import tempfile
import time
import typing
from collections.abc import Awaitable, Callable

import httpx

from harvester.fetchresult import FetchResult
from harvester.netbackend import AsyncioTransport
from harvester.surplus import bytes_past_message, close_connection

SPOOL_IN_MEMORY = 2 * 1024 * 1024
DROPPED_RESPONSE_HEADERS = {b"transfer-encoding"}
FETCH_FAILURES = (TimeoutError, httpx.HTTPError, OSError, ValueError)  # a fetch records these, raises none


def make_client(
    concurrency: int,
    connect_timeout: float,
    timeout: float,
    user_agent: str,
    proxy: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """The harvest's client. Without a ``transport`` of the caller's, connections (direct or through
    ``proxy``) run on ``AsyncioTransport``: httpcore on plain asyncio, without anyio's per-read cost."""
    limits = httpx.Limits(max_connections=max(concurrency, 1), max_keepalive_connections=max(concurrency, 1))
    if transport is None:
        transport = AsyncioTransport(trust_env=False, limits=limits, proxy=proxy)
        proxy = None  # the transport goes through it; given to the client too, httpx would mount its own
    return httpx.AsyncClient(
        follow_redirects=False,
        trust_env=False,  # proxy variables must not redirect the harvest
        timeout=httpx.Timeout(timeout, connect=connect_timeout),
        limits=limits,
        headers={"User-Agent": user_agent},
        proxy=proxy,
        transport=transport,
    )


def describe_error(exc: BaseException) -> str:
    """The words a failed fetch's ``error`` says, for httpx's exceptions and the others a fetch meets."""
    if isinstance(exc, httpx.ConnectTimeout):
        return "connect timeout"
    if isinstance(exc, httpx.ConnectError):
        text = str(exc) or "connection failed"
        if "Name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
            return f"DNS lookup failed ({text})"
        return f"connection failed ({text})"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ProxyError):
        return str(exc) or "proxy failed"  # harvester.guard's message names every proxy tried
    if isinstance(exc, httpx.UnsupportedProtocol):
        return "unsupported URL scheme"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"server broke the HTTP protocol ({exc})"
    if isinstance(exc, httpx.HTTPError):
        return f"{type(exc).__name__}: {exc}"
    return f"{type(exc).__name__}: {exc}"


async def _send(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    """``client.send(request, stream=True)`` for the harvester's client (no auth, no redirects, no
    event hooks): the layers for those cost about 9% of a fetch process's CPU, and the cookie jar's
    extraction, which httpx runs on every response, another 6%; it now runs only when the response
    sets a cookie. The client's transport (or proxy mount) still sends the request."""
    response = await client._transport_for_url(request.url).handle_async_request(request)
    response.request = request
    if "set-cookie" in response.headers:
        client.cookies.extract_cookies(response)
        drop_unsendable_cookies(client.cookies.jar)
    return response


def drop_unsendable_cookies(jar: http.cookiejar.CookieJar) -> None:
    """Drop cookies whose name or value is not ASCII. httpx writes the Cookie header of every later
    request to their host as ASCII and raises ``UnicodeEncodeError`` instead: one such Set-Cookie
    would fail the rest of the run on that host. A browser would send the bytes back, but httpx
    keeps only their decoded text, so no faithful copy is possible; the Set-Cookie header itself is
    archived (its bytes beyond ASCII %-encoded, as ``harvester.records`` writes every header). Runs
    only on responses that set cookies."""
    for cookie in list(jar):
        if not (cookie.name.isascii() and (cookie.value is None or cookie.value.isascii())):
            jar.clear(cookie.domain, cookie.path, cookie.name)


def _peer_address(response: httpx.Response) -> str | None:
    """The IP address of the socket the response came over (httpcore's ``network_stream``)."""
    stream = response.extensions.get("network_stream")
    peer = stream.get_extra_info("server_addr") if stream is not None else None
    return peer[0] if isinstance(peer, tuple) and peer else None


def _when_written(sent: Callable[[], None]) -> Callable[[str, dict], Awaitable[None]]:
    """httpcore's ``trace`` extension, calling ``sent`` as the request's head is about to be
    written to its connection (after any connect, TLS handshake or proxy tunnel)."""

    async def trace(event: str, info: dict) -> None:
        if event.endswith("send_request_headers.started"):
            sent()

    return trace


async def fetch(
    client: httpx.AsyncClient,
    url: str,
    headers: dict[str, str] | None = None,
    deadline: float = 60.0,
    max_size: int = 100 * 10**6,
    sent: Callable[[], None] | None = None,
) -> FetchResult:
    """GET ``url``; never raises for network trouble (``result.error`` says what happened).
    ``sent``: called the moment the request is written (``harvester.hostgate``), where the client's
    transport says so (httpcore's, and so the in-process client's)."""
    result = FetchResult(url=url)
    started = time.monotonic()
    digester = hashlib.sha1()
    body = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)
    try:
        request = client.build_request("GET", url, headers=headers or {})
        if sent is not None:
            request.extensions["trace"] = _when_written(sent)
        record_request(result, request.url.raw_path, request.headers.raw)
        async with asyncio.timeout(deadline):
            response = await _send(client, request)
            try:
                result.ip = _peer_address(response)
                # httpx decodes the reason as ASCII and drops other bytes; keep them (as Latin-1, like headers)
                raw_reason = response.extensions.get("reason_phrase")
                record_head(
                    result,
                    response.status_code,
                    raw_reason.decode("latin-1") if isinstance(raw_reason, bytes) else response.reason_phrase or "",
                    response.http_version or "HTTP/1.1",
                    response.headers.raw,
                )
                stream = typing.cast(httpx.AsyncByteStream, response.stream)  # an async transport's
                if await read_body(result, stream, max_size, body, digester):
                    result.surplus = bytes_past_message(response)
                    if result.surplus:
                        await close_connection(response)  # never read as the next URL's response
            finally:
                await response.aclose()
    except FETCH_FAILURES as exc:
        record_failure(result, exc, deadline)
    return finish(result, started, body, digester)


def record_failure(result: FetchResult, exc: BaseException, deadline: float) -> None:
    """What a fetch that raised one of ``FETCH_FAILURES`` records: past its deadline, what had
    arrived is kept (cut short); any other failure leaves an error and no status."""
    if isinstance(exc, TimeoutError):
        if result.status is None:
            result.error = f"no response within the {deadline:g} s deadline"
        else:
            result.truncated = "time"
        return
    result.error = describe_error(exc)
    result.status = None


def record_request(result: FetchResult, target: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """The request line and headers sent, as the WARC request record holds them."""
    result.request_line = f"GET {target.decode('ascii', 'replace') or '/'} HTTP/1.1"  # h11 speaks 1.1 only
    result.request_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]


def record_head(
    result: FetchResult, status: int, reason: str, http_version: str, raw: list[tuple[bytes, bytes]]
) -> None:
    """The status line and headers received (less ``Transfer-Encoding``), and their size on the wire."""
    result.status = status
    result.reason = reason
    result.http_version = http_version
    result.headers = [
        (k.decode("latin-1"), v.decode("latin-1")) for k, v in raw if k.lower() not in DROPPED_RESPONSE_HEADERS
    ]
    result.wire_bytes = len(http_version) + 6 + len(reason) + sum(len(k) + len(v) + 4 for k, v in raw) + 2


async def read_body(
    result: FetchResult, chunks: typing.AsyncIterable[bytes], max_size: int, body: typing.IO[bytes], digester
) -> bool:
    """Store and digest the body up to ``max_size``; whether it was read to its end (then, and only
    then, bytes past it may be counted). A disconnect after some of it keeps what arrived."""
    try:
        async for chunk in chunks:
            result.wire_bytes += len(chunk)
            room = max_size - result.body_length
            if len(chunk) > room:
                chunk = chunk[:room]
                result.truncated = "length"
            body.write(chunk)
            digester.update(chunk)
            result.body_length += len(chunk)
            if result.truncated:
                return False
    except httpx.HTTPError:
        if result.body_length == 0:
            raise
        result.truncated = "disconnect"  # keep what arrived; WARC-Truncated says why
        return False
    return True


def finish(result: FetchResult, started: float, body: typing.IO[bytes], digester) -> FetchResult:
    result.elapsed = time.monotonic() - started
    if result.error:
        body.close()
        return result
    result.body = body
    result.digest = "sha1:" + base64.b32encode(digester.digest()).decode("ascii")
    return result

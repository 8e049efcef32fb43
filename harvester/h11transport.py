"""The fetch process's HTTP/1.1 transport: h11 over ``harvester.netbackend``'s asyncio streams.

Why: in the fetch process httpcore's pool and connection layers (locks through anyio and sniffio,
pool bookkeeping, tracing) cost more than the HTTP itself. Fetching 3,000 304s over 4 keep-alive
connections took 700 us of CPU a request through httpx and httpcore, 500 us through httpcore alone
and 140 us through h11 on asyncio streams; a 304 cost the fetch process as much as a page. This is
that last one, behind httpx's transport interface, so ``harvester.fetch`` (request building,
cookies, the error words of ``describe_error``) is unchanged.

What it keeps of httpcore's behaviour, so that captures are the same bytes:

- one h11 state machine a connection (events up to 100 KiB, as httpcore allows), the request's
  headers sent as httpx built them, 1xx answers skipped, the body handed over as h11 decodes it
  (chunked framing removed, content-encoding kept);
- a connection goes back to the pool only when both sides are done with the message; one that is
  idle longer than 5 s (httpx's keep-alive expiry) or readable while idle (the server closed it or
  sent bytes nobody asked for) is dropped before reuse; at most ``max_connections`` are open;
- TLS with certifi's CA bundle (httpx's default context, made at the first https connection), ALPN
  ``http/1.1``, the URL's host as server name;
- errors as httpx's: ``ConnectError``/``ConnectTimeout`` opening, ``WriteError`` ignored while
  sending (the server may have answered and closed), ``ReadTimeout``/``ReadError`` and h11's
  protocol errors as ``RemoteProtocolError`` reading, "Server disconnected without sending a
  response." when it closed first;
- ``harvester.surplus`` reaches the connection's h11 state through ``response.stream.h11_state``.

Used only by the fetch process, whose client needs no proxy, guard or login (``harvester.fetcher``
keeps httpx's own transport for those and for fetching in-process).
"""

from __future__ import annotations

import ssl
import time
import typing

import h11
import httpcore
import httpx

from harvester.netbackend import AsyncioBackend, AsyncioStream

MAX_EVENT_BYTES = 100 * 1024  # httpcore's MAX_INCOMPLETE_EVENT_SIZE: a header block up to this
READ_BYTES = 64 * 1024  # httpcore's READ_NUM_BYTES
KEEPALIVE_EXPIRY = 5.0  # httpx.Limits' default
DEFAULT_PORTS = {b"http": 80, b"https": 443}

_ERRORS: dict[type[Exception], type[httpx.TransportError]] = {
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
}

Origin = tuple[bytes, bytes, int]


def origin_of(url: httpx.URL) -> Origin:
    """(scheme, host, port) of an http or https URL; httpx's error for any other scheme."""
    if url.raw_scheme not in DEFAULT_PORTS:
        raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{url.scheme}://'.")
    return (url.raw_scheme, url.raw_host, url.port or DEFAULT_PORTS[url.raw_scheme])


def _as_httpx(exc: Exception) -> Exception:
    """httpx's exception for a netbackend (httpcore) or h11 one; others unchanged."""
    if isinstance(exc, h11.RemoteProtocolError):
        return httpx.RemoteProtocolError(str(exc))
    if isinstance(exc, h11.LocalProtocolError):
        return httpx.LocalProtocolError(str(exc))
    for source, target in _ERRORS.items():
        if isinstance(exc, source):
            return target(str(exc))
    return exc


class Connection:
    def __init__(self, origin: Origin, stream: AsyncioStream):
        self.origin = origin
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_EVENT_BYTES)
        self.idle_since = 0.0
        self.closed = False

    def reusable(self) -> bool:
        return (
            not self.closed
            and time.monotonic() - self.idle_since <= KEEPALIVE_EXPIRY
            and not self.stream.get_extra_info("is_readable")
        )

    async def send(
        self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: list[bytes], timeout: float | None
    ) -> None:
        data = self.h11.send(h11.Request(method=method, target=target, headers=headers))
        for chunk in body:
            if chunk:
                data += self.h11.send(h11.Data(data=chunk)) or b""
        data += self.h11.send(h11.EndOfMessage()) or b""
        try:
            await self.stream.write(data, timeout)
        except httpcore.WriteError:
            pass  # as httpcore: read what the server said before it closed

    async def next_event(self, timeout: float | None) -> typing.Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await self.stream.read(READ_BYTES, timeout)
            if data == b"" and self.h11.their_state == h11.SEND_RESPONSE:
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
            self.h11.receive_data(data)

    async def close(self) -> None:
        self.closed = True
        await self.stream.aclose()


class ResponseBody(httpx.AsyncByteStream):
    """A response's body as h11 decodes it; closing hands the connection back or closes it."""

    def __init__(self, pool: H11Transport, connection: Connection, timeout: float | None):
        self._pool = pool
        self._connection = connection
        self._timeout = timeout
        self._done = False
        self.h11_state = connection.h11  # for harvester.surplus

    async def __aiter__(self) -> typing.AsyncIterator[bytes]:
        connection = self._connection
        try:
            while not self._done:
                event = await connection.next_event(self._timeout)
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif event is h11.PAUSED or isinstance(event, h11.EndOfMessage):
                    self._done = True
        except (httpcore.NetworkError, httpcore.TimeoutException, h11.ProtocolError) as exc:
            await self.aclose()
            raise _as_httpx(exc) from exc

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None  # type: ignore[assignment]
        if connection is not None:
            await self._pool.release(connection)


class H11Transport(httpx.AsyncBaseTransport):
    def __init__(
        self, max_connections: int, ssl_context: ssl.SSLContext | None = None, backend: AsyncioBackend | None = None
    ):
        """``ssl_context``: httpx's default (certifi's CA bundle) unless given, made when first needed."""
        self.max_connections = max(max_connections, 1)
        self._backend = backend or AsyncioBackend()
        self._idle: list[Connection] = []  # oldest first
        self._active = 0
        self._ssl = ssl_context

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        timeouts = request.extensions.get("timeout", {})
        server_name = request.extensions.get("sni_hostname") or url.raw_host.decode("ascii")
        origin = origin_of(url)
        body = [chunk async for chunk in typing.cast(typing.AsyncIterable[bytes], request.stream)]
        connection = await self.checkout(origin, server_name, timeouts.get("connect"))
        trace = request.extensions.get("trace")  # httpcore's extension: the request's head is written now
        if trace is not None:
            await trace("http11.send_request_headers.started", {"request": request})
        event = await self.exchange(
            connection, request.method.encode("ascii"), url.raw_path, request.headers.raw, body, timeouts
        )
        return httpx.Response(
            status_code=event.status_code,
            headers=event.headers.raw_items(),
            stream=ResponseBody(self, connection, timeouts.get("read")),
            extensions={
                "http_version": b"HTTP/" + event.http_version,
                "reason_phrase": event.reason,
                "network_stream": connection.stream,
            },
        )

    async def exchange(
        self,
        connection: Connection,
        method: bytes,
        target: bytes,
        headers: list[tuple[bytes, bytes]],
        body: list[bytes],
        timeouts: dict,
    ) -> h11.Response:
        """Send a request on ``connection`` and read its response's head (1xx answers skipped). On
        any failure the connection is released (and so closed) and the error raised as httpx's."""
        try:
            await connection.send(method, target, headers, body, timeouts.get("write"))
            event = await connection.next_event(timeouts.get("read"))
            while isinstance(event, h11.InformationalResponse) and event.status_code != 101:
                event = await connection.next_event(timeouts.get("read"))
        except BaseException as exc:
            await self.release(connection)
            if isinstance(exc, (httpcore.NetworkError, httpcore.TimeoutException, h11.ProtocolError)):
                raise _as_httpx(exc) from exc
            raise
        return event

    async def checkout(self, origin: Origin, server_name: str, timeout: float | None) -> Connection:
        """An idle connection to ``origin`` that is still good, else a new one (``server_name``: TLS's)."""
        for connection in list(self._idle):
            if connection.origin != origin:
                continue
            self._idle.remove(connection)
            if connection.reusable():
                self._active += 1
                return connection
            await connection.close()
        while self._idle and self._active + len(self._idle) >= self.max_connections:
            await self._idle.pop(0).close()  # room for the new one: the oldest idle goes
        self._active += 1
        try:
            return Connection(origin, await self._connect(origin, server_name, timeout))
        except BaseException:
            self._active -= 1
            raise

    async def _connect(self, origin: Origin, server_name: str, timeout: float | None) -> AsyncioStream:
        scheme, host, port = origin
        try:
            stream = await self._backend.connect_tcp(host.decode("ascii"), port, timeout=timeout)
            if scheme == b"https":
                stream = await stream.start_tls(self._ssl_context(), server_hostname=server_name, timeout=timeout)
        except (httpcore.NetworkError, httpcore.TimeoutException) as exc:
            raise _as_httpx(exc) from exc
        return typing.cast(AsyncioStream, stream)

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context(trust_env=False)
        self._ssl.set_alpn_protocols(["http/1.1"])  # as httpcore, on every connection
        return self._ssl

    async def release(self, connection: Connection) -> None:
        """A connection whose exchange is over: back to the pool if both sides are done with the
        message and nobody closed it, else closed."""
        self._active -= 1
        state = connection.h11
        if connection.stream.closed:  # harvester.surplus closed it under the response
            connection.closed = True
        if not connection.closed and state.our_state is h11.DONE and state.their_state is h11.DONE:
            state.start_next_cycle()
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            await connection.close()

    def open_connections(self) -> int:
        """Connections open now: in use, and idle in the pool."""
        return self._active + len(self._idle)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.close()

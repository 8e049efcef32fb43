"""An asyncio-native network backend for httpcore, and the httpx transport that uses it.

Why: the harvester is one CPU-bound asyncio event loop, and httpcore's default backend on asyncio
(``AnyIOBackend``) wraps every socket read and write in an anyio ``fail_after`` CancelScope and asks
``sniffio`` which event loop is running. On crawl 2 of issue 2's benchmark (mostly 304 answers,
about 4,000 requests over 4 keep-alive connections) a py-spy profile put about 13% of all CPU time
in that anyio + sniffio layer. This backend talks to asyncio directly:

- a connection is an ``asyncio.Protocol`` over the loop's own socket transport (TCP_NODELAY on),
  which buffers what arrives; ``read`` returns buffered bytes at once, with no timer, and only
  when it must wait does it arm a deadline (``asyncio.timeout``). ``write`` hands the bytes to the
  transport and waits (with a deadline) only when the transport's buffer is over its high-water
  mark;
- TLS is ``loop.start_tls`` with the ``SSLContext`` and server name httpcore gives (TLS through
  a TLS proxy works as well: asyncio can start TLS over a TLS transport);
- errors map to httpcore's exceptions exactly as ``httpcore._backends.anyio`` maps them: a timeout
  is ``ConnectTimeout`` / ``ReadTimeout`` / ``WriteTimeout``, a socket or TLS failure is
  ``ConnectError`` / ``ReadError`` / ``WriteError`` (httpx turns these into its own, which
  ``harvester.fetch.describe_error`` words). A refused connection reads "[Errno 111] Connect call
  failed (...)" where anyio said "All connection attempts failed".

How it is plugged in: ``httpcore.AsyncConnectionPool`` (and its proxy subclasses ``AsyncHTTPProxy``
and ``AsyncSOCKSProxy``) take ``network_backend=``, but ``httpx.AsyncHTTPTransport`` does not pass
one through. ``AsyncioTransport`` subclasses it, lets httpx's own ``__init__`` build the pool from
every option (verify, limits, proxy of any scheme, socket options, ...), then points that pool at
this backend. Two private names are involved: httpx's ``_pool`` and httpcore's
``_network_backend``, which every pool class reads each time it opens a connection. That is one
assignment, checked at construction (a changed httpcore raises ``TypeError`` at once rather than
silently falling back to anyio; tests/test_netbackend.py also checks which stream a response came
over). Rebuilding the pool instead would copy httpx's option handling (SSL context, the three
proxy kinds), which drifts without a sound whenever httpx changes it.
"""

from __future__ import annotations

import asyncio
import collections
import collections.abc
import ipaddress
import select
import socket
import ssl
import typing

import aiohappyeyeballs
import httpcore
import httpx
from aiohappyeyeballs import AddrInfoType
from httpcore import (
    ConnectError,
    ConnectTimeout,
    ReadError,
    ReadTimeout,
    WriteError,
    WriteTimeout,
)

SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]

HAPPY_EYEBALLS_DELAY = 0.25  # RFC 8305's connection attempt delay, what anyio.connect_tcp uses
READ_HIGH_WATER = 1024 * 1024  # stop reading the socket while this much is buffered and unread
READ_LOW_WATER = 256 * 1024


class _ConnectionProtocol(asyncio.Protocol):
    """Buffers what the transport delivers and wakes the one reader or writer waiting on it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: collections.deque[bytes] = collections.deque()
        self.buffered = 0
        self.eof = False
        self.lost = False
        self.error: BaseException | None = None
        self.reading_paused = False
        self.writing_paused = False
        self._waiter: asyncio.Future[None] | None = None  # a read waiting for data
        self._drainer: asyncio.Future[None] | None = None  # a write waiting for buffer room

    # -- asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.buffered += len(data)
        if self.buffered > READ_HIGH_WATER and not self.reading_paused and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()
        self._wake_reader()

    def eof_received(self) -> None:
        self.eof = True
        self._wake_reader()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if exc is not None:
            self.error = exc
        else:
            self.eof = True
        self._wake_reader()
        drainer, self._drainer = self._drainer, None
        if drainer is not None and not drainer.done():
            drainer.set_result(None)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        drainer, self._drainer = self._drainer, None
        if drainer is not None and not drainer.done():
            drainer.set_result(None)

    def _wake_reader(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- used by the stream
    def take(self, max_bytes: int) -> bytes:
        chunks = self.chunks
        if len(chunks) > 1 and self.buffered <= max_bytes:
            data = b"".join(chunks)
            chunks.clear()
        else:
            data = chunks.popleft()
            if len(data) > max_bytes:
                chunks.appendleft(data[max_bytes:])
                data = data[:max_bytes]
        self.buffered -= len(data)
        if self.reading_paused and self.buffered < READ_LOW_WATER and self.transport is not None:
            self.reading_paused = False
            self.transport.resume_reading()
        return data

    def wait_for_data(self) -> asyncio.Future[None]:
        self._waiter = asyncio.get_running_loop().create_future()
        return self._waiter

    def wait_for_drain(self) -> asyncio.Future[None]:
        self._drainer = asyncio.get_running_loop().create_future()
        return self._drainer


def _lost_message(protocol: _ConnectionProtocol) -> str:
    return str(protocol.error) if protocol.error is not None else "the connection is closed"


async def _wait(future: asyncio.Future[None], timeout: float | None, timeout_error: type[Exception]) -> None:
    """Await ``future``; past ``timeout`` seconds raise ``timeout_error``. The one place a deadline is armed."""
    if timeout is None:
        await future
        return
    try:
        async with asyncio.timeout(timeout):
            await future
    except TimeoutError:
        raise timeout_error(f"timed out after {timeout:g} s") from None


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection (plain or TLS) as httpcore wants it."""

    def __init__(self, transport: asyncio.Transport, protocol: _ConnectionProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._closed = False

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        protocol = self._protocol
        if protocol.buffered:
            return protocol.take(max_bytes)
        if self._closed:
            raise ReadError("the connection is closed")
        while not protocol.buffered:
            if protocol.error is not None:
                raise ReadError(str(protocol.error))
            if protocol.eof or protocol.lost:
                return b""
            await _wait(protocol.wait_for_data(), timeout, ReadTimeout)
        return protocol.take(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        protocol = self._protocol
        if self._closed or protocol.lost or self._transport.is_closing():
            raise WriteError(_lost_message(protocol))
        self._transport.write(buffer)
        if not protocol.writing_paused:
            return
        await _wait(protocol.wait_for_drain(), timeout, WriteTimeout)
        if protocol.lost:
            raise WriteError(_lost_message(protocol))

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            transport = self._transport
            if transport.get_write_buffer_size() or transport.get_extra_info("ssl_object") is not None:
                # As anyio does: the socket is closed now. close() would keep it open while unsent
                # bytes wait for a peer that may never read them, or (TLS) for the peer's answer
                # to close_notify, up to asyncio's 30 s shutdown timeout.
                transport.abort()
            else:
                transport.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                tls_transport = await loop.start_tls(
                    self._transport, self._protocol, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError:
            await self.aclose()
            raise ConnectTimeout(f"TLS handshake not done within {timeout:g} s") from None
        except OSError as exc:  # ssl.SSLError and ConnectionResetError are OSErrors
            await self.aclose()
            raise ConnectError(str(exc) or type(exc).__name__) from exc
        if tls_transport is None:  # the connection went away during the handshake
            await self.aclose()
            raise ConnectError(_lost_message(self._protocol))
        tls_transport = typing.cast(asyncio.Transport, tls_transport)
        self._protocol.transport = tls_transport
        self._closed = True  # this plain-text view is done with; the TLS stream owns the socket
        return AsyncioStream(tls_transport, self._protocol)

    @property
    def closed(self) -> bool:
        """Whether this stream was closed (by its connection's owner or anyone holding it)."""
        return self._closed

    def unread_bytes(self) -> int:
        """Bytes received and buffered here that no read has taken yet (``harvester.surplus``)."""
        return self._protocol.buffered

    def get_extra_info(self, info: str) -> typing.Any:
        transport = self._transport
        if info == "ssl_object":
            return transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info == "socket":
            return transport.get_extra_info("socket")
        if info == "is_readable":
            # httpcore asks this of an idle keep-alive connection: anything to read (or EOF) means
            # the server dropped it. What the loop already delivered is known without a syscall.
            protocol = self._protocol
            if protocol.buffered or protocol.eof or protocol.lost or transport.is_closing():
                return True
            return _socket_readable(transport.get_extra_info("socket"))
        return None


def _socket_readable(sock: typing.Any) -> bool:
    """Whether a recv would return at once (data or EOF); a socket without a descriptor counts as closed."""
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def _apply_options(transport: asyncio.BaseTransport, options: typing.Iterable[SocketOption] | None, tcp: bool) -> None:
    sock = transport.get_extra_info("socket")
    if sock is None:
        return
    if tcp:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for option in options or ():
        sock.setsockopt(*option)


async def address_infos(host: str, port: int) -> collections.abc.Sequence[AddrInfoType]:
    """The host's addresses, as ``loop.create_connection`` asks for them (the resolver's order); an
    address written out is its own, without a trip through the resolver's thread."""
    if "%" not in host:  # an IPv6 zone needs the resolver to become a scope id
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            if ip.version == 6:
                return [(socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (host, port, 0, 0))]
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (host, port))]
    return await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)


async def _open_tcp(host: str, port: int, local_address: str | None) -> tuple[asyncio.BaseTransport, typing.Any]:
    """A connection to ``host``: its addresses raced as RFC 8305 says (``aiohappyeyeballs``, the
    same algorithm as asyncio's ``happy_eyeballs_delay``, on whichever event loop runs)."""
    infos = await address_infos(host, port)
    if not infos:
        raise OSError(f"{host} resolved to no address")
    local = await address_infos(local_address, 0) if local_address else None
    sock = await aiohappyeyeballs.start_connection(
        infos, local_addr_infos=local, happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY
    )
    try:
        return await asyncio.get_running_loop().create_connection(_ConnectionProtocol, sock=sock)
    except BaseException:
        sock.close()
        raise


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """``httpcore.AsyncNetworkBackend`` on asyncio's own transports: no anyio, no sniffio."""

    async def _connect(
        self,
        opener: typing.Callable[[], typing.Awaitable[tuple[asyncio.BaseTransport, typing.Any]]],
        timeout: float | None,
        options: typing.Iterable[SocketOption] | None,
        tcp: bool,
    ) -> AsyncioStream:
        try:
            async with asyncio.timeout(timeout):
                transport, protocol = await opener()
        except TimeoutError:  # before OSError: TimeoutError is one
            raise ConnectTimeout(f"no connection within {timeout:g} s") from None
        except OSError as exc:
            raise ConnectError(str(exc) or type(exc).__name__) from exc
        try:
            _apply_options(transport, options, tcp)
        except OSError as exc:
            transport.close()
            raise ConnectError(str(exc)) from exc
        return AsyncioStream(typing.cast(asyncio.Transport, transport), protocol)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return await self._connect(lambda: _open_tcp(host, port, local_address), timeout, socket_options, tcp=True)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: typing.Iterable[SocketOption] | None = None
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        return await self._connect(
            lambda: loop.create_unix_connection(_ConnectionProtocol, path), timeout, socket_options, tcp=False
        )

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class AsyncioTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` (same arguments) whose connections use ``AsyncioBackend``."""

    def __init__(
        self, *args: typing.Any, network_backend: httpcore.AsyncNetworkBackend | None = None, **kwargs: typing.Any
    ) -> None:
        super().__init__(*args, **kwargs)
        pool = getattr(self, "_pool", None)
        if not isinstance(pool, httpcore.AsyncConnectionPool) or not hasattr(pool, "_network_backend"):
            raise TypeError(
                "httpx/httpcore changed: AsyncHTTPTransport._pool._network_backend is gone; "
                "harvester/netbackend.py needs updating"
            )
        pool._network_backend = network_backend or AsyncioBackend()

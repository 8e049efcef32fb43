"""A small threaded HTTP/1.1 server on 127.0.0.1 that serves a versioned content model.

The server knows nothing about pages: it asks ``model.resolve(version, path_with_query,
request_headers)`` for a :class:`Resource` and puts it on the wire, taking care of the transport
(keep-alive, chunked framing, gzip when the client accepts it, conditional requests answered
with a real 304). The sample site (``demo.sample_site``) is one model; benchmarks plug in
generated ones.

Extra ``routes`` (a function of the path) are asked before the model: the tests' hostile
endpoints (``tests/hostile.py``) plug in that way.
"""

from __future__ import annotations

import gzip
import logging
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Protocol

__all__ = ["ContentModel", "RequestRecord", "Resource", "SiteServer"]

log = logging.getLogger(__name__)

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Resource:
    """One response as the content model describes it, identity-encoded.

    ``chunked`` and ``gzip`` are wishes about the transport: the server sends the body with
    ``Transfer-Encoding: chunked`` (in several chunks) and with ``Content-Encoding: gzip`` when
    the client's ``Accept-Encoding`` allows it. ``etag`` (a quoted entity tag) and
    ``last_modified`` (an IMF-fixdate) are sent as validators and honoured on conditional
    requests. ``stream``, when set, replaces ``body``: it is called with the server's stop
    event and yields the body lazily; ``content_length`` then declares its length (or chunked
    framing is used).
    """

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    chunked: bool = False
    gzip: bool = False
    etag: str | None = None
    last_modified: str | None = None
    stream: Callable[[threading.Event], Iterable[bytes]] | None = None
    content_length: int | None = None
    reason: str | None = None  # the reason phrase; None: the standard one for the status

    def header(self, name: str, default: str | None = None) -> str | None:
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return default

    @property
    def content_type(self) -> str | None:
        return self.header("Content-Type")


class RequestHeaders(Protocol):
    """What a content model reads of a request's headers: the server hands it the request's
    ``email.message.Message`` (names case-insensitive); a test may hand it a dict."""

    def get(self, name: str, /) -> str | None: ...


class ContentModel(Protocol):
    def resolve(self, version: int, path: str, request_headers: RequestHeaders) -> Resource | None: ...


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it (``headers`` in arrival order)."""

    method: str
    path: str
    status: int
    headers: tuple[tuple[str, str], ...]
    version: int

    def header(self, name: str, default: str | None = None) -> str | None:
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return default


class SiteServer:
    """Serve ``model`` at ``version`` on ``http://127.0.0.1:PORT`` (``port=0``: an ephemeral one).

    ``latency`` (seconds) delays every response. ``version`` and ``latency`` may be changed while
    the server runs. Use as a context manager or call :meth:`start` / :meth:`stop`.
    """

    def __init__(
        self,
        model: ContentModel,
        version: int = 1,
        *,
        port: int = 0,
        latency: float = 0.0,
        routes: Callable[[str], Resource | None] | None = None,
    ):
        self.model = model
        self.latency = float(latency)
        self.routes = routes
        self._port = port
        self._version = version
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._idle = threading.Condition(self._lock)
        self.reset_counters()

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> SiteServer:
        if self._httpd is not None:
            return self
        self._stop_event.clear()
        self._httpd = _HTTPServer((HOST, self._port), _Handler, self)
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"site-server-{self._port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop serving, drop open connections (even mid-response) and release the port."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stop_event.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._connections and time.monotonic() < deadline:
                self._idle.wait(deadline - time.monotonic())
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> SiteServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self._port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    # -- state -----------------------------------------------------------------------------

    @property
    def version(self) -> int:
        with self._lock:
            return self._version

    @version.setter
    def version(self, value: int) -> None:
        with self._lock:
            self._version = value

    @property
    def request_count(self) -> int:
        with self._lock:
            return self._request_count

    @property
    def bytes_sent(self) -> int:
        """Bytes written to sockets: status lines, headers, chunk framing and bodies."""
        with self._lock:
            return self._bytes_sent

    @property
    def connection_count(self) -> int:
        """TCP connections accepted since the last reset (keep-alive reuses one)."""
        with self._lock:
            return self._connection_count

    @property
    def most_open_connections(self) -> int:
        """The most TCP connections open at one time since the last reset."""
        with self._lock:
            return self._most_open

    @property
    def most_requests_at_once(self) -> int:
        """The most requests being answered at one time since the last reset (latency included)."""
        with self._lock:
            return self._most_in_flight

    @property
    def request_log(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._log)

    def reset_counters(self) -> None:
        with self._lock:
            self._request_count = 0
            self._bytes_sent = 0
            self._connection_count = 0
            self._most_open = len(self._connections)
            self._in_flight = 0
            self._most_in_flight = 0
            self._log: list[RequestRecord] = []

    # -- internals used by the handler -----------------------------------------------------

    def _opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)
            self._connection_count += 1
            self._most_open = max(self._most_open, len(self._connections))

    def _closed(self, conn: socket.socket) -> None:
        with self._idle:
            self._connections.discard(conn)
            self._idle.notify_all()

    def _answering(self, delta: int) -> None:
        with self._lock:
            self._in_flight += delta
            self._most_in_flight = max(self._most_in_flight, self._in_flight)

    def _sent(self, nbytes: int) -> None:
        with self._lock:
            self._bytes_sent += nbytes

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self._request_count += 1
            self._log.append(record)

    def _resolve(self, version: int, path: str, headers: RequestHeaders) -> Resource:
        resource = self.routes(path) if self.routes else None
        if resource is None:
            resource = self.model.resolve(version, path, headers)
        return resource if resource is not None else _NOT_FOUND


class _HTTPServer(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    block_on_close = False  # SiteServer.stop() waits for handlers itself, with a deadline
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type, owner: SiteServer):
        self.owner = owner
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, tuple[str, int]]:
        conn, addr = super().get_request()
        # Without it, a response written in pieces (head, chunks) waits for the client's
        # delayed ACK: about 40 ms per response on Linux.
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr

    def handle_error(self, request: object, client_address: object) -> None:
        # Clients hanging up mid-response are normal here (hostile endpoints); stay quiet.
        log.debug("error while serving %s", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "StrataSiteServer/1.0"
    sys_version = ""
    timeout = 60  # drop idle keep-alive connections eventually
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.owner._opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._closed(self.connection)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._serve(head_only=False)

    def do_HEAD(self) -> None:
        self._serve(head_only=True)

    def do_POST(self) -> None:
        """Forms (the sample site's login): the model answers through ``resolve_post`` if it has one."""
        owner = self.server.owner
        length = min(int(self.headers.get("Content-Length") or 0), 64 * 1024)
        body = self.rfile.read(length) if length > 0 else b""
        resolve_post = getattr(owner.model, "resolve_post", None)
        resource = resolve_post(owner.version, self.path, self.headers, body) if resolve_post else None
        if resource is None:
            resource = Resource(405, (("Content-Type", "text/plain"),), b"method not allowed\n")
        try:
            self._send(resource, owner.version, head_only=False)
        except OSError:
            self.close_connection = True

    def _write(self, data: bytes) -> None:
        self.wfile.write(data)
        self.server.owner._sent(len(data))

    def _serve(self, head_only: bool) -> None:
        owner = self.server.owner
        owner._answering(+1)
        try:
            self._answer(owner, head_only)
        finally:
            owner._answering(-1)

    def _answer(self, owner: SiteServer, head_only: bool) -> None:
        version = owner.version
        if owner.latency > 0 and owner._stop_event.wait(owner.latency):
            self.close_connection = True
            return
        try:
            resource = owner._resolve(version, self.path, self.headers)
        except Exception:
            log.exception("content model failed on %s", self.path)
            resource = _SERVER_ERROR
        try:
            self._send(resource, version, head_only)
        except OSError:  # the client hung up or stalled, or stop() closed the socket
            self.close_connection = True

    def _send(self, res: Resource, version: int, head_only: bool) -> None:
        owner = self.server.owner
        use_gzip = res.gzip and res.stream is None and _accepts_gzip(self.headers.get("Accept-Encoding"))
        status = res.status
        if status == 200 and _not_modified(res, self.headers):
            status = 304
        owner._record(RequestRecord(self.command, self.path, status, tuple(self.headers.items()), version))
        headers = self._headers(res, use_gzip)
        body, chunks, chunked = self._framing(res, status, use_gzip, headers)
        if self.close_connection:
            headers.append(("Connection", "close"))
        elif self.request_version == "HTTP/1.0":
            headers.append(("Connection", "keep-alive"))
        head_bytes = _head(res, status, headers)
        if head_only or status == 304:
            self._write(head_bytes)
        elif body is not None:
            self._write(head_bytes + body)
        else:
            self._write(head_bytes)
            self._write_chunks(chunks, chunked)

    def _headers(self, res: Resource, use_gzip: bool) -> list[tuple[str, str]]:
        """The resource's headers with the transport's own: Vary, validators, Date, Server."""
        etag = _gzip_etag(res.etag) if (use_gzip and res.etag) else res.etag
        headers = list(res.headers)
        if res.gzip:
            headers.append(("Vary", "Accept-Encoding"))
        if etag:
            headers.append(("ETag", etag))
        if res.last_modified:
            headers.append(("Last-Modified", res.last_modified))
        headers.append(("Date", formatdate(usegmt=True)))
        headers.append(("Server", self.server_version))
        return headers

    def _framing(
        self, res: Resource, status: int, use_gzip: bool, headers: list[tuple[str, str]]
    ) -> tuple[bytes | None, Iterable[bytes], bool]:
        """How the body goes out: (bytes sent with the head, or chunks sent after it, chunked?).
        Adds the framing headers (Content-Length, Content-Encoding, Transfer-Encoding) to ``headers``."""
        body: bytes | None = None  # sent in one write with the head
        chunks: Iterable[bytes] = ()  # sent one write per item, after the head
        chunked = False
        if status == 304:
            headers[:] = [(k, v) for k, v in headers if k.lower() not in ("content-type", "content-length")]
            body = b""
        elif res.stream is not None:
            chunks = res.stream(self.server.owner._stop_event)
            if res.content_length is not None:
                headers.append(("Content-Length", str(res.content_length)))
            elif self.request_version == "HTTP/1.0":
                self.close_connection = True  # no chunked coding in HTTP/1.0: the close delimits
            else:
                chunked = True
        else:
            body = gzip.compress(res.body, mtime=0) if use_gzip else res.body
            if use_gzip:
                headers.append(("Content-Encoding", "gzip"))
            if res.chunked and self.request_version != "HTTP/1.0":
                chunked = True
                chunks, body = _split(body), None
            else:
                headers.append(("Content-Length", str(len(body))))
        if chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        return body, chunks, chunked

    def _write_chunks(self, chunks: Iterable[bytes], chunked: bool) -> None:
        stop = self.server.owner._stop_event
        for chunk in chunks:
            if stop.is_set():
                self.close_connection = True
                return
            if chunk:
                self._write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
        if chunked:
            self._write(b"0\r\n\r\n")


def _head(res: Resource, status: int, headers: list[tuple[str, str]]) -> bytes:
    try:
        reason = res.reason if res.reason is not None and status == res.status else HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return head.encode("latin-1")


_NOT_FOUND = Resource(
    404,
    (("Content-Type", "text/html; charset=utf-8"),),
    b"<!DOCTYPE html>\n<title>Not Found</title>\n<h1>404 Not Found</h1>\n",
)
_SERVER_ERROR = Resource(500, (("Content-Type", "text/plain; charset=utf-8"),), b"content model error\n")


def _split(body: bytes, parts: int = 4) -> list[bytes]:
    """Several chunks, so that clients really meet chunked framing."""
    size = max(1, -(-len(body) // parts))
    return [body[i : i + size] for i in range(0, len(body), size)]


def _accepts_gzip(value: str | None) -> bool:
    gzip_q = star_q = None
    for item in (value or "").split(","):
        name, _, params = item.partition(";")
        name = name.strip().lower()
        q = 1.0
        for param in params.split(";"):
            key, _, val = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(val)
                except ValueError:
                    q = 0.0
        if name in ("gzip", "x-gzip"):
            gzip_q = q
        elif name == "*":
            star_q = q
    chosen = gzip_q if gzip_q is not None else star_q
    return bool(chosen and chosen > 0)


def _gzip_etag(etag: str) -> str:
    # A gzip variant is a different representation, so it gets its own strong tag (as Apache).
    return etag[:-1] + '-gzip"' if etag.endswith('"') else etag + "-gzip"


def _opaque(tag: str) -> str:
    tag = tag.strip()
    return tag[2:] if tag.startswith("W/") else tag


def _not_modified(res: Resource, headers: RequestHeaders) -> bool:
    inm = headers.get("If-None-Match")
    if inm is not None:  # RFC 9110 13.2.2: If-None-Match wins over If-Modified-Since
        if not res.etag:
            return False
        if inm.strip() == "*":
            return True
        mine = {_opaque(res.etag), _opaque(_gzip_etag(res.etag))}
        return any(_opaque(tag) in mine for tag in inm.split(","))
    ims = headers.get("If-Modified-Since")
    if ims and res.last_modified:
        try:
            return parsedate_to_datetime(res.last_modified) <= parsedate_to_datetime(ims)
        except (TypeError, ValueError):
            return False
    return False

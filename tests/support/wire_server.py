"""A keep-alive HTTP/1.1 test server on 127.0.0.1 that sends, for each path, exactly the bytes it is
given: framing mistakes (a ``Content-Length`` short of the body), raw non-ASCII header bytes, whatever
a real server gets wrong and ``http.server`` would not let a test write. Each answer goes out in one
``sendall``, so what follows a body arrives with it, as it does from a real server on one write.
"""

from __future__ import annotations

import dataclasses
import itertools
import socket
import socketserver
import threading
from collections.abc import Callable

__all__ = ["Request", "WireServer", "http_response"]


def http_response(
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    *,
    content_length: int | None = None,
    after: bytes = b"",
) -> bytes:
    """The bytes of one response: ``Content-Length`` as given (the body's length by default), then
    ``after``, bytes the framing does not account for."""
    length = len(body) if content_length is None else content_length
    head = [
        b"HTTP/1.1 %d %s" % (status, b"OK" if status == 200 else b"Not Found"),
        b"Content-Length: %d" % length,
        *(name + b": " + value for name, value in headers),
    ]
    return b"\r\n".join(head) + b"\r\n\r\n" + body + after


@dataclasses.dataclass(frozen=True)
class Request:
    connection: int  # which TCP connection it came over (1, 2, ... in order of accept)
    path: str
    headers: dict[str, bytes]


Route = bytes | Callable[[Request], bytes]
NOT_FOUND = http_response(404, [(b"Content-Type", b"text/plain")], b"not here\n")


class WireServer:
    """``routes`` maps a path to the bytes answered (or to a function of the request giving them)."""

    def __init__(self, routes: dict[str, Route]):
        self.routes = routes
        self.log: list[Request] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._open: set[socket.socket] = set()
        self._server: socketserver.ThreadingTCPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests_for(self, path: str) -> list[Request]:
        with self._lock:
            return [r for r in self.log if r.path == path]

    def start(self) -> WireServer:
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                conn_id = next(owner._ids)
                with owner._lock:
                    owner._open.add(self.connection)
                try:
                    while owner._serve_one(conn_id, self.rfile, self.connection):
                        pass
                except OSError:
                    pass
                finally:
                    with owner._lock:
                        owner._open.discard(self.connection)

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        server.daemon_threads = True
        server.allow_reuse_address = True
        server.server_bind()
        server.server_activate()
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def _serve_one(self, conn_id: int, rfile, sock: socket.socket) -> bool:
        line = rfile.readline(8192)
        if not line.strip():
            return False
        headers: dict[str, bytes] = {}
        while True:
            header = rfile.readline(8192)
            if header in (b"\r\n", b"\n", b""):
                break
            name, _, value = header.partition(b":")
            headers[name.strip().decode("latin-1").lower()] = value.strip()
        path = line.split()[1].decode("latin-1")
        request = Request(conn_id, path, headers)
        with self._lock:
            self.log.append(request)
        route = self.routes.get(path, NOT_FOUND)
        sock.sendall(route(request) if callable(route) else route)
        return True

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            for sock in list(self._open):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

"""A raw socket server on 127.0.0.1 that answers every request with the same canned bytes, awkward
ones included, and keeps each request's head as it arrived (tests compare what two clients send)."""

from __future__ import annotations

import socket
import ssl
import threading


class RawServer:
    """Answers every request on a connection with ``answer`` (bytes, and whether to close after)."""

    def __init__(self, answer: tuple[bytes, bool], tls: ssl.SSLContext | None = None):
        self.answer = answer
        self.tls = tls
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.heads: list[bytes] = []  # every request's head as it arrived, in order
        self.open_now = 0
        self.most_open = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with self._lock:
            self.accepted += 1
            self.open_now += 1
            self.most_open = max(self.most_open, self.open_now)
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            buffer = b""
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
                while b"\r\n\r\n" in buffer:
                    head, buffer = buffer.split(b"\r\n\r\n", 1)
                    with self._lock:
                        self.heads.append(head)
                    raw, close = self.answer
                    conn.sendall(raw)
                    if close:
                        return
        except OSError:
            return
        finally:
            with self._lock:
                self.open_now -= 1
            conn.close()

    def stop(self) -> None:
        self.sock.close()


ANSWERS = {
    "200 with a length": (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello", False),
    "chunked, with an extension": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        False,
    ),
    "HTTP/1.0 read to the close": (b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end", True),
    "100 Continue first": (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", False),
    "more than its length": (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef", False),
    "closed before answering": (b"", True),
    "not HTTP": (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", True),
    "shorter than its length": (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b", True),
    "header bytes beyond ASCII": (b"HTTP/1.1 200 \xc3\x96K\r\nX-Name: caf\xe9\r\nContent-Length: 1\r\n\r\nx", False),
    "304 without a body": (b'HTTP/1.1 304 Not Modified\r\nETag: "a"\r\n\r\n', False),
    "gzip, kept encoded": (
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 20\r\n\r\n"
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00",
        False,
    ),
}


FIELDS = (
    "status",
    "reason",
    "http_version",
    "headers",
    "body_length",
    "digest",
    "truncated",
    "error",
    "surplus",
    "wire_bytes",
    "request_line",
    "request_headers",
)


def result_fields(result, extra: tuple[str, ...] = ()) -> dict:
    """What two fetches of the same answer must agree on: ``FIELDS`` (and ``extra``) and the body;
    the result is closed."""
    out = {name: getattr(result, name) for name in (*FIELDS, *extra)}
    out["body"] = result.read_body(1 << 20) if result.body is not None else None
    result.close()
    return out

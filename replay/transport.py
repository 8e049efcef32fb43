"""Calls into pywb's warcserver in the same process.

pywb's ``FrontEndApp`` runs its warcserver on a second gevent server bound to a loopback port and
reaches it with ``requests`` for every replayed resource: two HTTP exchanges per response, and the
reason it must monkey-patch the whole process. Strata calls the same WSGI application directly.
``LocalClient.post/get`` return the few parts of a ``requests.Response`` that pywb's
``RewriterApp`` reads (``status_code``, ``reason``, ``headers``, ``raw``, ``text``).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from requests.structures import CaseInsensitiveDict


class IterReader(io.RawIOBase):
    """A readable file over a WSGI body iterable; closing it closes the iterable."""

    def __init__(self, body: Iterable[bytes]):
        self._body = body
        self._iter = iter(body)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        while not self._pending:
            try:
                self._pending = next(self._iter)
            except StopIteration:
                return 0
        n = min(len(buf), len(self._pending))
        buf[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        if not self.closed:
            closer = getattr(self._body, "close", None)
            if closer:
                closer()
        super().close()


class LocalResponse:
    def __init__(self, status: str, headers: list[tuple[str, str]], body: Iterable[bytes]):
        code, _, reason = status.partition(" ")
        self.status_code = int(code)
        self.reason = reason
        self.headers = CaseInsensitiveDict(headers)
        self.raw = IterReader(body)
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            with self.raw:
                self._text = self.raw.read().decode("utf-8")
        return self._text


class LocalClient:
    """``requests``-shaped access to a WSGI application, without a socket."""

    def __init__(self, app: Callable):
        self.app = app

    def get(self, url: str, headers: dict | None = None, **_) -> LocalResponse:
        return self._call("GET", url, b"", headers or {})

    def post(self, url: str, data=b"", headers: dict | None = None, **_) -> LocalResponse:
        body = data.read() if hasattr(data, "read") else bytes(data)
        return self._call("POST", url, body, headers or {})

    def _call(self, method: str, url: str, body: bytes, headers: dict) -> LocalResponse:
        parts = urlsplit(url)
        environ = {
            "REQUEST_METHOD": method,
            "SCRIPT_NAME": "",
            "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query,
            "SERVER_NAME": parts.hostname or "localhost",
            "SERVER_PORT": str(parts.port or 80),
            "SERVER_PROTOCOL": "HTTP/1.1",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        for name, value in headers.items():
            key = name.upper().replace("-", "_")
            if key == "CONTENT_TYPE":
                environ["CONTENT_TYPE"] = value
            elif key != "CONTENT_LENGTH":
                environ["HTTP_" + key] = value
        started: dict = {}

        def start_response(status, response_headers, exc_info=None):
            started["status"], started["headers"] = status, response_headers

        body_iter = self.app(environ, start_response)
        return LocalResponse(started["status"], started["headers"], body_iter)

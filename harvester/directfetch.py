"""The fetch process's fetch: h11 on ``H11Transport``'s pool, without httpx's request and response.

Why: with h11 doing the HTTP, what was left of a fetch process's CPU was mostly httpx's objects
around it: ``build_request`` (URL parsing, header merging) about 35 us a request, the ``Response``
and its ``Headers`` 11 us, the client's send path, the body's async iterators. This builds the
request line and headers itself for the URLs it can, and reads the answer straight off the
connection, with the same helpers as ``harvester.fetch.fetch``.

What it must give is exactly what ``fetch`` gives through an httpx client on ``H11Transport``: the
same request bytes, every field of the ``FetchResult`` the same, the same error words.
``tests/unit/harvester/test_directfetch.py`` checks that against httpx on awkward answers, URLs
and cookies. So:

- **URLs.** A URL that httpx would send as it is is split here: ``http`` or ``https``, an authority
  without user info, a path of characters httpx leaves alone and no dot segments, a query likewise,
  no fragment. Its origin and ``Host`` value come from ``httpx.URL`` once per authority (so the
  host's validation and port rules are httpx's). Any other URL goes through the client's
  ``build_request`` as before.
- **Headers** as httpx merges them: ``Host``, then the client's defaults less those the caller
  gives, then the caller's, in its order, encoded as ASCII (httpx raises on anything else; so
  does this, and the fetch says so as it would).
- **Cookies.** While the client's jar is empty, nothing is added. Once a response has set one, every
  request is built by ``build_request``, which adds the ``Cookie`` header the jar gives. A response
  that sets a cookie is read into the jar by httpx's own code, as ``harvester.fetch._send`` does.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import tempfile
import time
from collections.abc import Callable

import h11
import httpx

from harvester.fetch import (
    FETCH_FAILURES,
    SPOOL_IN_MEMORY,
    drop_unsendable_cookies,
    finish,
    read_body,
    record_failure,
    record_head,
    record_request,
)
from harvester.fetchresult import FetchResult
from harvester.h11transport import Connection, H11Transport, Origin, ResponseBody, origin_of
from harvester.surplus import pending_bytes

# httpx's PATH_SAFE and QUERY_SAFE (printable ASCII less what it percent-encodes): kept as they are.
_PATH = "[!$-;=@-_a-z|~]"  # 0x21-0x7E less " # < > ? ` { }
_QUERY = "[!$-;=?-~]"  # 0x21-0x7E less " # < >
_PLAIN_URL = re.compile(rf"(https?)://([^/?#@\[\]\\\s]+)(/{_PATH}*(?:\?{_QUERY}*)?)\Z")
_DOT_SEGMENT = re.compile(r"/\.\.?(?:/|\?|\Z)")
MAX_URL_LENGTH = 65536  # httpx's
MAX_KNOWN_ORIGINS = 4096  # parsed scheme://authority kept


class DirectFetcher:
    """``fetch(url, headers, deadline, max_size)`` as ``harvester.fetch.fetch(client, ...)`` gives it,
    for a ``client`` on ``transport`` (an ``H11Transport``, not a proxy's or a guard's)."""

    def __init__(self, client: httpx.AsyncClient, transport: H11Transport):
        self.client = client
        self.transport = transport
        self._defaults = list(client.headers.raw)
        self._timeouts = client.timeout.as_dict()
        self._origins: dict[str, tuple[Origin, bytes] | None] = {}

    def _origin(self, scheme_and_authority: str) -> tuple[Origin, bytes] | None:
        """(origin, Host value) for ``scheme://authority``, as httpx parses it; None if it refuses."""
        if scheme_and_authority not in self._origins:
            try:
                url = httpx.URL(scheme_and_authority + "/")
                known: tuple[Origin, bytes] | None = (origin_of(url), url.netloc)
            except (httpx.InvalidURL, httpx.UnsupportedProtocol):
                known = None  # build_request raises it again, with httpx's words
            if len(self._origins) >= MAX_KNOWN_ORIGINS:  # a broad crawl: start over rather than grow
                self._origins.clear()
            self._origins[scheme_and_authority] = known
        return self._origins[scheme_and_authority]

    def request(self, url: str, headers: dict[str, str]) -> tuple[Origin | httpx.URL, bytes, list[tuple[bytes, bytes]]]:
        """(where, target, headers) of the GET httpx's client would send for ``url``. ``where`` is its
        origin, or the URL httpx parsed, whose origin (or unsupported scheme) ``origin_of`` tells once
        the request is recorded, as the transport does under httpx."""
        plain = _PLAIN_URL.match(url) if len(url) <= MAX_URL_LENGTH else None
        if plain is not None and not _DOT_SEGMENT.search(plain[3]) and not len(self.client.cookies.jar):
            known = self._origin(f"{plain[1]}://{plain[2]}")
            if known is not None:
                origin, host = known
                given = [(k.encode("ascii"), v.encode("ascii")) for k, v in headers.items()]
                replaced = {k.lower() for k, _ in given}
                if b"host" not in replaced:
                    defaults = [(k, v) for k, v in self._defaults if k.lower() not in replaced]
                    return origin, plain[3].encode("ascii"), [(b"Host", host), *defaults, *given]
        request = self.client.build_request("GET", url, headers=headers)
        return request.url, request.url.raw_path, request.headers.raw

    async def fetch(
        self, url: str, headers: dict[str, str], deadline: float, max_size: int, sent: Callable[[], None] | None = None
    ) -> FetchResult:
        """GET ``url``; never raises for network trouble (``result.error`` says what happened).
        ``sent``: called the moment the request is written, once its connection is ready."""
        result = FetchResult(url=url)
        started = time.monotonic()
        digester = hashlib.sha1()
        body = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)
        try:
            where, target, head_fields = self.request(url, headers)
            record_request(result, target, head_fields)
            origin = where if isinstance(where, tuple) else origin_of(where)
            async with asyncio.timeout(deadline):
                connection = await self.transport.checkout(origin, origin[1].decode("ascii"), self._timeouts["connect"])
                if sent is not None:
                    sent()
                head = await self.transport.exchange(connection, b"GET", target, head_fields, [], self._timeouts)
                answer = ResponseBody(self.transport, connection, self._timeouts["read"])
                try:
                    self._record_head(result, url, head_fields, connection, head)
                    if await read_body(result, answer, max_size, body, digester):
                        result.surplus = pending_bytes(connection.h11, connection.stream)
                        if result.surplus:
                            await connection.stream.aclose()  # never read as the next URL's response
                finally:
                    await answer.aclose()
        except FETCH_FAILURES as exc:
            record_failure(result, exc, deadline)
        return finish(result, started, body, digester)

    def _record_head(
        self, result: FetchResult, url: str, sent: list[tuple[bytes, bytes]], connection: Connection, head: h11.Response
    ) -> None:
        raw = head.headers.raw_items()
        if any(k.lower() == b"set-cookie" for k, _ in raw):
            response = httpx.Response(head.status_code, headers=raw, request=httpx.Request("GET", url, headers=sent))
            self.client.cookies.extract_cookies(response)
            drop_unsendable_cookies(self.client.cookies.jar)
        peer = connection.stream.get_extra_info("server_addr")
        result.ip = peer[0] if isinstance(peer, tuple) and peer else None
        version = (b"HTTP/" + head.http_version).decode("ascii", errors="ignore")
        record_head(result, head.status_code, head.reason.decode("latin-1"), version, raw)

"""The contract between the browser and whoever answers its requests (the harvest, a test, QA).

The page loader (``harvester.browser.page``) hands every request a page makes to one async
callback, ``resolve(request) -> response | None``, and answers the browser with what it returns;
nothing goes to the browser's own network stack. The caller decides everything else: scope,
robots.txt, the network guard, politeness, a conditional fetch, the decision and the records.

- ``BrowserRequest``: what the browser asked for (URL, method, headers as a list of pairs, the
  POST body, the resource type as Chromium names it, whether it is the page's navigation, and the
  page it belongs to).
- ``BrowserResponse``: the answer (status, headers as a list of pairs, body bytes). ``body=None``
  fails the request in the browser (``net::ERR_FAILED``, as a refused connection would): out of
  scope, disallowed by robots.txt, refused by the guard, a fetch error. ``resolve`` returning None
  means the same. Body bytes are the payload *as stored* (still gzip or deflate when the header
  says so): the loader decodes ``Content-Encoding`` itself, through the capped decoders, before the
  browser sees them, so a 304 can be answered with the stored original's bytes and headers.
- ``RequestOutcome``: one line of the page's request list, what happened to one request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field

# How a request ended, as the page's request list says it
FULFILLED = "fulfilled"  # answered with resolve's bytes
REFUSED = "refused"  # resolve answered None or a body of None: failed in the browser
ERROR = "error"  # resolve raised, or the answer could not be given to the browser
LATE = "late"  # asked after the page's deadline, or while the page was closing: failed unasked


@dataclass(frozen=True)
class PageRef:
    """The page a request belongs to: the URL the loader was asked to load, and an id unique within
    the session (``<n>``)."""

    url: str
    id: str


@dataclass(frozen=True)
class BrowserRequest:
    url: str
    method: str
    headers: list[tuple[str, str]]
    body: bytes | None
    # The DevTools protocol's resource type, in lower case: document, stylesheet, image, media, font,
    # script, xhr, fetch, ping (beacons), other (favicons, workers' scripts) ...
    resource_type: str
    navigation: bool  # a document: the page's own navigation, a redirect hop of it, or a frame's
    top_level: bool  # the page's own navigation (or a hop of its redirects), not a frame's
    page: PageRef

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


@dataclass(frozen=True)
class BrowserResponse:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | None = b""

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


Resolve = Callable[[BrowserRequest], Awaitable[BrowserResponse | None]]


@dataclass
class RequestOutcome:
    url: str
    method: str
    resource_type: str
    navigation: bool
    outcome: str  # FULFILLED, REFUSED, ERROR, LATE
    status: int | None = None
    mime: str = ""
    size: int = 0  # bytes given to the browser (decoded)
    error: str = ""
    top_level: bool = False  # the page's own navigation (a hop of it)

    def as_dict(self) -> dict:
        return asdict(self)

"""Origins by authority: which host name of the replay application serves what, at which level.

Archived scripts run wherever their capture is replayed, with the authority of that origin: its
cookies, its storage, every page it serves (they can read them all: same origin). So what an origin
holds decides what an archived page can reach. As pywb's deployment guidance and wabac.js do
(archived content from an origin that holds nothing else), ``strata serve`` can split them:

- ``pages`` (the archive's own name, ``pages_url``): Strata's pages (home, collections, calendars,
  search, diff, APIs), at ``public`` (or ``reading-room`` by client range, on a single host);
- ``content`` (``content_url``): replay addresses only (every modifier, TimeGate, TimeMap) and the
  static files replayed pages load, always at ``public``;
- ``reading-room`` (``reading_room_hosts``): everything, at ``reading-room`` for clients in the
  ``reading_room`` ranges (``public`` for others);
- ``restricted`` (``restricted_hosts``): everything, at ``staff`` with the console's grant.

With a content host, a replay address asked of the pages host is redirected there, and anything but
a replay address asked of the content host is redirected back; links are made absolute by
``replay.filters.replay_url``. A walled host (reading room, restricted) replays only the captures
the public may not see: a public one asked of it is redirected to the content host, so a public
page's scripts never run on the origin where reading-room or staff-only captures can be read.
The reading-room and restricted hosts answer with
``frame-ancestors 'self'`` and ``Cross-Origin-Resource-Policy: same-origin``: no page of another
origin (the public one included, which is same-site with them) may frame or embed their captures,
and their grant (a client range, a host-only cookie) is theirs alone.

Without a content host (the single-host default) archived pages share the pages' origin: they can
read and alter Strata's own pages in that browser tab (public data, nothing more), and with a
reading room but no ``reading_room_hosts``, a reading-room terminal replays public captures on the
origin that serves reading-room ones, where their scripts can read those too (they cannot send them
anywhere by fetch, form or image: ``replay.isolation``). README's "Origins" says the same.

Every host refuses a request that fetches a service worker's script (``replay.isolation``).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from flask import Flask, g, redirect, request

from replay.address import Address
from replay.isolation import refuses_service_worker

PAGES, CONTENT, READING_ROOM, RESTRICTED = "pages", "content", "reading-room", "restricted"
# What a content host answers itself: replay addresses and the static files replayed pages load.
CONTENT_ENDPOINTS = frozenset({"replay.replay", "static", "pywb_static.static"})


def bare_host(value: str) -> str:
    host = (value or "").strip().lower()
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0].rstrip(".") if host.count(":") == 1 else host.rstrip(".")


def url_host(url: str | None) -> str | None:
    return bare_host(urlsplit(url).netloc) if url else None


class Origins:
    """The replay application's host names, from its settings."""

    def __init__(self, settings: dict):
        self.content_url = (settings.get("content_url") or "").rstrip("/") or None
        self.pages_url = (settings.get("pages_url") or "").rstrip("/") or None
        self.content_host = url_host(self.content_url)
        self.restricted = frozenset(bare_host(h) for h in settings.get("restricted_hosts") or ())
        self.reading_room = frozenset(bare_host(h) for h in settings.get("reading_room_hosts") or ())

    def kind_of(self, host: str) -> str:
        host = bare_host(host)
        if host in self.restricted:
            return RESTRICTED
        if self.content_host and host == self.content_host:
            return CONTENT
        if host in self.reading_room:
            return READING_ROOM
        return PAGES

    def grants_reading_room(self, host: str) -> bool:
        """Whether the reading-room level may be given on ``host`` (to clients in its ranges)."""
        kind = self.kind_of(host)
        if kind == READING_ROOM:
            return True
        return kind == PAGES and not self.reading_room

    def walled(self, host: str) -> bool:
        """A host whose answers no other origin may frame or embed."""
        return self.kind_of(host) in (RESTRICTED, READING_ROOM)


def kind() -> str:
    return g.get("origin_kind") or PAGES


def replay_elsewhere(addr: Address, public: Callable[[], bool]) -> str | None:
    """Where a replay address asked of this host belongs, when that is another host. ``public()``:
    whether anyone may see the capture it names; such a capture asked of a walled host (reading
    room, restricted) is sent to the content host, so that no public page's script ever runs on the
    origin that serves what the public may not see."""
    origins: Origins = request.environ["strata.origins"]
    here = kind()
    target = None
    if here == PAGES and origins.content_url and addr.kind != "calendar":
        target = origins.content_url
    elif here == CONTENT and addr.kind == "calendar" and origins.pages_url:
        target = origins.pages_url
    elif here in (READING_ROOM, RESTRICTED) and origins.content_url and addr.kind == "replay" and addr.timestamp:
        target = origins.content_url if public() else None
    if target is None:
        return None
    raw = request.environ.get("REQUEST_URI") or request.full_path
    return target + raw


def pages_base() -> str:
    """The pages host's base URL as seen from this request: empty (relative) but on the content host."""
    origins: Origins = request.environ["strata.origins"]
    return origins.pages_url or "" if kind() == CONTENT else ""


def content_base() -> str:
    """The base URL replay addresses are linked with from this request's pages."""
    origins: Origins = request.environ["strata.origins"]
    return origins.content_url or "" if kind() == PAGES else ""


def register(app: Flask, origins: Origins, hsts_seconds: int = 0) -> None:
    """Before anything else: refuse service worker scripts, send requests to the host that serves
    them; after: the walled hosts' framing headers."""

    @app.before_request
    def _route():
        request.environ["strata.origins"] = origins
        g.origin_kind = origins.kind_of(request.host)
        if refuses_service_worker(request.environ):
            body = "Replay serves no service worker: an archived one would outlive the page it came with.\n"
            return body, 403, {"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store"}
        if g.origin_kind == CONTENT and request.endpoint is not None and request.endpoint not in CONTENT_ENDPOINTS:
            if origins.pages_url:
                raw = request.environ.get("REQUEST_URI") or request.full_path
                return redirect(origins.pages_url + raw, code=302)
            return "Not found: this host serves archived content only.\n", 404, {"Content-Type": "text/plain"}
        return None

    @app.after_request
    def _headers(response):
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        if hsts_seconds and request.is_secure:
            response.headers["Strict-Transport-Security"] = f"max-age={hsts_seconds}"
        if origins.walled(request.host):
            response.headers.setdefault("X-Frame-Options", "SAMEORIGIN")
            response.headers.setdefault("Cross-Origin-Resource-Policy", "same-origin")
            if "Content-Security-Policy" not in response.headers:
                response.headers["Content-Security-Policy"] = "frame-ancestors 'self'"
        return response

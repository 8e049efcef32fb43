"""Access control in the replay application: the level of each request, and the rule set it meets.

A request's level is decided here, once, before any view runs (``g.access``):

- on a **restricted host** (``restricted_hosts``): ``staff`` with a valid restricted-host cookie
  (``replay.access_grants``), else the request is refused with a 403 page pointing to the console;
- anywhere else: ``reading-room`` when the client address is in a ``reading_room`` range, else
  ``public``. The client address is the connection's, or, only when the connection comes from a
  ``trusted_proxies`` address, the right-most ``X-Forwarded-For`` entry that is not itself a trusted
  proxy. No client header raises a level: ``X-Pywb-ACL-User`` is removed before pywb sees it, and
  the restricted-host cookie means nothing outside the restricted host.

Each surface then asks the collection's rule set (``index.access.rules.rules_for``) through
``rules(coll)``: ``verdict(url, timestamp, level)``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from flask import Flask, g, make_response, render_template, request

from index.access.rules import RuleSet
from replay.access_grants import COOKIE, ENTRY_PATH, Grants
from replay.context import ext
from replay.errors import ReplayError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(value: Any, what: str = "address ranges") -> tuple[str, ...]:
    """A setting's list of CIDR ranges (a bare address is a /32 or /128), checked."""
    if isinstance(value, str):
        value = [value]
    out = []
    for item in value or ():
        try:
            out.append(str(ipaddress.ip_network(str(item).strip(), strict=False)))
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or CIDR range (e.g. 10.1.0.0/16)") from None
    return tuple(out)


class CaptureBlocked(ReplayError):
    """A capture the request's level may not see, under a ``block`` rule: a notice that names no
    title and no content (HTTP 451)."""

    http_status = 451
    template = "errors/blocked.html"

    def __init__(self, coll: str, url: str, level_needed: str):
        super().__init__("This capture is not available to you.")
        self.coll, self.url, self.level_needed = coll, url, level_needed

    def context(self) -> dict:
        return {"coll": self.coll, "url": self.url, "level_needed": self.level_needed}


class RequestAccess:
    __slots__ = ("level", "restricted_host", "user", "client")

    def __init__(self, level: str, restricted_host: bool = False, user: str | None = None, client: str = ""):
        self.level, self.restricted_host, self.user, self.client = level, restricted_host, user, client


def _parse_ip(text: str):
    text = text.strip().strip('"')
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # 203.0.113.5:4711
        text = text.split(":", 1)[0]
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    return getattr(addr, "ipv4_mapped", None) or addr


def _in(addr, nets: Iterable[Network]) -> bool:
    return addr is not None and any(addr.version == n.version and addr in n for n in nets)


def client_address(environ: dict, trusted: tuple[Network, ...]) -> Any:
    """The client's address: the peer's, or through trusted proxies the first untrusted hop."""
    peer = _parse_ip(environ.get("REMOTE_ADDR") or "")
    if not trusted or not _in(peer, trusted):
        return peer
    hops = [h for h in (environ.get("HTTP_X_FORWARDED_FOR") or "").split(",") if h.strip()]
    for hop in reversed(hops):
        addr = _parse_ip(hop)
        if addr is None:
            return peer  # a garbled chain: trust only what we saw
        if not _in(addr, trusted):
            return addr
    return peer


def bare_host(value: str) -> str:
    host = (value or "").strip().lower()
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0].rstrip(".") if host.count(":") == 1 else host.rstrip(".")


class AccessPolicy:
    """The replay app's access settings, parsed once."""

    def __init__(self, root, settings: dict):
        self.root = root
        self.reading_room = tuple(ipaddress.ip_network(n) for n in settings["reading_room"])
        self.trusted = tuple(ipaddress.ip_network(n) for n in settings["trusted_proxies"])
        self.restricted_hosts = frozenset(bare_host(h) for h in settings["restricted_hosts"])
        self.staff_url = settings["staff_url"]
        self.grants = Grants(root, settings["restricted_minutes"]) if self.restricted_hosts else None

    def resolve(self, environ: dict, cookies: dict) -> RequestAccess:
        host = bare_host(environ.get("HTTP_HOST") or environ.get("SERVER_NAME") or "")
        if host in self.restricted_hosts and self.grants is not None:
            user = self.grants.user_for_cookie(cookies.get(COOKIE), host)
            return RequestAccess("staff" if user else "public", True, user)
        addr = client_address(environ, self.trusted)
        level = "reading-room" if _in(addr, self.reading_room) else "public"
        return RequestAccess(level, False, None, str(addr or ""))


def level() -> str:
    access = g.get("access")
    return access.level if access is not None else "public"


def rules(coll: str) -> RuleSet:
    """The collection's rule set (compiled again when its files change)."""
    return ext()["collections"].rules(coll)


def register(app: Flask, policy: AccessPolicy) -> None:
    app.extensions["strata_access"] = policy

    @app.before_request
    def _resolve():
        g.access = policy.resolve(request.environ, request.cookies)
        if g.access.restricted_host and request.path == ENTRY_PATH:
            return _enter(policy)
        if g.access.restricted_host and g.access.user is None and not request.path.startswith("/static/"):
            page = render_template("errors/restricted_host.html", staff_url=policy.staff_url, status=403)
            return page, 403, {"Cache-Control": "no-store"}
        return None

    @app.after_request
    def _headers(response):
        if response.status_code == 451 or (g.get("access") is not None and g.access.level != "public"):
            response.headers["Cache-Control"] = "private, no-store"  # no shared cache keeps a restricted answer
            response.vary.add("Cookie")
        return response


def _enter(policy: AccessPolicy):
    assert policy.grants is not None
    host = bare_host(request.host)
    value = policy.grants.enter(request.args.get("token", ""), host)
    if value is None:
        page = render_template("errors/restricted_host.html", staff_url=policy.staff_url, status=403)
        return page, 403, {"Cache-Control": "no-store"}
    target = request.args.get("next", "/")
    if not target.startswith("/") or target.startswith(("//", "/\\")) or any(c in target for c in "\r\n"):
        target = "/"
    # A page of this host sends the browser on: the navigation is then the restricted host's own,
    # so its SameSite=Strict cookie goes with it even when the console is another site.
    response = make_response(render_template("errors/restricted_enter.html", target=target, status=200))
    response.set_cookie(
        COOKIE,
        value,
        max_age=policy.grants.minutes * 60,
        path="/",
        secure=request.is_secure,
        httponly=True,
        samesite="Strict",
    )
    response.headers["Cache-Control"] = "no-store"
    return response

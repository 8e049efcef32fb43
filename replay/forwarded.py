"""The scheme a request came with, when a trusted reverse proxy terminated TLS in front of Strata.

Behind a proxy, every request reaches ``strata serve`` over plain HTTP; the proxy says what the
browser used in ``X-Forwarded-Proto``. Only a connection from a ``--trusted-proxy`` address is
believed (anyone else could send the header), and only its last value (the one the nearest proxy
added). ``request.is_secure`` then tells the truth, so the staff console's cookies are ``Secure`` and
``__Host-`` prefixed, the restricted host's too, and HSTS is sent (``--hsts``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from replay.access import client_address


class TrustedProxyScheme:
    """WSGI middleware: ``wsgi.url_scheme`` from a trusted proxy's ``X-Forwarded-Proto``."""

    def __init__(self, app, trusted: Iterable[str]):
        self.app = app
        self.trusted = tuple(ipaddress.ip_network(str(n), strict=False) for n in trusted)

    def __call__(self, environ, start_response):
        forwarded = environ.get("HTTP_X_FORWARDED_PROTO")
        if forwarded and self._from_proxy(environ):
            scheme = forwarded.split(",")[-1].strip().lower()
            if scheme in ("http", "https"):
                environ["wsgi.url_scheme"] = scheme
        return self.app(environ, start_response)

    def _from_proxy(self, environ) -> bool:
        peer = client_address({"REMOTE_ADDR": environ.get("REMOTE_ADDR", "")}, ())
        return peer is not None and any(peer.version == n.version and peer in n for n in self.trusted)

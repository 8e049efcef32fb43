"""A fixture site's content model on a running ``SiteServer``: start/stop, a context manager, its
``base_url`` and ``url(path)``. The test sites (CJK pages, metadata pages) subclass it. And whether a
stopped site is down."""

from __future__ import annotations

import socket
from typing import Self
from urllib.parse import urlsplit

from demo.site_server import SiteServer


def live_site_is_down(base_url: str) -> bool:
    """Nothing answers at ``base_url`` any more (the replay tests stop the live site first)."""
    parts = urlsplit(base_url)
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=1).close()
    except OSError:
        return True
    return False


class ServedSite:
    def __init__(self, model, port: int = 0):
        self._server = SiteServer(model, port=port)

    def start(self) -> Self:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return self._server.base_url

    def url(self, path: str) -> str:
        return self.base_url + path

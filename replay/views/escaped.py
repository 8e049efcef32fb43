"""Requests that escaped rewriting, sent back into the archive.

A script in an archived page can build a URL that wombat.js does not rewrite (``/static/x.css``
on the archive's own host). pywb's front end answers such a 404 with a redirect into the page's
snapshot, found from the ``Referer``; Strata does the same, for GET and HEAD from its own pages.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from flask import request

from replay.address import parse_address
from replay.errors import ReplayError
from replay.filters import replay_url


def redirect_target() -> str | None:
    """Where an escaped request belongs: the same path on the archived site of the referring page,
    as of the same time. None when the request was not made by a replayed page."""
    referer = request.headers.get("Referer")
    if request.method not in ("GET", "HEAD") or not referer:
        return None
    parts = urlsplit(referer)
    prefix = request.script_root + "/"
    if parts.netloc != request.host or not parts.path.startswith(prefix):
        return None
    ref_path = parts.path[len(prefix) :] + (f"?{parts.query}" if parts.query else "")
    coll, _, rest = ref_path.partition("/")
    try:
        page = parse_address(coll, rest)
    except ReplayError:
        return None
    if page.kind not in ("replay", "timegate"):
        return None
    escaped = request.full_path if request.query_string else request.path
    escaped = escaped[len(request.script_root) :]
    return replay_url(coll, page.timestamp, urljoin(page.url, escaped))

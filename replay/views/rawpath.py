"""The rest of a request's path as the client sent it, escapes and all: archived URLs are looked up
by their own bytes, which werkzeug's decoded ``request.path`` no longer has."""

from __future__ import annotations

from urllib.parse import quote

from flask import request


def raw_rest(prefix: str) -> str:
    """What follows ``prefix`` (after the script root) in the raw request target, with its query."""
    prefix = request.script_root + prefix
    raw = request.environ.get("REQUEST_URI") or request.environ.get("RAW_URI") or ""
    if not raw.startswith(prefix):
        raw = quote(request.script_root + request.path, safe="/:@!$&'()*+,;=~%")
        if request.query_string:
            raw += "?" + request.query_string.decode("latin-1")
    return raw[len(prefix) :]

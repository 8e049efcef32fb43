"""Everything under /<collection>/...: replay, Memento TimeGate and TimeMap, and the calendar.

The address is read from the raw request URI (``REQUEST_URI``, set by Strata's server and by
werkzeug), not from Flask's decoded path: an archived URL's percent-escapes and query string are
part of what is looked up.
"""

from __future__ import annotations

from urllib.parse import quote

from flask import Blueprint, Response, request, url_for

from replay.address import Address, parse_address
from replay.asof import pad_as_of
from replay.context import ext
from replay.views import calendar

bp = Blueprint("replay", __name__)
METHODS = ["GET", "HEAD", "POST"]


@bp.route("/<coll>/<path:rest>", methods=METHODS)
def replay(coll: str, rest: str):
    ext()["collections"].require(coll)
    addr = parse_address(coll, _raw_rest(coll))
    if addr.kind == "calendar":
        return calendar.render(addr)
    status, headers, body = ext()["engine"].replay(request.environ, addr, {"strata": _links(addr)})
    response = Response(body, status=status, headers=headers, direct_passthrough=True)
    if not any(k.lower() == "content-type" for k, _ in headers):
        del response.headers["Content-Type"]  # werkzeug adds a default; the archive had none
    return response


def _raw_rest(coll: str) -> str:
    prefix = request.script_root + "/" + coll + "/"
    raw = request.environ.get("REQUEST_URI") or request.environ.get("RAW_URI") or ""
    if not raw.startswith(prefix):
        raw = quote(request.script_root + request.path, safe="/:@!$&'()*+,;=~%")
        if request.query_string:
            raw += "?" + request.query_string.decode("latin-1")
    return raw[len(prefix) :]


def _links(addr: Address) -> dict:
    """Links the replay banner shows (rendered by pywb from the request's template params)."""
    return {
        "as_of": pad_as_of(addr.timestamp) if addr.timestamp else "",
        "home_url": url_for("home.index"),
        "coll_url": url_for("collection.index", coll=addr.coll),
        "calendar_url": f"{request.script_root}/{addr.coll}/{addr.timestamp}*/{addr.url}",
    }

"""Everything under /<collection>/...: replay, Memento TimeGate and TimeMap, and the calendar.

The address is read from the raw request URI (``REQUEST_URI``, set by Strata's server and by
werkzeug), not from Flask's decoded path: an archived URL's percent-escapes and query string are
part of what is looked up.
"""

from __future__ import annotations

from flask import Blueprint, Response, request, url_for

from replay import access
from replay.address import Address, parse_address
from replay.asof import pad_as_of
from replay.context import ext
from replay.views import calendar
from replay.views.rawpath import raw_rest

bp = Blueprint("replay", __name__)
METHODS = ["GET", "HEAD", "POST"]


@bp.route("/<coll>/<path:rest>", methods=METHODS)
def replay(coll: str, rest: str):
    ext()["collections"].require(coll)
    addr = parse_address(coll, raw_rest(f"/{coll}/"))
    if addr.kind == "calendar":
        return calendar.render(addr)
    status, headers, body = ext()["engine"].replay(request.environ, addr, {"strata": _links(addr)}, access.level())
    response = Response(body, status=status, headers=headers, direct_passthrough=True)
    if not any(k.lower() == "content-type" for k, _ in headers):
        del response.headers["Content-Type"]  # werkzeug adds a default; the archive had none
    return response


def _links(addr: Address) -> dict:
    """Links the replay banner shows (rendered by pywb from the request's template params)."""
    return {
        "as_of": pad_as_of(addr.timestamp) if addr.timestamp else "",
        "home_url": url_for("home.index"),
        "coll_url": url_for("collection.index", coll=addr.coll),
        "calendar_url": f"{request.script_root}/{addr.coll}/{addr.timestamp}*/{addr.url}",
    }

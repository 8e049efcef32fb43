"""``/api/captures/<coll>/<url>``: the calendar of a URL as JSON (``calendar.render_json``).

Beside ``/api/search`` rather than under ``/<coll>/``: there every path is a replay address and the
archived URL's own query string belongs to it, so neither a ``?format=json`` nor a path segment
could be told from an archived URL (and ``timemap/json/`` is pywb's TimeMap). ``api`` is a reserved
collection name. The archived URL is read from the raw request URI, as replay does, so its
percent-escapes and query string are looked up as they are.
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from replay.address import Address, check_url
from replay.context import ext, public
from replay.views import calendar
from replay.views.rawpath import raw_rest
from strata.errors import StrataError

bp = Blueprint("capture_api", __name__)


@bp.get("/api/captures/<coll>/<path:url>")
def captures(coll: str, url: str):
    try:
        ext()["collections"].require(coll)
        address = Address(coll, "calendar", check_url(coll, raw_rest(f"/api/captures/{coll}/")))
        return calendar.render_json(address)
    except StrataError as exc:
        return jsonify({"error": public(exc.message)}), exc.http_status

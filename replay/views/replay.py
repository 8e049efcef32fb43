"""Everything under /<collection>/...: replay, Memento TimeGate and TimeMap, and the calendar.

The address is read from the raw request URI (``REQUEST_URI``, set by Strata's server and by
werkzeug), not from Flask's decoded path: an archived URL's percent-escapes and query string are
part of what is looked up.
"""

from __future__ import annotations

from flask import Blueprint, Response, redirect, request, url_for
from warcio.timeutils import http_date_to_timestamp

from index.storage import state
from replay import access, origins
from replay.address import Address, parse_address
from replay.asof import pad_as_of
from replay.banner import BannerNav
from replay.context import ext
from replay.views import calendar
from replay.views.lasting import default_collection, viewer
from replay.views.rawpath import raw_rest

bp = Blueprint("replay", __name__)
METHODS = ["GET", "HEAD", "POST"]


@bp.route("/<coll>/<path:rest>", methods=METHODS)
def replay(coll: str, rest: str):
    collection = ext()["collections"].require(coll)
    addr = parse_address(coll, raw_rest(f"/{coll}/"))
    elsewhere = origins.replay_elsewhere(addr, lambda: _public(addr))
    if elsewhere:  # archived content on its own host, Strata's pages on theirs (replay.origins)
        return redirect(elsewhere, code=302)
    if addr.kind == "calendar":
        return calendar.render(addr)
    walled = origins.kind() in (origins.RESTRICTED, origins.READING_ROOM)
    status, headers, body = ext()["engine"].replay(
        request.environ,
        addr,
        {"strata": _links(addr, collection)},
        access.level(),
        frame_ancestors="'self'" if walled else None,
        same_origin_only=walled,
    )
    later = _later_capture(addr, headers)
    if later:  # counted by the banner of the page that embeds it (head_insert.html)
        headers = [*headers, ("Server-Timing", f'strata-later;desc="{later}"')]
    response = Response(body, status=status, headers=headers, direct_passthrough=True)
    if not any(k.lower() == "content-type" for k, _ in headers):
        del response.headers["Content-Type"]  # werkzeug adds a default; the archive had none
    return response


def _public(addr: Address) -> bool:
    """Whether anyone may see the capture ``addr`` names (as of its timestamp)."""
    return access.rules(addr.coll).visible(addr.url, pad_as_of(addr.timestamp), "public")


def _links(addr: Address, collection) -> dict:
    """Links the replay banner shows (rendered by pywb from the request's template params)."""
    pages = origins.pages_base()  # the banner's links lead to Strata's pages, on their own host
    links: dict[str, object] = {
        "as_of": pad_as_of(addr.timestamp) if addr.timestamp else "",
        "home_url": pages + url_for("home.index"),
        "coll_url": pages + url_for("collection.index", coll=addr.coll),
        "calendar_url": f"{pages}{request.script_root}/{addr.coll}/{addr.timestamp}*/{addr.url}",
        "nav": None,
    }
    if addr.kind in ("replay", "timegate") and addr.mod == "":  # the top-level page, the one with a banner
        with ext()["collections"].db(addr.coll) as conn:
            runs = state.runs(conn) if conn is not None else []
        links["nav"] = BannerNav(
            collection,
            addr.timestamp,
            runs,
            request.script_root,
            _public_base(),
            default_collection(),
            viewer(),
        )
    return links


def _public_base() -> str:
    """Where citations point: the public archive (``public_url``), whichever host served the page."""
    configured = ext()["settings"]["public_url"]
    return configured.rstrip("/") if configured else request.host_url.rstrip("/") + request.script_root


def _later_capture(addr: Address, headers: list) -> str | None:
    """The capture's timestamp when it is later than the snapshot asked for (no earlier one exists)."""
    if addr.kind != "replay" or not addr.timestamp:
        return None
    memento = next((v for k, v in headers if k.lower() == "memento-datetime"), None)
    if not memento:
        return None
    try:
        captured = http_date_to_timestamp(memento)
    except ValueError:
        return None
    return captured if captured > pad_as_of(addr.timestamp) else None

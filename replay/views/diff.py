"""``/<coll>/diff/<ts1>/<ts2>/<url>``: two captures of a URL compared (``index.compare.diff``), and
``/<coll>/diff?url=&from=&to=``, the calendar's compare form, which redirects to that address."""

from __future__ import annotations

from flask import Blueprint, redirect, render_template, request

from index.compare.diff import compare
from replay.address import check_timestamp, check_url
from replay.context import ext
from replay.errors import BadAddress
from replay.filters import replay_url
from replay.views.lasting import viewer
from replay.views.rawpath import raw_rest

bp = Blueprint("diff", __name__)
HINT = "Use /<collection>/diff/<timestamp>/<timestamp>/<url>, e.g. /coll/diff/20240101/20240201/https://example.org/"


@bp.get("/<coll>/diff")
def form(coll: str):
    ext()["collections"].require(coll)
    args = request.args
    ts1, ts2, url = (args.get(k, "").strip() for k in ("from", "to", "url"))
    if not (ts1 and ts2 and url):
        raise BadAddress(coll, "Choose two captures to compare.", HINT)
    check_timestamp(coll, ts1), check_timestamp(coll, ts2)
    return redirect(f"{request.script_root}/{coll}/diff/{ts1}/{ts2}/{check_url(coll, url)}", code=303)


@bp.get("/<coll>/diff/<path:rest>")
def page(coll: str, rest: str):
    collection = ext()["collections"].require(coll)
    parts = raw_rest(f"/{coll}/diff/").split("/", 2)
    if len(parts) < 3:
        raise BadAddress(coll, "A diff address names two timestamps and a URL.", HINT)
    ts1, ts2, url = check_timestamp(coll, parts[0]), check_timestamp(coll, parts[1]), check_url(coll, parts[2])
    result = compare(collection, url, ts1, ts2, viewer())
    return render_template(
        "diff/index.html",
        coll=coll,
        result=result,
        old_href=replay_url(coll, result.old.version.timestamp, result.url),
        new_href=replay_url(coll, result.new.version.timestamp, result.url),
    )

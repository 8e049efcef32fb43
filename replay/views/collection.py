"""A collection's page: its sites, a URL lookup box, and its snapshots (harvest runs)."""

from __future__ import annotations

from flask import Blueprint, redirect, render_template, request

from index.access.counts import VisibleCounts
from replay import access
from replay.address import check_url
from replay.context import ext
from replay.filters import replay_url

bp = Blueprint("collection", __name__)


@bp.get("/<coll>/", strict_slashes=False)
def index(coll: str):
    collections = ext()["collections"]
    collections.require(coll)  # before any redirect: an unknown name may be a request that escaped rewriting
    if not request.path.endswith("/"):
        return redirect(request.script_root + f"/{coll}/", code=308)
    wanted = request.args.get("url", "").strip()
    if wanted:
        url = check_url(coll, wanted)
        star = "*" if request.args.get("match") == "prefix" else ""
        return redirect(replay_url(coll, "*", url + star), code=303)
    with collections.db(coll) as conn:
        if conn is None:
            sites, runs, seeds = [], [], []
        else:
            counts = VisibleCounts(conn, collections.rules(coll), access.level())
            sites, runs, seeds = counts.sites(), counts.runs(), counts.seeds()
    return render_template(
        "collection/index.html", coll=coll, sites=sites, runs=runs, seeds=seeds, has_db=conn is not None
    )

"""A host's site map: ``/<coll>/sitemap/<host>?folder=/news/&since=2024-01-01``, its folders and
pages one level at a time with their counts, a treemap of them (``replay.sitemap_chart``), and the
same as JSON at ``/api/sitemap/<coll>/<host>`` (same parameters). Counts are the reader's
(``index.access.sitemap`` through ``index.access.counts``); a host or folder with nothing visible is a 404,
as if never archived. Linked from the collection page's list of sites."""

from __future__ import annotations

from flask import Blueprint, jsonify, render_template, request

from index.access.sitemap import SiteMap, check_folder, site_map
from index.fulltext.params import parse_when
from replay import access
from replay.context import ext
from replay.errors import BadAddress
from replay.sitemap_chart import treemap
from strata.errors import StrataError

bp = Blueprint("sitemap", __name__)


def _map(coll: str, host: str) -> SiteMap:
    collections = ext()["collections"]
    collections.require(coll)
    host = host.strip().lower().strip(".")
    folder = check_folder(request.args.get("folder"))
    since = parse_when(request.args.get("since"))  # a bad date: QueryError, 400 with how to write it
    with collections.db(coll) as conn:
        found = site_map(conn, collections.rules(coll), access.level(), host, folder, since) if conn else None
    if found is None:
        raise BadAddress(
            coll,
            f"Nothing archived in {coll} under {host}{folder}.",
            f"See the sites of the collection at /{coll}/",
        )
    return found


@bp.get("/<coll>/sitemap/<host>")
def page(coll: str, host: str):
    found = _map(coll, host)
    return render_template("sitemap/index.html", coll=coll, map=found, pictures=treemap(found.entries))


@bp.get("/api/sitemap/<coll>/<host>")
def api(coll: str, host: str):
    try:
        found = _map(coll, host)
    except StrataError as exc:
        return jsonify({"error": exc.message}), exc.http_status
    return jsonify({"collection": coll, **found.as_dict()})

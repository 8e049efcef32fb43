"""A site's publications page: the PDFs archived on one host, with titles and dates, each one
click from its replay (``/<coll>/publications/<host>``; the same list as JSON at
``/api/publications/<coll>/<host>``). Linked from the collection page's list of sites.

Entries come from the full-text index (``index.fulltext.publications``); only the captures the
reader's access level may see (``index.access.rules``) are listed or counted.
"""

from __future__ import annotations

from flask import Blueprint, jsonify, render_template

from index.access.rules import rules_for
from index.fulltext.publications import publications
from replay import access
from replay.context import ext
from replay.filters import replay_url
from strata.errors import StrataError

bp = Blueprint("publications", __name__)


def _listing(coll: str, host: str) -> dict:
    collection = ext()["collections"].require(coll)
    host = host.strip().lower().strip(".")
    result = publications(collection, host, shown=rules_for(collection.path).shown_to(access.level()))
    for entry in result["entries"]:
        entry["replay"] = replay_url(coll, entry["last"], entry["url"])
        entry["calendar"] = replay_url(coll, entry["last"] + "*", entry["url"])
    return result


@bp.get("/<coll>/publications/<host>")
def page(coll: str, host: str):
    result = _listing(coll, host)
    return render_template("publications/index.html", coll=coll, result=result)


@bp.get("/api/publications/<coll>/<host>")
def api(coll: str, host: str):
    try:
        result = _listing(coll, host)
    except StrataError as exc:
        return jsonify({"error": exc.message}), exc.http_status
    return jsonify({"collection": coll, **result})

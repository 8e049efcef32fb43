"""``/<coll>/cdx``: pywb's CDX server API (``replay.cdxapi``), routed before replay so that
``/<coll>/cdx?url=...`` is a query, not an archived URL named ``cdx``.

    url        required; a URL, ``example.org/*`` (prefix) or ``*.example.org`` (domain) as in pywb
    matchType  exact | prefix | host | domain
    from, to   1 to 14 digits;  closest (with sort=closest): nearest captures first
    limit      at most ``cdx_limit`` lines (a setting); sort: reverse | closest
    filter     [!][=|~]field:value (repeatable); fl: fields, comma-separated
    output     cdxj (pywb's default) | json (one object a line) | text | link

Errors are answered as JSON ``{"error": ...}``: 400 for a bad parameter, 404 for an unknown
collection (and pywb's own 404 ``{"message": ...}`` when nothing matches), 503 past the time bound.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from replay import access
from replay.cdxapi import CdxQueryError, CdxTimeUp
from replay.context import ext, public
from strata.errors import StrataError

bp = Blueprint("cdx", __name__)


@bp.get("/<coll>/cdx")
def cdx(coll: str):
    try:
        ext()["collections"].require(coll)
        answer = ext()["cdx"].query(coll, request.environ, access.level())
    except CdxTimeUp as exc:
        return jsonify({"error": public(str(exc))}), 503
    except (CdxQueryError, StrataError) as exc:
        return jsonify({"error": public(exc.message)}), exc.http_status
    response = Response(answer.body, status=answer.status, content_type=answer.content_type)
    # wayback's /cdx says max-age=86400; here a takedown must apply at the next request, and what a
    # reading room sees must not reach anyone else through a shared cache
    response.headers["Cache-Control"] = "no-cache" if access.level() == "public" else "private, no-store"
    if answer.truncated:
        response.headers["X-Strata-CDX-Truncated"] = f"at most {ext()['settings']['cdx_limit']} lines are given"
    return response

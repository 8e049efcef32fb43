"""Full-text search in the replay application: the search page (``/search``) and a JSON API
(``/api/search``) with the same parameters.

    q         the query: words, "phrases", AND / OR / NOT, -word, parentheses (index.fulltext.query)
    from, to  capture dates: 2024, 2024-03, 2024-03-05, an ISO 8601 date-time or 14 digits
    site      host or domain; type: html, pdf, image ... or a MIME type
    title, author, keyword, lang, published_from, published_to
              the page's own metadata (index.fulltext.filters): words of its title, of its author
              or publisher, of its keywords; its language; its published date
    in        all (default: main text and boilerplate, boilerplate weighing less) | main
    c         collection (repeatable; default: all)
    sort      relevance | date | oldest; page, per_page

``/search/export.csv`` and ``/search/export.jsonl`` stream every hit of the same query
(``index.fulltext.export``), at most ``search_export_limit`` (a replay setting); the search page links
to both ("download these results").

Each hit links to the replay of its capture nearest the chosen range (``/<coll>/<ts>/<url>``)
and to the URL's calendar (``/<coll>/<ts>*/<url>``). The collections root comes from
``current_app.config["STRATA_ROOT"]`` (or the replay application's own collections).
A malformed query is answered 400 with the reason, on the page or as ``{"error": ...}``.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from flask import Blueprint, Response, current_app, jsonify, render_template, request, stream_with_context

from index.fulltext.fields import (
    EXPORT_SELECTING,
    FACETS,
    FIELDS,
    FILTER_PARAMS,
    META_PARAMS,
    PARAMS,
    SELECTING,
    params_of,
)
from index.fulltext.params import MAX_PER_PAGE, SearchParams
from index.fulltext.query import search
from index.fulltext.text import MIME_GROUPS
from replay.errors import public_message
from replay.histogram_chart import histogram_chart
from strata.errors import QueryError, StrataError

bp = Blueprint("search", __name__, template_folder="templates")
EXPORT_TIME_LIMIT = 30.0  # seconds per collection for a download's search


def _root() -> Path:
    root = current_app.config.get("STRATA_ROOT")
    if root is None:
        replay = current_app.extensions.get("strata_replay")
        if replay is None:
            raise RuntimeError("set app.config['STRATA_ROOT'] to the collections root")
        root = replay["collections"].root
    return Path(root)


def _params(per_page_default: int) -> SearchParams:
    return SearchParams(**params_of(request.args.get, request.args.getlist, per_page_default))


def _level() -> str:
    """The request's access level (``replay.access``); public when mounted without it."""
    from replay.access import level

    return level()


def _links(result: dict) -> None:
    base = request.script_root
    for hit in result["hits"]:
        hit["replay"] = f"{base}/{hit['collection']}/{hit['replay_ts']}/{hit['url']}"
        hit["calendar"] = f"{base}/{hit['collection']}/{hit['replay_ts']}*/{hit['url']}"


def _href(**changes) -> str:
    """This search with some parameters changed (None removes one); back to page 1."""
    args = {k: request.args.getlist(k) for k in PARAMS if request.args.getlist(k)}
    for key, value in changes.items():
        if value is None:
            args.pop(key, None)
        else:
            args[key] = [value]
    if "page" not in changes:
        args.pop("page", None)
    return request.path + "?" + urlencode([(k, v) for k, vs in args.items() for v in vs])


@bp.get("/api/search")
def api():
    try:
        result = search(_root(), _params(per_page_default=20), access_level=_level())
    except StrataError as exc:
        return jsonify({"error": public_message(exc.message, _root())}), exc.http_status
    _links(result)
    return jsonify(result)


def _export_href(fmt: str) -> str:
    """The download address of this search's every hit, as ``fmt`` (csv or jsonl)."""
    args = [(k, v) for k in PARAMS for v in request.args.getlist(k) if v]
    return request.script_root + "/search/export." + fmt + "?" + urlencode(args)


@bp.get("/search/export.<fmt>")
def export(fmt: str):
    """Every hit of the query, streamed as CSV or JSON Lines, at most ``search_export_limit``; a cut
    file ends with a line that says so (and ``X-Strata-Export-Truncated``)."""
    from index.fulltext.export import all_hits, csv_lines, jsonl_lines

    if fmt not in ("csv", "jsonl"):
        return jsonify({"error": f"no export as {fmt!r}: use /search/export.csv or /search/export.jsonl"}), 404
    limit = _settings().get("search_export_limit", 10000)
    try:
        if not any(request.args.get(k) for k in EXPORT_SELECTING):
            raise QueryError(f"give a query or a filter ({', '.join(EXPORT_SELECTING)}) to export its hits")
        hits = all_hits(_root(), _params(per_page_default=1), time_limit=EXPORT_TIME_LIMIT, level=_level())
    except StrataError as exc:
        return jsonify({"error": public_message(exc.message, _root())}), exc.http_status
    base = request.host_url.rstrip("/") + request.script_root  # absolute: the file leaves the site
    lines = csv_lines(hits, limit, base) if fmt == "csv" else jsonl_lines(hits, limit, base)
    mime = "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson; charset=utf-8"
    response = Response(stream_with_context(line.encode("utf-8") for line in lines), mimetype=None, content_type=mime)
    response.headers["Content-Disposition"] = f'attachment; filename="search-results.{fmt}"'
    response.headers["X-Strata-Export-Total"] = str(hits.total)
    if hits.total > limit:
        response.headers["X-Strata-Export-Truncated"] = f"the first {limit} of {hits.total} hits"
    if hits.timed_out:
        response.headers["X-Strata-Export-Timed-Out"] = "the search ran out of time: the hits are partial"
    return response


def _settings() -> dict:
    replay = current_app.extensions.get("strata_replay")
    return replay["settings"] if replay is not None else {}


@bp.get("/search")
def page():
    from index.collection import list_collections

    root = _root()
    result, error, status = None, None, 200
    if any(request.args.get(k) for k in SELECTING):
        try:
            result = search(root, _params(per_page_default=10), access_level=_level())
            _links(result)
        except StrataError as exc:
            error, status = public_message(exc.message, root), exc.http_status
    return render_template(
        "search/results.html",
        result=result,
        error=error,
        args=request.args,
        href=_href,
        collections=list_collections(root),
        chosen=request.args.getlist("c"),
        mime_groups=MIME_GROUPS,
        max_per_page=MAX_PER_PAGE,
        export_href=_export_href,
        export_limit=_settings().get("search_export_limit", 10000),
        meta_open=any(request.args.get(k) for k in META_PARAMS),
        # the form's first group (dates, site, type, order, collection) stays unfolded on a narrow
        # screen while one of them is in use
        filters_active=any(
            request.args.get(field.param) not in (None, "", field.default)
            for field in FIELDS
            if field.kind in ("capture", "order", "collection")
        ),
        # the filters given, each to be removed by "clear filters"
        filters={k: None for k in FILTER_PARAMS} if any(request.args.get(k) for k in FILTER_PARAMS) else {},
        fields={field.param: field for field in FIELDS},
        facets=FACETS,
        chart=histogram_chart(result["histogram"]) if result else None,
    ), status

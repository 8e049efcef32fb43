"""A collection's holdings: ``/<coll>/holdings``, its captures, bytes and the kinds of its captures
(new, changed, unchanged, deleted, other) per month and per site, as bar charts and tables, and the
same as CSV at ``/<coll>/holdings.csv?by=month`` (or ``by=site``). Counted as the reader's level sees
the collection (``index.access.counts.visible_holdings``): a hidden capture counts nowhere."""

from __future__ import annotations

import csv
import io

from flask import Blueprint, Response, render_template, request

from index.access.counts import HOLDINGS_KINDS, visible_holdings
from index.collection_meta import read_metadata
from replay import access
from replay.context import ext
from replay.errors import BadAddress

bp = Blueprint("holdings", __name__)
SITE_BARS = 50  # sites charted, the most captured first (the table lists them all)
CSV_FIELDS = {
    "month": ("month", "captures", "bytes", *HOLDINGS_KINDS),
    "site": ("site", "urls", "captures", "bytes", *HOLDINGS_KINDS, "first_month", "last_month"),
}


def _holdings(coll: str) -> dict:
    collections = ext()["collections"]
    collections.require(coll)
    with collections.db(coll) as conn:
        if conn is None:
            return {"months": [], "sites": []}
        return visible_holdings(conn, collections.rules(coll), access.level())


def _bars(rows: list[dict], value: str) -> list[dict]:
    """Each row's share of the largest, per kind (for captures) or whole (for bytes), in percent."""
    top = max((r[value] for r in rows), default=0) or 1
    out = []
    for r in rows:
        if value == "captures":
            parts = [(k, round(100 * r[k] / top, 2)) for k in HOLDINGS_KINDS if r[k]]
        else:
            parts = [("bytes", round(100 * r[value] / top, 2))]
        out.append({**r, "parts": parts})
    return out


@bp.get("/<coll>/holdings")
def page(coll: str):
    found = _holdings(coll)
    return render_template(
        "holdings/index.html",
        coll=coll,
        meta=read_metadata(ext()["collections"].require(coll)),
        months=_bars(found["months"], "captures"),
        month_bytes=_bars(found["months"], "bytes"),
        sites=found["sites"],
        site_bars=_bars(sorted(found["sites"], key=lambda r: -r["captures"])[:SITE_BARS], "captures"),
        kinds=HOLDINGS_KINDS,
        totals={k: sum(m[k] for m in found["months"]) for k in ("captures", "bytes", *HOLDINGS_KINDS)},
    )


@bp.get("/<coll>/holdings.csv")
def csv_file(coll: str):
    by = request.args.get("by", "month")
    if by not in CSV_FIELDS:
        raise BadAddress(coll, f"No holdings by {by!r}.", f"Use /{coll}/holdings.csv?by=month or ?by=site")
    found = _holdings(coll)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS[by])
    if by == "month":
        for m in found["months"]:
            month = f"{m['name'][:4]}-{m['name'][4:6]}"
            writer.writerow([month, m["captures"], m["bytes"], *(m[k] for k in HOLDINGS_KINDS)])
    else:
        for s in found["sites"]:
            first, last = (f"{s[k][:4]}-{s[k][4:6]}" for k in ("first", "last"))
            writer.writerow(
                [s["name"], s["urls"], s["captures"], s["bytes"], *(s[k] for k in HOLDINGS_KINDS), first, last]
            )
    response = Response(out.getvalue(), content_type="text/csv; charset=utf-8")
    response.headers["Content-Disposition"] = f'attachment; filename="{coll}-holdings-by-{by}.csv"'
    return response

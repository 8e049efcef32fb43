"""Changes side by side and over time.

- ``/<coll>/marked/<old|new>/<ts1>/<ts2>/<url>``: one of two captures of an HTML page as it rendered,
  with the words removed (old) or added (new) marked in place (``index.compare.marked``). The diff page
  shows the two in sandboxed frames next to each other. The document keeps nothing active and is
  sent with a ``sandbox`` Content-Security-Policy: archived code never runs here.
- ``/<coll>/changes/<url>``: a URL's changes over time: the captures that found it new, changed or
  deleted, newest first, each with how much changed and a link to its comparison with the capture
  before it.

Both list or read only the captures the reader may see (``index.cdx.versions.filter_captures``, through
``index.compare.diff.sides`` and ``read_versions``).
"""

from __future__ import annotations

from flask import Blueprint, Response, render_template, request

from index.cdx.capture_calendar import marks_of, years
from index.cdx.versions import read_versions
from index.compare.diff import payload, sides, words_changed
from index.compare.marked import mark_pair
from index.fulltext.pagetext import PageTexts
from index.storage import state
from replay import access
from replay.address import Address, check_timestamp, check_url
from replay.calendar_chart import timeline_of
from replay.context import ext
from replay.errors import BadAddress
from replay.views.lasting import viewer
from replay.views.rawpath import raw_rest

bp = Blueprint("changes", __name__)
HINT = "Use /<collection>/marked/old/<timestamp>/<timestamp>/<url>, as the comparison page links it."
ROWS = 300  # changes listed, newest first
WORD_ROWS = 60  # of them, the newest measured in words of main text too (from the search index)
CHANGES = ("new", "changed", "soft", "deleted", "capture")


@bp.get("/<coll>/marked/<path:rest>")
def marked(coll: str, rest: str):
    collection = ext()["collections"].require(coll)
    parts = raw_rest(f"/{coll}/marked/").split("/", 3)
    if len(parts) < 4 or parts[0] not in ("old", "new"):
        raise BadAddress(coll, "A marked page's address names old or new, two timestamps and a URL.", HINT)
    which, url = parts[0], check_url(coll, parts[3])
    left, right = sides(collection, url, check_timestamp(coll, parts[1]), check_timestamp(coll, parts[2]), viewer())
    old_headers, old_raw = payload(collection, left)
    new_headers, new_raw = payload(collection, right)

    def meta(headers) -> tuple[str | None, str | None]:
        get = headers.get_header if headers else (lambda _name: None)
        return get("Content-Type"), get("Content-Encoding")

    def address(side):
        return lambda target, mod: f"{request.script_root}/{coll}/{side.version.timestamp}{mod}/{target}"

    result = mark_pair(
        (old_raw, *meta(old_headers)), (new_raw, *meta(new_headers)), left.version.url, address(left), address(right)
    )
    response = Response(result.old_html if which == "old" else result.new_html, content_type="text/html; charset=utf-8")
    origin = request.host_url.rstrip("/")
    response.headers["Content-Security-Policy"] = (
        f"sandbox; default-src 'none'; img-src 'self' {origin} data:; style-src 'self' {origin} 'unsafe-inline'; "
        f"font-src 'self' {origin} data:; media-src 'self' {origin}; frame-ancestors 'self'"
    )
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Strata-Marked"] = f"removed={result.removed} added={result.added}"
    response.headers["Cache-Control"] = "no-cache" if access.level() == "public" else "private, no-store"
    return response


@bp.get("/<coll>/changes/<path:rest>")
def over_time(coll: str, rest: str):
    collection = ext()["collections"].require(coll)
    url = check_url(coll, raw_rest(f"/{coll}/changes/"))
    versions = read_versions(collection, url, viewer=viewer())
    if not versions:
        raise ext()["engine"].not_archived(Address(coll, "calendar", url), access.level())
    with ext()["collections"].db(coll) as conn:
        states = state.capture_marks(conn, [v.url for v in versions]) if conn is not None else {}
    marks = marks_of(versions, states)
    changes = [(i, m) for i, m in enumerate(marks) if m.kind in CHANGES]
    shown = list(reversed(changes))[:ROWS]
    rows = [(m, marks[i - 1] if i > 0 else None) for i, m in shown]
    return render_template(
        "changes/index.html",
        coll=coll,
        url=versions[0].url,
        marks=marks,
        changes=rows,
        words=_words(collection, rows[:WORD_ROWS]),
        total=len(changes),
        years=years(marks),
        timelines=[timeline_of(marks, y.year) for y in years(marks)],
    )


def _words(collection, rows) -> dict[str, tuple[int, int]]:
    """timestamp -> (words added, words removed) against the capture before, for the rows whose two
    texts the full-text index holds."""
    texts = PageTexts(collection)
    out: dict[str, tuple[int, int]] = {}
    try:
        for m, before in rows:
            new = texts.get(m.version.url, m.version.digest) if m.kind != "deleted" else ("", "")
            old = texts.get(before.version.url, before.version.digest) if before is not None else ("", "")
            if new is not None and old is not None:
                out[m.timestamp] = words_changed(old[1], new[1])
    finally:
        texts.close()
    return out

"""The calendar of a URL, and the list of archived URLs under a prefix. Reached through
``/<coll>/<ts>*/<url>`` and ``/<coll>/*/<url>*``; the calendar's list as JSON at
``/api/captures/<coll>/<url>`` (``render_json``).

The calendar (``render``): the years with captures, the chosen year's month grids and its timeline
of changes (``index.cdx.capture_calendar``, ``replay.calendar_chart``) over every capture the reader may
see (``index.cdx.versions.read_versions`` through ``filter_captures``), and the table of one period
(``<ts>``: a year, month or day; a longer timestamp, the month of the capture in force then, which is
outlined), each capture described by ``index.storage.state.capture_entries`` as ``strata captures`` prints
it: kind, HTTP status class, run and, for a revisit, its original."""

from __future__ import annotations

import itertools

from flask import jsonify, render_template

from index.cdx.capture_calendar import marks_of, month_grids, period_of, years
from index.cdx.versions import Version, original_finder, read_versions
from index.storage import state
from replay import access
from replay.address import Address
from replay.asof import pad_as_of
from replay.calendar_chart import timeline_of
from replay.context import ext
from replay.views.lasting import viewer

KIND_LABELS = {
    "new": "new",
    "changed": "changed",
    "soft": "changed (noise only)",
    "unchanged": "unchanged (revisit)",
    "not_modified": "not modified (304)",
    "deleted": "deleted",
    "redirect": "redirect",
    "error": "error",
    "capture": "capture",
    "revisit": "revisit",
}
TABLE_ROWS = 120  # captures the table lists of one month or day (the grids count them all; a day has its own)


def render(addr: Address):
    engine, settings = ext()["engine"], ext()["settings"]
    if addr.prefix:
        urls = engine.prefix(addr.coll, addr.url, settings["calendar_limit"], access.level())
        status = 200 if urls else 404
        return render_template("calendar/prefix.html", coll=addr.coll, url=addr.url, urls=urls), status
    collection = ext()["collections"].require(addr.coll)
    versions = read_versions(collection, addr.url, viewer=viewer())  # filter_captures: the access rules
    if not versions:  # hidden captures are absent, blocked or excluded: as for a URL never archived
        raise engine.not_archived(addr, access.level())
    urls = [v.url for v in versions]
    with ext()["collections"].db(addr.coll) as conn:
        states = state.capture_marks(conn, urls) if conn is not None else {}
        marks = marks_of(versions, states)
        period = period_of(marks, addr.timestamp, whole=TABLE_ROWS)
        prefix = period.prefix
        shown = [i for i, m in enumerate(marks) if m.timestamp.startswith(prefix)]
        rows = shown[:TABLE_ROWS]
        finder = original_finder(collection)  # a revisit's original as replay finds it
        details = state.capture_entries_in(conn, urls, period.prefix, finder) if conn is not None and rows else {}
    captures = [_capture(_cdx_of(marks[i].version), details) | {"change": marks[i].change} for i in rows]
    _withhold_originals(addr.coll, captures)
    as_of = pad_as_of(addr.timestamp) if addr.timestamp and len(addr.timestamp) >= 10 else None
    current = None
    if as_of:
        before = [m for m in marks if m.timestamp <= as_of]
        current = before[-1].timestamp if before else None
    days = [(day, list(group)) for day, group in itertools.groupby(captures, key=lambda c: c["timestamp"][:8])]
    months = month_grids(marks, period.year)
    return render_template(
        "calendar/index.html",
        coll=addr.coll,
        url=versions[0].url,
        marks=marks,
        years=years(marks),
        period=period,
        months=months,
        timeline=timeline_of(marks, period.year, months),
        in_period=len(shown),
        days=days,
        captures=captures,
        as_of=as_of,
        current=current,
        kinds=KIND_LABELS,
        # compare links: each capture with the one before it, in the period or not
        previous={marks[i].timestamp: marks[i - 1].timestamp for i in rows if i > 0},
    )


def _cdx_of(v: Version) -> dict:
    """A capture as ``_capture`` reads a CDX line."""
    return {
        "timestamp": v.timestamp,
        "url": v.url,
        "mime": v.mime,
        "status": v.status,
        "digest": v.digest,
        "filename": v.filename,
        "offset": str(v.offset),
        "length": str(v.length),
    }


def render_json(addr: Address):
    """The calendar's list as JSON: ``{"collection", "url", "captures": [...]}``, each capture with
    the fields of ``index.storage.state.CAPTURE_FIELDS`` (what ``strata captures --json`` prints)."""
    _, captures = _captures(addr)
    fields = state.CAPTURE_FIELDS
    return jsonify(
        {
            "collection": addr.coll,
            "url": captures[0]["url"],
            "captures": [{k: c["entry"].get(k) for k in fields} for c in captures],
        }
    )


def _captures(addr: Address) -> tuple[list, list[dict]]:
    engine, settings = ext()["engine"], ext()["settings"]
    cdx_lines = engine.captures(addr.coll, addr.url, limit=settings["calendar_limit"], level=access.level())
    if not cdx_lines:  # hidden captures are absent, blocked or excluded: as for a URL never archived
        raise engine.not_archived(addr, access.level())
    collections = ext()["collections"]
    with collections.db(addr.coll) as conn:
        finder = original_finder(collections.require(addr.coll))  # a revisit's original as replay finds it
        urls = [c["url"] for c in cdx_lines]
        details = state.capture_entries_by_location(conn, urls, finder) if conn is not None else {}
    captures = [_capture(cdx, details) for cdx in cdx_lines]
    _withhold_originals(addr.coll, captures)
    return cdx_lines, captures


def _withhold_originals(coll: str, captures: list[dict]) -> None:
    """Every revisit's original is named only when the reader may see it (the table and the JSON)."""
    shown = ext()["collections"].rules(coll).shown_to(access.level())
    if shown is not None:
        for capture in captures:
            _withhold_original(capture, shown)


def _withhold_original(capture: dict, shown) -> None:
    """A revisit's original is named (URL, file, offset) only when the reader may see it."""
    original = capture["original"]
    if original and not shown(original.get("url") or "", original.get("timestamp") or capture["timestamp"]):
        capture["original"] = None
        capture["entry"] = {**capture["entry"], "original": None}


def _capture(cdx, details: dict) -> dict:
    try:
        row = details.get((cdx.get("filename"), int(cdx.get("offset", -1))))
    except ValueError:
        row = None
    revisit = cdx.get("mime") == "warc/revisit"
    status = str(row["status"]) if row and row["status"] is not None else cdx.get("status", "")
    kind = row["kind"] if row else ("revisit" if revisit else "capture")
    entry = row or _entry_from_cdx(cdx, revisit)  # a collection indexed by wb-manager alone has no state
    return {
        "timestamp": cdx["timestamp"],
        "url": cdx["url"],
        "kind": kind,
        "kind_label": KIND_LABELS.get(kind, kind),
        "record": "revisit" if revisit else "response",
        "status": status or "-",
        "status_class": f"{status[0]}xx" if status[:1].isdigit() else "unknown",
        "run_id": row["run_id"] if row else None,
        "original": row["original"] if row else None,
        "entry": entry,
    }


def _entry_from_cdx(cdx, revisit: bool) -> dict:
    status = cdx.get("status", "")
    digest = cdx.get("digest")
    return {
        "timestamp": cdx["timestamp"],
        "date": None,
        "url": cdx["url"],
        "kind": None,
        "status": int(status) if status.isdigit() else None,
        "record_type": "revisit" if revisit else "response",
        "digest": f"sha1:{digest}" if digest and digest != "-" and ":" not in digest else digest,
        "mime": cdx.get("mime"),
        "run_id": None,
        "warc": cdx.get("filename"),
        "offset": int(cdx["offset"]) if str(cdx.get("offset", "")).isdigit() else None,
        "length": int(cdx["length"]) if str(cdx.get("length", "")).isdigit() else None,
        "original": None,
    }

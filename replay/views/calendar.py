"""The calendar of a URL (every capture, with its kind, HTTP status class, run and, for a revisit,
its original), and the list of archived URLs under a prefix. Reached through ``/<coll>/*/<url>`` and
``/<coll>/*/<url>*``; the same list as JSON at ``/api/captures/<coll>/<url>`` (``render_json``).
Each capture is described by ``index.storage.state.capture_entries``, as ``strata captures`` prints it."""

from __future__ import annotations

import itertools

from flask import jsonify, render_template

from index.storage import state
from replay import access
from replay.address import Address
from replay.asof import pad_as_of
from replay.context import ext

KIND_LABELS = {
    "new": "new",
    "changed": "changed",
    "soft": "changed (noise only)",
    "unchanged": "unchanged (revisit)",
    "not_modified": "not modified (304)",
    "deleted": "deleted",
    "redirect": "redirect",
    "error": "error",
}


def render(addr: Address):
    engine, settings = ext()["engine"], ext()["settings"]
    if addr.prefix:
        urls = engine.prefix(addr.coll, addr.url, settings["calendar_limit"], access.level())
        status = 200 if urls else 404
        return render_template("calendar/prefix.html", coll=addr.coll, url=addr.url, urls=urls), status
    cdx_lines, captures = _captures(addr)
    as_of = pad_as_of(addr.timestamp) if addr.timestamp else None
    current = None
    if as_of:
        before = [c for c in captures if c["timestamp"] <= as_of]
        current = before[-1]["timestamp"] if before else None
    days = [(day, list(group)) for day, group in itertools.groupby(captures, key=lambda c: c["timestamp"][:8])]
    return render_template(
        "calendar/index.html",
        coll=addr.coll,
        url=cdx_lines[0]["url"],
        days=days,
        captures=captures,
        as_of=as_of,
        current=current,
        previous={c["timestamp"]: p["timestamp"] for p, c in itertools.pairwise(captures)},  # compare links
    )


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
    with ext()["collections"].db(addr.coll) as conn:
        details = state.capture_entries_by_location(conn, [c["url"] for c in cdx_lines]) if conn is not None else {}
    return cdx_lines, [_capture(cdx, details) for cdx in cdx_lines]


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

"""The calendar of a URL (every capture, with its kind and HTTP status class), and the list of
archived URLs under a prefix. Reached through ``/<coll>/*/<url>`` and ``/<coll>/*/<url>*``."""

from __future__ import annotations

import itertools

from flask import render_template

from index.state import capture_details
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
    "error": "error",
}


def render(addr: Address):
    engine, settings = ext()["engine"], ext()["settings"]
    if addr.prefix:
        urls = engine.prefix(addr.coll, addr.url, settings["calendar_limit"])
        status = 200 if urls else 404
        return render_template("calendar/prefix.html", coll=addr.coll, url=addr.url, urls=urls), status
    cdx_lines = engine.captures(addr.coll, addr.url, limit=settings["calendar_limit"])
    if not cdx_lines:
        raise engine.not_archived(addr)
    with ext()["collections"].db(addr.coll) as conn:
        details = capture_details(conn, cdx_lines[0]["url"]) if conn is not None else {}
    captures = [_capture(cdx, details) for cdx in cdx_lines]
    as_of = pad_as_of(addr.timestamp) if addr.timestamp else None
    current = None
    if as_of:
        before = [c for c in captures if c["timestamp"] <= as_of]
        current = before[-1]["timestamp"] if before else None
    days = [(day, list(group)) for day, group in itertools.groupby(captures, key=lambda c: c["timestamp"][:8])]
    return render_template("calendar/index.html", coll=addr.coll, url=cdx_lines[0]["url"], days=days,
                           captures=captures, as_of=as_of, current=current)


def _capture(cdx, details: dict) -> dict:
    try:
        row = details.get((cdx.get("filename"), int(cdx.get("offset", -1))))
    except ValueError:
        row = None
    revisit = cdx.get("mime") == "warc/revisit"
    status = str(row["status"]) if row and row["status"] is not None else cdx.get("status", "")
    kind = row["class"] if row else ("revisit" if revisit else "capture")
    return {
        "timestamp": cdx["timestamp"],
        "url": cdx["url"],
        "kind": kind,
        "kind_label": KIND_LABELS.get(kind, kind),
        "record": "revisit" if revisit else "response",
        "status": status or "-",
        "status_class": f"{status[0]}xx" if status[:1].isdigit() else "unknown",
        "run_id": row["run_id"] if row else None,
    }

"""Every capture of a URL, as ``strata captures`` prints it and the calendar page shows it.

Read from the harvest state (``captures`` rows, read-only connection from ``index.lookup``): for
each capture its 14-digit timestamp and WARC-Date, kind (the class the harvest or the rebuild gave
it), HTTP status, record type, payload digest, MIME type, run, WARC file, offset and length; for a
revisit, its original: the URL and date the revisit refers to (``WARC-Refers-To-Target-URI`` and
``-Date``), or, for a revisit that does not say (wget's, wpull's), the latest response with the
same payload at or before it, this URL first; and where that original is, when the collection
holds it (``warc``/``offset`` None when it does not: a revisit of nothing).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

__all__ = ["FIELDS", "by_location", "captures_of", "find_url"]

FIELDS = ("timestamp", "date", "url", "kind", "status", "record_type", "digest", "mime", "run_id", "warc",
          "offset", "length", "original")
_COLUMNS = ("id, url, timestamp, warc_date, record_type, class, status, digest, mime, run_id, warc, offset, "
            "length, refers_to_uri, refers_to_date")


def captures_of(conn: sqlite3.Connection, url: str) -> list[dict]:
    """Every capture of exactly ``url``, oldest first (same second: in the order written)."""
    rows = conn.execute(f"SELECT {_COLUMNS} FROM captures WHERE url=? ORDER BY timestamp, id", (url,)).fetchall()
    return [_entry(conn, row) for row in rows]


def by_location(conn: sqlite3.Connection, urls: Iterable[str]) -> dict[tuple[str, int], dict]:
    """(WARC file, offset) -> capture entry, for the captures of ``urls`` (to label CDX lines)."""
    out: dict[tuple[str, int], dict] = {}
    for url in dict.fromkeys(urls):
        for entry in captures_of(conn, url):
            out[(entry["warc"], entry["offset"])] = entry
    return out


def find_url(conn: sqlite3.Connection, url: str) -> str | None:
    """The URL as the state holds it: ``url`` itself, or with ``http://`` / ``https://`` when it was
    given without a scheme, or with the ``/`` a bare host name stands for. None when none is held."""
    candidates = [url]
    if "://" not in url:
        candidates += [f"http://{url}", f"https://{url}"]
    candidates += [c + "/" for c in candidates if c.count("/") == 2]
    for candidate in candidates:
        if conn.execute("SELECT 1 FROM captures WHERE url=? LIMIT 1", (candidate,)).fetchone():
            return candidate
    return None


def _entry(conn: sqlite3.Connection, row) -> dict:
    entry = {
        "timestamp": row["timestamp"], "date": row["warc_date"], "url": row["url"], "kind": row["class"],
        "status": row["status"], "record_type": row["record_type"], "digest": row["digest"], "mime": row["mime"],
        "run_id": row["run_id"], "warc": row["warc"], "offset": row["offset"], "length": row["length"],
        "original": None,
    }
    if row["record_type"] == "revisit":
        entry["original"] = _original(conn, row)
    return entry


def _original(conn: sqlite3.Connection, row) -> dict:
    uri, date = row["refers_to_uri"], row["refers_to_date"]
    held = None
    if uri and date:
        held = conn.execute(
            "SELECT url, warc_date, timestamp, warc, offset FROM captures WHERE url=? AND warc_date=? "
            "AND record_type='response' ORDER BY id LIMIT 1", (uri, date)).fetchone()
    elif row["digest"]:
        held = conn.execute(
            "SELECT url, warc_date, timestamp, warc, offset FROM captures WHERE digest=? AND record_type='response' "
            "AND timestamp<=? ORDER BY url=? DESC, timestamp DESC, id DESC LIMIT 1",
            (row["digest"], row["timestamp"], row["url"])).fetchone()
        if held is not None:
            uri, date = held["url"], held["warc_date"]
    return {
        "url": uri, "date": date, "timestamp": _ts14(date) if date else None,
        "warc": held["warc"] if held is not None else None, "offset": held["offset"] if held is not None else None,
    }


def _ts14(warc_date: str) -> str:
    return "".join(ch for ch in warc_date if ch.isdigit())[:14]

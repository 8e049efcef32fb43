"""Read-only questions about a collection's harvest state, for readers such as the replay app.

Opens ``strata/harvest.sqlite`` read-only (``mode=ro``): a reader never creates, migrates or
locks the database the harvester writes (WAL lets both proceed). A collection without a database
(WARCs indexed by ``wb-manager`` alone) answers ``None`` to ``open_readonly`` and the caller falls
back to what the CDXJ index says.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

GONE_STATUSES = (404, 410)


def open_readonly(db_path: Path) -> sqlite3.Connection | None:
    path = Path(db_path)
    if not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0,
                               check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT 1 FROM captures LIMIT 1")
    except sqlite3.Error:
        return None
    return conn


@dataclasses.dataclass(frozen=True)
class Deletion:
    """A URL that answered 404/410 after answering 2xx."""

    url: str
    removed_seen: str       # 14-digit timestamp of the capture that found it gone
    status: int             # 404 or 410
    last_archived: str      # 14-digit timestamp of the last 2xx (or 304) capture before that


def deletion(conn: sqlite3.Connection, url: str, timestamp: str) -> Deletion | None:
    """The deletion in force at ``timestamp``: the latest capture at or before it is a 404/410,
    and a capture classed ``deleted`` follows the last 2xx capture. None otherwise."""
    rows = conn.execute(
        "SELECT timestamp, status, class FROM captures WHERE url=? AND timestamp<=? AND status IS NOT NULL "
        "ORDER BY timestamp DESC, id DESC LIMIT 200", (url, timestamp),
    ).fetchall()
    if not rows or rows[0]["status"] not in GONE_STATUSES:
        return None
    removed = None
    for row in rows:
        if 200 <= row["status"] < 300 or row["status"] == 304:  # 304: confirmed unchanged, still there
            if removed is None:
                return None
            return Deletion(url, removed["timestamp"], removed["status"], row["timestamp"])
        if row["class"] == "deleted":
            removed = row
    return None


def capture_details(conn: sqlite3.Connection, url: str) -> dict[tuple[str, int], dict]:
    """(warc file, offset) -> capture row, for labelling CDX lines of ``url`` with their class."""
    rows = conn.execute(
        "SELECT timestamp, record_type, class, status, warc, offset, run_id, refers_to_date FROM captures "
        "WHERE url=?", (url,),
    )
    return {(r["warc"], r["offset"]): dict(r) for r in rows}


def runs(conn: sqlite3.Connection) -> list[dict]:
    out = []
    for row in conn.execute("SELECT * FROM runs ORDER BY started DESC, run_id DESC"):
        run = dict(row)
        run["figures"] = json.loads(run.get("figures") or "{}")
        out.append(run)
    return out


def summary(conn: sqlite3.Connection) -> dict:
    """Counts for a collection: captures, URLs, runs, and its latest run."""
    captures = conn.execute("SELECT COUNT(*) FROM captures").fetchone()[0]
    urls = conn.execute("SELECT COUNT(DISTINCT url) FROM captures").fetchone()[0]
    all_runs = runs(conn)
    return {"captures": captures, "urls": urls, "runs": len(all_runs), "latest": all_runs[0] if all_runs else None}


def sites(conn: sqlite3.Connection) -> list[dict]:
    """Per host: first and last capture, number of snapshots (runs) it appears in, seeds."""
    rows = conn.execute(
        "SELECT u.host AS host, MIN(c.timestamp) AS first, MAX(c.timestamp) AS last, "
        "COUNT(DISTINCT c.run_id) AS snapshots, COUNT(*) AS captures, COUNT(DISTINCT c.url) AS urls "
        "FROM captures c JOIN urls u ON u.url = c.url GROUP BY u.host ORDER BY u.host"
    ).fetchall()
    by_host: dict[str, list[str]] = {}
    for row in conn.execute(f"SELECT url, host FROM urls WHERE {_SEED} ORDER BY url"):
        by_host.setdefault(row["host"], []).append(row["url"])
    return [{**dict(r), "seeds": by_host.get(r["host"], [])} for r in rows]


# Seeds are queued as navigation links from nowhere; robots.txt is fetched from nowhere too, as an embed.
_SEED = "depth=0 AND found_on IS NULL AND link_kind='navigation'"


def seeds(conn: sqlite3.Connection) -> list[str]:
    """The seed URLs of the collection's harvests: where its snapshots are entered."""
    return [r[0] for r in conn.execute(f"SELECT url FROM urls WHERE {_SEED} ORDER BY url")]

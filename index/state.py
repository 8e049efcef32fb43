"""Harvest state: what the collection knows about runs, WARC files, URLs and captures.

A thin layer over ``index.db`` with the queries the harvester, the recovery code, the reports and
the replay app share. Writes are short transactions; the harvester is the only writer of a collection
at a time (``Collection.harvest_lock``), readers may come from any process (WAL).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from index.db import connect, immediate_transaction


@dataclasses.dataclass(frozen=True)
class Original:
    """A response record holding a payload: what a revisit refers to."""

    url: str
    warc_date: str
    record_id: str
    warc: str | None = None


@dataclasses.dataclass
class Capture:
    run_id: str
    url: str
    timestamp: str
    warc_date: str
    record_type: str
    cls: str
    status: int | None
    digest: str | None
    mime: str | None
    payload_length: int
    warc: str
    offset: int
    length: int
    record_id: str
    refers_to_uri: str | None = None
    refers_to_date: str | None = None
    location: str | None = None


class HarvestState:
    def __init__(self, db_path: Path):
        self.db_path = Path(db_path)
        self.conn: sqlite3.Connection = connect(self.db_path)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> HarvestState:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def transaction(self):
        return immediate_transaction(self.conn)

    # -- runs ----------------------------------------------------------------------------------
    def begin_run(self, run_id: str, job: str, mode: str, started: str, pid: int) -> None:
        self.conn.execute(
            "INSERT INTO runs (run_id, job, mode, status, started, pid, figures) VALUES (?,?,?,?,?,?,?)",
            (run_id, job, mode, "running", started, pid, "{}"),
        )

    def update_run(self, run_id: str, **fields) -> None:
        if "figures" in fields and not isinstance(fields["figures"], str):
            fields["figures"] = json.dumps(fields["figures"], ensure_ascii=False)
        cols = ", ".join(f"{k}=?" for k in fields)
        self.conn.execute(f"UPDATE runs SET {cols} WHERE run_id=?", (*fields.values(), run_id))

    def runs(self, statuses: tuple[str, ...] | None = None) -> list[dict]:
        rows = self.conn.execute("SELECT * FROM runs ORDER BY started, run_id").fetchall()
        out = []
        for row in rows:
            run = dict(row)
            run["figures"] = json.loads(run["figures"] or "{}")
            if statuses is None or run["status"] in statuses:
                out.append(run)
        return out

    def run(self, run_id: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            return None
        run = dict(row)
        run["figures"] = json.loads(run["figures"] or "{}")
        return run

    def add_run(self, run: dict) -> None:
        """A run row as a rebuild restores it (``index.runhistory``)."""
        self.conn.execute(
            "INSERT OR REPLACE INTO runs (run_id, job, mode, status, started, finished, snapshot, pid, figures) "
            "VALUES (?,?,?,?,?,?,?,?,?)",
            (run["run_id"], run.get("job"), run.get("mode"), run.get("status"), run.get("started"),
             run.get("finished"), run.get("snapshot"), run.get("pid"),
             json.dumps(run.get("figures") or {}, ensure_ascii=False)))

    def capture_counts(self, run_id: str) -> dict[str, int]:
        return dict(self.conn.execute("SELECT class, COUNT(*) FROM captures WHERE run_id=? GROUP BY class",
                                      (run_id,)).fetchall())

    def revisit_savings(self, run_id: str) -> tuple[int, int]:
        """(revisit records of a run, payload bytes they did not store again: each one's original's)."""
        row = self.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(COALESCE((SELECT o.payload_length FROM captures o WHERE "
            "o.url=c.refers_to_uri AND o.warc_date=c.refers_to_date AND o.record_type='response' LIMIT 1), "
            "c.payload_length, 0)), 0) FROM captures c WHERE c.run_id=? AND c.record_type='revisit'",
            (run_id,)).fetchone()
        return row[0], row[1]

    def last_capture_timestamp(self, run_id: str) -> str | None:
        return self.conn.execute("SELECT MAX(timestamp) FROM captures WHERE run_id=?", (run_id,)).fetchone()[0]

    def last_snapshot(self) -> str | None:
        row = self.conn.execute("SELECT MAX(snapshot) FROM runs").fetchone()
        return row[0] if row else None

    def has_full_baseline(self) -> bool:
        """Is there a finished run that was not incremental (a full one, or one imported)? Until
        there is, runs are full: an interrupted or cancelled first full run is no baseline."""
        row = self.conn.execute(
            "SELECT 1 FROM runs WHERE status='finished' AND mode IS NOT 'incremental' LIMIT 1").fetchone()
        return row is not None

    # -- WARC files ----------------------------------------------------------------------------
    def warc_opened(self, filename: str, run_id: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO warcs VALUES (?,?,?,?)", (filename, run_id, "open", 0))

    def warc_state(self, filename: str, state: str, size: int | None = None) -> None:
        if size is None:
            self.conn.execute("UPDATE warcs SET state=? WHERE filename=?", (state, filename))
        else:
            self.conn.execute("UPDATE warcs SET state=?, size=? WHERE filename=?", (state, size, filename))

    def warcs(self, state: str | None = None) -> list[dict]:
        if state:
            rows = self.conn.execute("SELECT * FROM warcs WHERE state=? ORDER BY filename", (state,))
        else:
            rows = self.conn.execute("SELECT * FROM warcs ORDER BY filename")
        return [dict(r) for r in rows]

    # -- URLs ----------------------------------------------------------------------------------
    def url(self, url: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM urls WHERE url=?", (url,)).fetchone()
        return dict(row) if row else None

    def known_urls(self) -> Iterator[dict]:
        for row in self.conn.execute("SELECT * FROM urls ORDER BY depth, first_seen, url"):
            yield dict(row)

    def see_url(self, url: str, host: str, run_id: str, at: str, found_on: str | None, depth: int,
                link_kind: str, page_kind: str | None = None) -> bool:
        """Record where and when a URL was first seen; True when it was never seen before."""
        cur = self.conn.execute(
            "INSERT INTO urls (url, host, first_seen, first_run, found_on, depth, link_kind, page_kind) "
            "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(url) DO NOTHING",
            (url, host, at, run_id, found_on, depth, link_kind, page_kind),
        )
        return cur.rowcount == 1

    def urls_of_run(self, run_id: str) -> list[dict]:
        """Rows of the URLs a run first saw, looked at, or found vanished, by URL."""
        rows = self.conn.execute(
            "SELECT * FROM urls WHERE first_run=? OR last_run=? OR url IN "
            "(SELECT url FROM checks WHERE run_id=? AND outcome='deleted') ORDER BY url", (run_id, run_id, run_id))
        return [dict(r) for r in rows]

    def put_url_fields(self, fields: dict) -> None:
        """Set some fields of a URL's row (``url`` among them), creating the row if need be."""
        cols = list(fields)
        updates = ", ".join(f"{c}=excluded.{c}" for c in cols if c != "url")
        self.conn.execute(f"INSERT INTO urls ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
                          f"ON CONFLICT(url) DO UPDATE SET {updates}", tuple(fields.values()))

    def update_url(self, url: str, **fields) -> None:
        cols = ", ".join(f"{k}=?" for k in fields)
        self.conn.execute(f"UPDATE urls SET {cols} WHERE url=?", (*fields.values(), url))

    # -- captures ------------------------------------------------------------------------------
    def add_capture(self, cap: Capture) -> None:
        self.conn.execute(
            "INSERT INTO captures (run_id, url, timestamp, warc_date, record_type, class, status, digest, mime, "
            "payload_length, warc, offset, length, record_id, refers_to_uri, refers_to_date, location) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (cap.run_id, cap.url, cap.timestamp, cap.warc_date, cap.record_type, cap.cls, cap.status, cap.digest,
             cap.mime, cap.payload_length, cap.warc, cap.offset, cap.length, cap.record_id, cap.refers_to_uri,
             cap.refers_to_date, cap.location),
        )

    def captures(self, url: str | None = None, run_id: str | None = None) -> list[dict]:
        sql, args = "SELECT * FROM captures", []
        where = []
        if url is not None:
            where.append("url=?")
            args.append(url)
        if run_id is not None:
            where.append("run_id=?")
            args.append(run_id)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY timestamp, id"
        return [dict(r) for r in self.conn.execute(sql, args)]

    def capture_by_record_id(self, record_id: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM captures WHERE record_id=?", (record_id,)).fetchone()
        return dict(row) if row else None

    # -- digest index --------------------------------------------------------------------------
    def add_digest(self, digest: str, original: Original) -> None:
        """Most recent capture holding the payload wins. Usable once its WARC is indexed."""
        self.conn.execute(
            "INSERT OR REPLACE INTO digests VALUES (?,?,?,?,?)",
            (digest, original.url, original.warc_date, original.record_id, original.warc),
        )

    def lookup_digest(self, digest: str) -> Original | None:
        row = self.conn.execute(
            "SELECT d.* FROM digests d JOIN warcs w ON w.filename = d.warc WHERE d.digest=? AND w.state='indexed'",
            (digest,),
        ).fetchone()
        if row is None:
            return None
        return Original(row["url"], row["warc_date"], row["record_id"], row["warc"])

    # -- outlink cache -------------------------------------------------------------------------
    def outlinks(self, url: str, digest: str) -> list[tuple[str, str]] | None:
        row = self.conn.execute("SELECT links FROM outlinks WHERE url=? AND digest=?", (url, digest)).fetchone()
        return [tuple(pair) for pair in json.loads(row[0])] if row else None

    def set_outlinks(self, url: str, digest: str, links: list[tuple[str, str]]) -> None:
        self.conn.execute("INSERT OR REPLACE INTO outlinks VALUES (?,?,?)", (url, digest, json.dumps(links)))

    # -- checks (looked at, nothing written) ---------------------------------------------------
    def add_check(self, run_id: str, url: str, outcome: str, reason: str, at: str) -> None:
        self.conn.execute("INSERT INTO checks VALUES (?,?,?,?,?)", (run_id, url, outcome, reason, at))

    def checks_in_order(self, run_id: str) -> list[dict]:
        """A run's checks in the order they were made."""
        return [dict(r) for r in self.conn.execute("SELECT * FROM checks WHERE run_id=? ORDER BY rowid", (run_id,))]

    def urls_with_class(self, run_id: str, cls: str) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT url FROM captures WHERE run_id=? AND class=? ORDER BY url", (run_id, cls))]

    def checks(self, run_id: str) -> list[dict]:
        return [dict(r) for r in self.conn.execute("SELECT * FROM checks WHERE run_id=? ORDER BY at", (run_id,))]

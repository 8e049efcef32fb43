"""The collection's harvest database: one SQLite file (WAL) per collection, ``strata/harvest.sqlite``.

It holds derived state only (runs, WARC files, captures, per-URL state, the digest index, checks);
``index.rebuild`` re-derives all of it from the WARC files. Schema changes bump ``SCHEMA_VERSION``;
an older database is rebuilt rather than migrated.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    job TEXT, mode TEXT, status TEXT,           -- running | finished | cancelled | interrupted | failed
    started TEXT, finished TEXT,                -- ISO 8601 UTC
    snapshot TEXT,                              -- 14-digit timestamp that addresses the run's snapshot
    pid INTEGER,
    figures TEXT                                -- JSON
);
CREATE TABLE IF NOT EXISTS warcs (
    filename TEXT PRIMARY KEY,                  -- relative to archive/, without .open
    run_id TEXT, state TEXT,                    -- open | sealed | indexed
    size INTEGER
);
CREATE TABLE IF NOT EXISTS captures (
    id INTEGER PRIMARY KEY,
    run_id TEXT, url TEXT, timestamp TEXT,      -- timestamp: 14 digits, as in the CDXJ index
    warc_date TEXT,                             -- WARC-Date, full precision
    record_type TEXT,                           -- response | revisit
    class TEXT,                                 -- new | changed | soft | unchanged | not_modified | deleted | error
    status INTEGER, digest TEXT, mime TEXT, payload_length INTEGER,
    warc TEXT, offset INTEGER, length INTEGER, record_id TEXT,
    refers_to_uri TEXT, refers_to_date TEXT, location TEXT
);
CREATE INDEX IF NOT EXISTS captures_url ON captures (url, timestamp);
CREATE INDEX IF NOT EXISTS captures_run ON captures (run_id);
CREATE INDEX IF NOT EXISTS captures_warc ON captures (warc);
CREATE INDEX IF NOT EXISTS captures_record ON captures (record_id);
CREATE TABLE IF NOT EXISTS urls (
    url TEXT PRIMARY KEY,
    host TEXT,
    first_seen TEXT, first_run TEXT, found_on TEXT, depth INTEGER, link_kind TEXT, page_kind TEXT,
    last_status INTEGER, last_class TEXT, last_checked TEXT, last_run TEXT,
    digest TEXT,                                -- payload digest of the last 2xx capture
    orig_uri TEXT, orig_date TEXT, orig_record_id TEXT, orig_warc TEXT,  -- the response holding it
    etag TEXT, last_modified TEXT,
    fingerprint TEXT,                           -- main-content fingerprint (change detection)
    checks INTEGER DEFAULT 0, changes INTEGER DEFAULT 0,
    next_due TEXT, deleted_at TEXT
);
CREATE INDEX IF NOT EXISTS urls_host ON urls (host);
CREATE TABLE IF NOT EXISTS digests (
    digest TEXT PRIMARY KEY,                    -- sha1:BASE32, as in WARC-Payload-Digest
    url TEXT, warc_date TEXT, record_id TEXT, warc TEXT
);
CREATE TABLE IF NOT EXISTS outlinks (          -- a cache: the links of the payload a URL last had
    url TEXT PRIMARY KEY, digest TEXT, links TEXT
);
CREATE TABLE IF NOT EXISTS checks (             -- URLs looked at but not written as a capture
    run_id TEXT, url TEXT, outcome TEXT, reason TEXT, at TEXT
);
CREATE INDEX IF NOT EXISTS checks_run ON checks (run_id);
"""


class immediate_transaction:
    """``with immediate_transaction(conn):`` BEGIN IMMEDIATE, then COMMIT, or ROLLBACK on error
    (connections are opened in autocommit mode: transactions are always explicit)."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:
        self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")


def connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.executescript(SCHEMA)
    row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    if row is None:
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
    return conn

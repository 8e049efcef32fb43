"""Harvest state: what the collection knows about runs, WARC files, URLs and captures.

The one owner of ``strata/harvest.sqlite``: its schema, every write (``HarvestState``) and every
read-only question (the functions over ``open_readonly``'s connection, for readers such as the
replay app). Nothing else holds SQL on that database. It holds derived state only; ``index.capture.rebuild``
re-derives all of it from the WARC files. Schema changes bump ``SCHEMA_VERSION``: an older database
is rebuilt rather than migrated. Writes are short transactions; the harvester is the only writer of
a collection at a time (``Collection.harvest_lock``), readers may come from any process (WAL): a
reader opens the database ``mode=ro`` and never creates, migrates or locks it. A collection without
a database (WARCs indexed by ``wb-manager`` alone) answers ``None`` to ``open_readonly`` and the
caller falls back to what the CDXJ index says.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from index.storage.backend import backend_of
from index.storage.db import connect, immediate_transaction
from strata.errors import StrataError
from strata.times import digits14, ts14_of

SCHEMA_VERSION = 2  # 2: url_jobs (which job found or reached each URL); runs.job NULL for --seed runs

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    job TEXT,                                   -- the job file's name; NULL for a --seed run
    mode TEXT, status TEXT,                     -- running | finished | cancelled | interrupted | failed
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
CREATE TABLE IF NOT EXISTS url_jobs (           -- the jobs that queued a URL ('': runs of no job, from --seed)
    url TEXT, job TEXT, PRIMARY KEY (job, url)
) WITHOUT ROWID;
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


def journal_for(db_path: Path) -> str:
    """``delete`` when the collection's root (``<root>/<coll>/strata/harvest.sqlite``) uses Redis:
    several machines may then share the root and open this file (``index.storage.db.connect``)."""
    try:
        return "delete" if backend_of(Path(db_path).parent.parent.parent).kind == "redis" else "wal"
    except StrataError:
        return "wal"  # a bad setting is reported where the backend is chosen, not here


class HarvestState:
    def __init__(self, db_path: Path):
        self.db_path = Path(db_path)
        self.conn: sqlite3.Connection = connect(self.db_path, SCHEMA, SCHEMA_VERSION, journal_for(self.db_path))
        self._schedule_commit: Callable[[Callable[[], None]], object] | None = None
        self._deferred_open = False
        self._units_open = 0
        self.deferred_units = self.deferred_commits = 0  # transactions grouped, commits made

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> HarvestState:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def transaction(self):
        """``with state.transaction():`` the writes inside commit together or not at all. Within
        ``commits_deferred`` they are a savepoint of a transaction committed soon after."""
        if self._schedule_commit is not None:
            return self._deferred_unit()
        return immediate_transaction(self.conn)

    @contextlib.contextmanager
    def commits_deferred(self, schedule: Callable[[Callable[[], None]], object]) -> Iterator[None]:
        """Group the transactions made inside into fewer commits: the first opens a transaction and
        asks ``schedule`` (the harvest's: the event loop's ``call_later`` a few hundredths of a
        second on) to commit it; the ones that follow before it runs join it, each as a savepoint
        (one that fails is rolled back alone). A kill takes the writes made since the last commit (a
        few dozen URLs' rows, whose records are in the WARC already: recovery derives those rows
        from them) where it took one URL's. Other processes' writers wait that long at most for the
        lock (readers never: WAL).
        Writes made outside ``transaction()`` meanwhile join it too; ``commit_now`` commits at once."""
        self._schedule_commit = schedule
        try:
            yield
        finally:
            self._schedule_commit = None
            self.commit_now()

    def commit_now(self) -> None:
        """Commit the transaction ``commits_deferred`` holds open, if any (not from inside one of its
        savepoints: that one's writes go with the scheduled commit)."""
        if self._deferred_open and not self._units_open:
            self._deferred_open = False
            self.conn.execute("COMMIT")
            self.deferred_commits += 1

    @contextlib.contextmanager
    def _deferred_unit(self) -> Iterator[sqlite3.Connection]:
        if not self._deferred_open:
            assert self._schedule_commit is not None  # only within commits_deferred
            self.conn.execute("BEGIN IMMEDIATE")
            self._deferred_open = True
            self._schedule_commit(self.commit_now)
        self.conn.execute("SAVEPOINT unit")
        self._units_open += 1
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK TO unit")
            self.conn.execute("RELEASE unit")
            raise
        else:
            self.conn.execute("RELEASE unit")
            self.deferred_units += 1
        finally:
            self._units_open -= 1

    # -- runs ----------------------------------------------------------------------------------
    def begin_run(self, run_id: str, job: str | None, mode: str, started: str, pid: int) -> None:
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
        """A run row as a rebuild restores it (``index.capture.runhistory``)."""
        self.conn.execute(
            "INSERT OR REPLACE INTO runs (run_id, job, mode, status, started, finished, snapshot, pid, figures) "
            "VALUES (?,?,?,?,?,?,?,?,?)",
            (
                run["run_id"],
                run.get("job"),
                run.get("mode"),
                run.get("status"),
                run.get("started"),
                run.get("finished"),
                run.get("snapshot"),
                run.get("pid"),
                json.dumps(run.get("figures") or {}, ensure_ascii=False),
            ),
        )

    def capture_counts(self, run_id: str) -> dict[str, int]:
        return dict(
            self.conn.execute(
                "SELECT class, COUNT(*) FROM captures WHERE run_id=? GROUP BY class", (run_id,)
            ).fetchall()
        )

    def revisit_savings(self, run_id: str) -> tuple[int, int]:
        """(revisit records of a run, payload bytes they did not store again: each one's original's)."""
        row = self.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(COALESCE((SELECT o.payload_length FROM captures o WHERE "
            "o.url=c.refers_to_uri AND o.warc_date=c.refers_to_date AND o.record_type='response' LIMIT 1), "
            "c.payload_length, 0)), 0) FROM captures c WHERE c.run_id=? AND c.record_type='revisit'",
            (run_id,),
        ).fetchone()
        return row[0], row[1]

    def last_capture_timestamp(self, run_id: str) -> str | None:
        return self.conn.execute("SELECT MAX(timestamp) FROM captures WHERE run_id=?", (run_id,)).fetchone()[0]

    def last_snapshot(self) -> str | None:
        row = self.conn.execute("SELECT MAX(snapshot) FROM runs").fetchone()
        return row[0] if row else None

    def has_full_baseline(self, job: str | None) -> bool:
        """Has this job (None: runs of no job) a finished run that was not incremental (a full one, or
        one imported)? Until it has, its runs are full: an interrupted or cancelled first full run is
        no baseline, and neither are other jobs' runs."""
        row = self.conn.execute(
            "SELECT 1 FROM runs WHERE job IS ? AND status='finished' AND mode IS NOT 'incremental' LIMIT 1", (job,)
        ).fetchone()
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

    def job_urls(self, job: str | None) -> Iterator[dict]:
        """The known URLs a job (None: runs of no job) queued in its runs: what its incremental run
        rechecks. Another job's URLs are that job's to recheck."""
        for row in self.conn.execute(
            "SELECT u.* FROM urls u JOIN url_jobs j ON j.url = u.url WHERE j.job=? "
            "ORDER BY u.depth, u.first_seen, u.url",
            (job or "",),
        ):
            yield dict(row)

    def see_url(
        self,
        url: str,
        host: str,
        run_id: str,
        at: str,
        found_on: str | None,
        depth: int,
        link_kind: str,
        page_kind: str | None = None,
        job: str | None = None,
    ) -> bool:
        """Record where and when a URL was first seen, and that ``job`` (None: no job) queued it; True
        when it was never seen before."""
        with contextlib.nullcontext() if self.conn.in_transaction else self.transaction():
            cur = self.conn.execute(
                "INSERT INTO urls (url, host, first_seen, first_run, found_on, depth, link_kind, page_kind) "
                "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(url) DO NOTHING",
                (url, host, at, run_id, found_on, depth, link_kind, page_kind),
            )
            self.conn.execute("INSERT OR IGNORE INTO url_jobs (job, url) VALUES (?,?)", (job or "", url))
        return cur.rowcount == 1

    # the run report's two tables (index.capture.runhistory.write_report streams them)
    URLS_OF_RUN = (
        "SELECT * FROM urls WHERE first_run=? OR last_run=? OR url IN "
        "(SELECT url FROM checks WHERE run_id=? AND outcome='deleted') ORDER BY url"
    )
    CHECKS_IN_ORDER = "SELECT * FROM checks WHERE run_id=? ORDER BY rowid"

    def urls_of_run(self, run_id: str) -> list[dict]:
        """Rows of the URLs a run first saw, looked at, or found vanished, by URL."""
        return [dict(r) for r in self.conn.execute(self.URLS_OF_RUN, (run_id, run_id, run_id))]

    def put_url_fields(self, fields: dict) -> None:
        """Set some fields of a URL's row (``url`` among them), creating the row if need be."""
        cols = list(fields)
        updates = ", ".join(f"{c}=excluded.{c}" for c in cols if c != "url")
        self.conn.execute(
            f"INSERT INTO urls ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
            f"ON CONFLICT(url) DO UPDATE SET {updates}",
            tuple(fields.values()),
        )

    def update_url(self, url: str, **fields) -> None:
        cols = ", ".join(f"{k}=?" for k in fields)
        self.conn.execute(f"UPDATE urls SET {cols} WHERE url=?", (*fields.values(), url))

    # -- captures ------------------------------------------------------------------------------
    def add_capture(self, cap: Capture) -> None:
        self.conn.execute(
            "INSERT INTO captures (run_id, url, timestamp, warc_date, record_type, class, status, digest, mime, "
            "payload_length, warc, offset, length, record_id, refers_to_uri, refers_to_date, location) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                cap.run_id,
                cap.url,
                cap.timestamp,
                cap.warc_date,
                cap.record_type,
                cap.cls,
                cap.status,
                cap.digest,
                cap.mime,
                cap.payload_length,
                cap.warc,
                cap.offset,
                cap.length,
                cap.record_id,
                cap.refers_to_uri,
                cap.refers_to_date,
                cap.location,
            ),
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

    def captures_since(self, run_id: str, after_id: int, limit: int) -> list[dict]:
        """The run's captures whose row id is above ``after_id``, in id order, at most ``limit``: what
        a reader following a running run (``index.fulltext.follow``) has not read yet. A run has one
        writer, which appends: ids grow in the order rows are committed."""
        rows = self.conn.execute(
            "SELECT * FROM captures WHERE id > ? AND run_id = ? ORDER BY id LIMIT ?", (after_id, run_id, limit)
        )
        return [dict(r) for r in rows]

    def captures_in_file(self, filename: str) -> list[dict]:
        """The captures whose records are in one WARC file (name without ``.open``), in id order."""
        return [dict(r) for r in self.conn.execute("SELECT * FROM captures WHERE warc = ? ORDER BY id", (filename,))]

    def capture_by_record_id(self, record_id: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM captures WHERE record_id=?", (record_id,)).fetchone()
        return dict(row) if row else None

    def cdx_indexed(self, lines: list[bytes]) -> None:
        """A sealed file's CDXJ lines were merged into the collection's index file. Nothing more to
        do here: ``index.storage.redisstate`` also adds them to the sorted set pywb reads from Redis."""

    # -- digest index --------------------------------------------------------------------------
    def add_digest(self, digest: str, original: Original) -> None:
        """Most recent capture holding the payload wins. Usable once its WARC is indexed."""
        self.conn.execute(
            "INSERT OR REPLACE INTO digests VALUES (?,?,?,?,?)",
            (digest, original.url, original.warc_date, original.record_id, original.warc),
        )

    def lookup_digest(self, digest: str, open_warc: str | None = None) -> Original | None:
        """The original holding ``digest``: in an indexed file, or earlier in ``open_warc``, the file
        the caller is writing (a torn file is cut back to a prefix, so an original written before its
        revisit in one file always survives it)."""
        row = self.conn.execute(
            "SELECT d.* FROM digests d JOIN warcs w ON w.filename = d.warc"
            " WHERE d.digest=? AND (w.state='indexed' OR d.warc=?)",
            (digest, open_warc),
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
    def add_warc(self, filename: str, state: str, size: int, run_id: str | None = None) -> None:
        """A WARC file found on disk (recovery, rebuild): added unless already known."""
        if self.conn.execute("SELECT 1 FROM warcs WHERE filename=?", (filename,)).fetchone() is None:
            self.conn.execute("INSERT INTO warcs VALUES (?,?,?,?)", (filename, run_id, state, size))

    def put_warc(self, filename: str, run_id: str | None, state: str, size: int) -> None:
        """A WARC file's row, replaced whole (the rebuild)."""
        self.conn.execute("INSERT OR REPLACE INTO warcs VALUES (?,?,?,?)", (filename, run_id, state, size))

    def revisit_totals(self, run_id: str) -> tuple[int, int]:
        """(revisit records of a run, the payload bytes their own rows give): for other tools' runs."""
        row = self.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(payload_length), 0) FROM captures WHERE run_id=? AND record_type='revisit'",
            (run_id,),
        ).fetchone()
        return row[0], row[1]

    def forget_warc(self, filename: str) -> None:
        self.conn.execute("DELETE FROM warcs WHERE filename=?", (filename,))

    def forget_records(self, filename: str, good_end: int) -> None:
        """Delete capture and digest rows for records at or past ``good_end`` of ``filename``, and the
        URL state that pointed at them (a torn file's tail, or a file that is gone)."""
        lost = [
            row["record_id"]
            for row in self.conn.execute(
                "SELECT record_id FROM captures WHERE warc=? AND offset>=?", (filename, good_end)
            )
        ]
        with self.transaction():
            self.conn.execute("DELETE FROM captures WHERE warc=? AND offset>=?", (filename, good_end))
            self.conn.execute(
                "DELETE FROM digests WHERE warc=? AND record_id NOT IN (SELECT record_id FROM captures WHERE warc=?)",
                (filename, filename),
            )
            for record_id in lost:
                self.conn.execute(
                    "UPDATE urls SET digest=NULL, orig_uri=NULL, orig_date=NULL, orig_record_id=NULL, "
                    "orig_warc=NULL, etag=NULL, last_modified=NULL WHERE orig_record_id=?",
                    (record_id,),
                )

    def record_ids_from(self, filename: str, good_end: int) -> list[str]:
        """Record ids of the captures at or past ``good_end`` of ``filename`` (what ``forget_records`` drops)."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT record_id FROM captures WHERE warc=? AND offset>=?", (filename, good_end)
            )
        ]

    def url_columns(self) -> tuple[str, ...]:
        """The fields of a URL's state row, in table order (a row held elsewhere has the same)."""
        return tuple(r[1] for r in self.conn.execute("PRAGMA table_info(urls)"))

    def url_job_pairs(self) -> list[tuple[str, str]]:
        """(job, URL) of every URL a job queued ('' for runs of no job): ``strata backend copy``."""
        return [(r[0], r[1]) for r in self.conn.execute("SELECT job, url FROM url_jobs ORDER BY job, url")]

    def add_url_job(self, url: str, job: str | None) -> None:
        self.conn.execute("INSERT OR IGNORE INTO url_jobs (job, url) VALUES (?,?)", (job or "", url))

    def digest_rows(self) -> Iterator[tuple[str, Original]]:
        """Every digest index entry, usable or not (``strata backend copy``)."""
        for row in self.conn.execute("SELECT * FROM digests ORDER BY digest"):
            yield row["digest"], Original(row["url"], row["warc_date"], row["record_id"], row["warc"])

    def response_locations(self, digest: str) -> list[dict]:
        """Where responses holding ``digest`` are stored (warc, offset, url), oldest first."""
        return [
            dict(r)
            for r in self.conn.execute(
                "SELECT warc, offset, url FROM captures WHERE digest=? AND record_type='response' "
                "ORDER BY timestamp, id",
                (digest,),
            )
        ]

    def add_check(self, run_id: str, url: str, outcome: str, reason: str, at: str) -> None:
        self.conn.execute("INSERT INTO checks VALUES (?,?,?,?,?)", (run_id, url, outcome, reason, at))

    def checks_in_order(self, run_id: str) -> list[dict]:
        """A run's checks in the order they were made."""
        return [dict(r) for r in self.conn.execute(self.CHECKS_IN_ORDER, (run_id,))]

    def urls_with_class(self, run_id: str, cls: str) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT DISTINCT url FROM captures WHERE run_id=? AND class=? ORDER BY url", (run_id, cls)
            )
        ]

    def checks(self, run_id: str) -> list[dict]:
        return [dict(r) for r in self.conn.execute("SELECT * FROM checks WHERE run_id=? ORDER BY at", (run_id,))]


# -- read-only questions -------------------------------------------------------------------------

GONE_STATUSES = (404, 410)


def schema_version(db_path: Path) -> int | None:
    """The schema version a collection database was made with; None when there is none (or it
    cannot be read). Older than ``SCHEMA_VERSION``: rebuild it (``index.capture.rebuild``)."""
    conn = open_readonly(db_path)
    if conn is None:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        return int(row[0]) if row and str(row[0]).isdigit() else 0
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


def open_readonly(db_path: Path) -> sqlite3.Connection | None:
    path = Path(db_path)
    if not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT 1 FROM captures LIMIT 1")
    except sqlite3.Error:
        return None
    return conn


@dataclasses.dataclass(frozen=True)
class Deletion:
    """A URL that answered 404/410 after answering 2xx."""

    url: str
    removed_seen: str  # 14-digit timestamp of the capture that found it gone
    status: int  # 404 or 410
    last_archived: str  # 14-digit timestamp of the last 2xx (or 304) capture before that


def deletion(conn: sqlite3.Connection, url: str, timestamp: str) -> Deletion | None:
    """The deletion in force at ``timestamp``: the latest capture at or before it is a 404/410,
    and a capture classed ``deleted`` follows the last 2xx capture. None otherwise."""
    rows = conn.execute(
        "SELECT timestamp, status, class FROM captures WHERE url=? AND timestamp<=? AND status IS NOT NULL "
        "ORDER BY timestamp DESC, id DESC LIMIT 200",
        (url, timestamp),
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


def capture_points(conn: sqlite3.Connection) -> Iterator[tuple[str, str, str, str, str]]:
    """(url, host, timestamp, run_id, class) of every capture, for counts that access rules filter
    (``index.access.counts``)."""
    yield from conn.execute(
        "SELECT c.url, u.host, c.timestamp, c.run_id, c.class FROM captures c JOIN urls u ON u.url = c.url"
    )


# Seeds are queued as navigation links from nowhere; robots.txt is fetched from nowhere too, as an embed.
_SEED = "depth=0 AND found_on IS NULL AND link_kind='navigation'"


def seeds(conn: sqlite3.Connection) -> list[str]:
    """The seed URLs of the collection's harvests: where its snapshots are entered."""
    return [r[0] for r in conn.execute(f"SELECT url FROM urls WHERE {_SEED} ORDER BY url")]


def job_runs(conn: sqlite3.Connection, job: str) -> list[dict]:
    """One job's runs, oldest first, figures decoded."""
    out = []
    for row in conn.execute("SELECT * FROM runs WHERE job=? ORDER BY started, run_id", (job,)):
        run = dict(row)
        run["figures"] = json.loads(run.get("figures") or "{}")
        out.append(run)
    return out


def last_started(conn: sqlite3.Connection, job: str) -> str | None:
    """When the job's latest run started (ISO 8601), or None."""
    row = conn.execute("SELECT MAX(started) FROM runs WHERE job=?", (job,)).fetchone()
    return row[0] if row and row[0] else None


def indexed_original(conn: sqlite3.Connection, record_id: str) -> sqlite3.Row | None:
    """The response record ``record_id`` if its file is sealed and indexed: (warc, offset, length, digest)."""
    return conn.execute(
        "SELECT c.warc, c.offset, c.length, c.digest FROM captures c JOIN warcs w ON w.filename = c.warc "
        "WHERE c.record_id=? AND c.record_type='response' AND w.state='indexed' LIMIT 1",
        (record_id,),
    ).fetchone()


# -- every capture of a URL (strata captures, the calendar) -----------------------------------------
# Every capture of a URL, as ``strata captures`` prints it and the calendar page shows it.
#
# Read from the harvest state (``captures`` rows, over a read-only connection): for
# each capture its 14-digit timestamp and WARC-Date, kind (the class the harvest or the rebuild gave
# it), HTTP status, record type, payload digest, MIME type, run, WARC file, offset and length; for a
# revisit, its original: the URL and date the revisit refers to (``WARC-Refers-To-Target-URI`` and
# ``-Date``), or, for a revisit that does not say (wget's, wpull's), the latest response with the
# same payload at or before it, this URL first; and where that original is, when the collection
# holds it (``warc``/``offset`` None when it does not: a revisit of nothing).

CAPTURE_FIELDS = (
    "timestamp",
    "date",
    "url",
    "kind",
    "status",
    "record_type",
    "digest",
    "mime",
    "run_id",
    "warc",
    "offset",
    "length",
    "original",
)
_CAPTURE_COLUMNS = (
    "id, url, timestamp, warc_date, record_type, class, status, digest, mime, run_id, warc, offset, "
    "length, refers_to_uri, refers_to_date"
)


def capture_entries(conn: sqlite3.Connection, url: str) -> list[dict]:
    """Every capture of exactly ``url``, oldest first (same second: in the order written)."""
    rows = conn.execute(
        f"SELECT {_CAPTURE_COLUMNS} FROM captures WHERE url=? ORDER BY timestamp, id", (url,)
    ).fetchall()
    return [_capture_entry(conn, row) for row in rows]


def capture_entries_by_location(conn: sqlite3.Connection, urls: Iterable[str]) -> dict[tuple[str, int], dict]:
    """(WARC file, offset) -> capture entry, for the captures of ``urls`` (to label CDX lines)."""
    out: dict[tuple[str, int], dict] = {}
    for url in dict.fromkeys(urls):
        for entry in capture_entries(conn, url):
            out[(entry["warc"], entry["offset"])] = entry
    return out


def find_captured_url(conn: sqlite3.Connection, url: str) -> str | None:
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


def _capture_entry(conn: sqlite3.Connection, row) -> dict:
    entry = {
        "timestamp": row["timestamp"],
        "date": row["warc_date"],
        "url": row["url"],
        "kind": row["class"],
        "status": row["status"],
        "record_type": row["record_type"],
        "digest": row["digest"],
        "mime": row["mime"],
        "run_id": row["run_id"],
        "warc": row["warc"],
        "offset": row["offset"],
        "length": row["length"],
        "original": None,
    }
    if row["record_type"] == "revisit":
        entry["original"] = _capture_original(conn, row)
    return entry


def _capture_original(conn: sqlite3.Connection, row) -> dict:
    uri, date = row["refers_to_uri"], row["refers_to_date"]
    held = None
    if uri and date:
        held = conn.execute(
            "SELECT url, warc_date, timestamp, warc, offset FROM captures WHERE url=? AND warc_date=? "
            "AND record_type='response' ORDER BY id LIMIT 1",
            (uri, date),
        ).fetchone()
    elif row["digest"]:
        held = conn.execute(
            "SELECT url, warc_date, timestamp, warc, offset FROM captures WHERE digest=? AND record_type='response' "
            "AND timestamp<=? ORDER BY url=? DESC, timestamp DESC, id DESC LIMIT 1",
            (row["digest"], row["timestamp"], row["url"]),
        ).fetchone()
        if held is not None:
            uri, date = held["url"], held["warc_date"]
    return {
        "url": uri,
        "date": date,
        "timestamp": ts14_of(date) if date else None,
        "warc": held["warc"] if held is not None else None,
        "offset": held["offset"] if held is not None else None,
    }


def full_harvest_estimate(conn: sqlite3.Connection, run: dict) -> int:
    """What a full harvest would have stored instead of ``run`` (a ``runs`` row, figures decoded),
    in WARC bytes: one response record and one request record for every URL of the run's job that
    was still there. The one computation behind ``strata report`` and the console's storage chart;
    kept in the run's figures (``full_estimate``) when the run ends, computed here for older runs.

    - What the run stored, with each revisit replaced by its original's response record;
    - each URL of the job it did not fetch (content pages not due, listing pages not read on, their
      embeds, soft changes not stored) whose last capture before the run was 2xx, 3xx or 304: its
      last response record, and a request record of the run's mean size."""
    figures = run.get("figures") or {}
    if figures.get("full_estimate") is not None:
        return int(figures["full_estimate"])
    run_id = run["run_id"]
    stored = figures.get("bytes_stored") or 0
    revisits, originals = conn.execute(
        "SELECT COALESCE(SUM(r.length), 0), COALESCE(SUM((SELECT o.length FROM captures o WHERE o.url = "
        "r.refers_to_uri AND o.warc_date = r.refers_to_date AND o.record_type='response' LIMIT 1)), 0) "
        "FROM captures r WHERE r.run_id=? AND r.record_type='revisit'",
        (run_id,),
    ).fetchone()
    if not run.get("started"):
        return stored - revisits + originals
    before = digits14(run["started"])
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name='url_jobs'").fetchone() is None:
        return stored - revisits + originals  # a database of schema 1, opened read-only: not rebuilt yet
    count, unfetched = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(length), 0) FROM ("
        " SELECT (SELECT c.status FROM captures c WHERE c.url = j.url AND c.timestamp < ? "
        "         ORDER BY c.timestamp DESC, c.id DESC LIMIT 1) AS status,"
        "        (SELECT c.length FROM captures c WHERE c.url = j.url AND c.timestamp < ? "
        "         AND c.record_type='response' ORDER BY c.timestamp DESC, c.id DESC LIMIT 1) AS length"
        " FROM url_jobs j WHERE j.job=? AND j.url NOT IN (SELECT url FROM captures WHERE run_id=?)"
        ") WHERE length IS NOT NULL AND status BETWEEN 200 AND 399",
        (before, before, run.get("job") or "", run_id),
    ).fetchone()
    captured, captured_bytes = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(length), 0) FROM captures WHERE run_id=?", (run_id,)
    ).fetchone()
    if figures.get("request_records"):
        # A full harvest writes a request record beside every capture; a revisit may have had none.
        request = figures["request_bytes"] // figures["request_records"]
        unrequested = max(0, captured - figures["request_records"])
    else:
        # Older runs: a request per capture, what the run stored beyond its captures' records.
        request = max(0, stored - captured_bytes) // captured if captured else 0
        unrequested = 0
    return int(stored - revisits + originals + unfetched + (count + unrequested) * request)


# A page checked again: a capture classed so, or a soft change checked but not stored.
CHECKED_CLASSES = ("changed", "soft", "unchanged", "not_modified", "deleted")
CHANGED_CLASSES = ("changed", "deleted")


def page_checks(conn: sqlite3.Connection, run_id: str) -> list[tuple[str, str, bool, str, str | None]]:
    """The pages (HTML, with a page kind) the run checked again: (host, page kind, changed?, 14-digit
    time of the check, 14-digit time of the page's previous capture or None)."""
    marks = ",".join("?" * len(CHECKED_CLASSES))
    rows = conn.execute(
        "SELECT u.host, u.page_kind, c.class, c.timestamp, (SELECT MAX(p.timestamp) FROM captures p "
        " WHERE p.url = c.url AND p.run_id != c.run_id AND p.timestamp <= c.timestamp) AS previous "
        f"FROM captures c JOIN urls u ON u.url = c.url WHERE c.run_id=? AND u.page_kind IS NOT NULL "
        f"AND c.class IN ({marks})",
        (run_id, *CHECKED_CLASSES),
    ).fetchall()
    soft = conn.execute(
        "SELECT u.host, u.page_kind, k.at, (SELECT MAX(p.timestamp) FROM captures p WHERE p.url = k.url "
        " AND p.run_id != k.run_id) AS previous FROM checks k JOIN urls u ON u.url = k.url "
        "WHERE k.run_id=? AND k.outcome='soft' AND u.page_kind IS NOT NULL",
        (run_id,),
    ).fetchall()
    out = [(r["host"], r["page_kind"], r["class"] in CHANGED_CLASSES, r["timestamp"], r["previous"]) for r in rows]
    out += [(r["host"], r["page_kind"], False, digits14(r["at"]), r["previous"]) for r in soft]
    return out


def record_locations(conn: sqlite3.Connection, record_id: str) -> list[tuple[str, int]]:
    """(warc, offset) of the captures with this record id: where the state says a record is; [] when
    the state cannot say (a damaged or older database)."""
    try:
        return [tuple(r) for r in conn.execute("SELECT warc, offset FROM captures WHERE record_id = ?", (record_id,))]
    except sqlite3.Error:
        return []


def run_files(conn: sqlite3.Connection, run_id: str) -> list[str] | None:
    """The WARC files a run wrote (relative to archive/), or None when the state knows no such run."""
    if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
        return None
    return [r[0] for r in conn.execute("SELECT filename FROM warcs WHERE run_id = ? ORDER BY filename", (run_id,))]

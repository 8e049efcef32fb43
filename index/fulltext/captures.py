"""When each document of the full-text index was captured: SQLite, beside the Whoosh index.

A document of the full-text index is one payload of one URL; it is captured again at every later
harvest that finds the same payload (a revisit, a 304). Keeping those dates in the Whoosh
documents meant re-writing every unchanged page's document, text and all, after every run. Here
they are rows, keyed by the document's Whoosh number, which never changes
(``index.fulltext.postings.BulkWriter`` only appends and keeps numbers when it merges):

    docs(docnum, key)              key = "<url> <payload digest>"
    captures(docnum, ts)           ts = 14-digit timestamp, one row per capture
    runs(run_id)                   harvest runs whose captures are in

``index.fulltext`` commits Whoosh first and these rows second, in one transaction: after a crash
between the two, documents past ``doc_count()`` are Whoosh's alone and the run is not marked
indexed, so the next ``index_run`` adds their rows and the run's captures again.

For queries, ``CaptureTable`` holds every capture in two pairs of arrays (by document, by date),
each read when first needed per index generation: a date filter is a slice of the sorted dates.
"""

from __future__ import annotations

import bisect
import sqlite3
import threading
from array import array
from collections.abc import Iterable
from itertools import repeat
from operator import itemgetter
from pathlib import Path

__all__ = ["CaptureStore", "CaptureTable", "FILENAME"]

FILENAME = "captures.sqlite"
_CHUNK = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs(docnum INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS captures(docnum INTEGER NOT NULL, ts INTEGER NOT NULL,
                                    PRIMARY KEY (docnum, ts)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS captures_ts ON captures(ts, docnum);
CREATE TABLE IF NOT EXISTS runs(run_id TEXT PRIMARY KEY);
"""


class CaptureStore:
    """The SQLite file in an index directory. ``readonly`` opens it for queries."""

    def __init__(self, directory: Path, readonly: bool = False):
        path = Path(directory) / FILENAME
        if readonly:
            self.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        else:
            self.conn = sqlite3.connect(path, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode=DELETE")
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.executescript(_SCHEMA)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> CaptureStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # documents

    def doc_count(self) -> int:
        """Documents with a row: document numbers 0 .. doc_count() - 1."""
        (top,) = self.conn.execute("SELECT max(docnum) FROM docs").fetchone()
        return 0 if top is None else top + 1

    def docnums(self, keys: Iterable[str]) -> dict[str, int]:
        """key -> document number, for the keys that have one."""
        keys = list(keys)
        out: dict[str, int] = {}
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i : i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            out.update(self.conn.execute(f"SELECT key, docnum FROM docs WHERE key IN ({marks})", chunk).fetchall())
        return out

    def captures_of(self, docnum: int) -> list[str]:
        rows = self.conn.execute("SELECT ts FROM captures WHERE docnum=? ORDER BY ts", (docnum,)).fetchall()
        return [f"{ts:014d}" for (ts,) in rows]

    def all_captures(self) -> dict[str, list[str]]:
        """key -> sorted capture timestamps, for every document (tests, rebuild comparisons)."""
        out: dict[str, list[str]] = {}
        for key, ts in self.conn.execute(
            "SELECT docs.key, captures.ts FROM docs JOIN captures USING (docnum) ORDER BY docs.key, captures.ts"
        ):
            out.setdefault(key, []).append(f"{ts:014d}")
        return out

    # runs

    def runs(self) -> set[str]:
        return {run for (run,) in self.conn.execute("SELECT run_id FROM runs")}

    # writing: one transaction

    def add(self, docs: Iterable[tuple[int, str]], captures: Iterable[tuple[int, str]], runs: Iterable[str]) -> int:
        """Document rows, captures (duplicates ignored) and runs, in one transaction. Returns the
        number of capture rows that were new."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR IGNORE INTO docs(docnum, key) VALUES (?, ?)", docs)
            before = conn.total_changes
            conn.executemany(
                "INSERT OR IGNORE INTO captures(docnum, ts) VALUES (?, ?)", ((d, int(ts)) for d, ts in captures)
            )
            added = conn.total_changes - before
            conn.executemany("INSERT OR IGNORE INTO runs(run_id) VALUES (?)", ((r,) for r in runs))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return added


class CaptureTable:
    """Every capture of an index generation in memory (12 bytes each, read when first needed):
    the captures of a document, and the documents captured in a date range, without a query
    per hit. 100,000 documents (260,000 captures): 0.2 s to read each half."""

    def __init__(self, store: CaptureStore, lock: threading.Lock | None = None):
        self._store = store
        self._lock = lock or threading.Lock()  # one reader of the store at a time
        self._by_doc: tuple[array, array] | None = None
        self._by_ts: tuple[array, array] | None = None

    def _docs(self) -> tuple[array, array]:
        if self._by_doc is None:
            with self._lock:
                if self._by_doc is None:
                    rows = self._store.conn.execute("SELECT docnum, ts FROM captures ORDER BY docnum, ts").fetchall()
                    docs = array("I", map(itemgetter(0), rows))
                    stamps = array("q", map(itemgetter(1), rows))
                    top = docs[-1] + 2 if docs else 1
                    offsets = array("I", map(bisect.bisect_left, repeat(docs, top), range(top)))
                    self._by_doc = offsets, stamps
        return self._by_doc

    def _dates(self) -> tuple[array, array]:
        if self._by_ts is None:
            with self._lock:
                if self._by_ts is None:
                    rows = self._store.conn.execute("SELECT ts, docnum FROM captures ORDER BY ts, docnum").fetchall()
                    self._by_ts = array("q", map(itemgetter(0), rows)), array("I", map(itemgetter(1), rows))
        return self._by_ts

    def of(self, docnum: int, lo: str | None = None, hi: str | None = None) -> list[str]:
        """The document's capture timestamps (14 digits), within [lo, hi] when given."""
        offsets, stamps_by_doc = self._docs()
        if docnum + 1 >= len(offsets):
            return []
        stamps: Iterable[int] = stamps_by_doc[offsets[docnum] : offsets[docnum + 1]]
        if lo is not None or hi is not None:
            low = int(lo) if lo else 0
            high = int(hi) if hi else 99999999999999
            stamps = [ts for ts in stamps if low <= ts <= high]
        return [f"{ts:014d}" for ts in stamps]

    def docs_between(self, lo: str | None, hi: str | None) -> set[int]:
        """Documents with at least one capture in [lo, hi]."""
        stamps, docs = self._dates()
        start = bisect.bisect_left(stamps, int(lo)) if lo else 0
        end = bisect.bisect_right(stamps, int(hi)) if hi else len(stamps)
        return set(docs[start:end])

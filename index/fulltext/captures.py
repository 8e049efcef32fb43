"""When each document of the full-text index was captured: SQLite, beside the Whoosh index.

A document of the full-text index is one payload of one URL; it is captured again at every later
harvest that finds the same payload (a revisit, a 304). Keeping those dates in the Whoosh
documents meant re-writing every unchanged page's document, text and all, after every run. Here
they are rows, keyed by the document's Whoosh number, which never changes
(``index.fulltext.postings.BulkWriter`` only appends and keeps numbers when it merges):

    docs(docnum, key)              key = "<url> <payload digest>"
    captures(docnum, ts)           ts = 14-digit timestamp, one row per capture
    runs(run_id)                   harvest runs whose captures are in
    run_figures(run_id, figures)   what indexing a run in the background did (JSON), once done

``index.fulltext`` commits Whoosh first and these rows second, in one transaction: after a crash
between the two, documents past ``doc_count()`` are Whoosh's alone and the run is not marked
indexed, so the next ``index_run`` adds their rows and the run's captures again.

For queries, ``CaptureTable`` reads every capture in two orders (by document, by date) from a
file of arrays beside the database (``TABLE_FILE``), mapped in place: a date filter is a slice of
the sorted dates.
"""

from __future__ import annotations

import bisect
import json
import mmap
import os
import sqlite3
import struct
import sys
import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CaptureStore", "CaptureTable", "FILENAME", "TABLE_FILE", "read_existing", "write_table"]

FILENAME = "captures.sqlite"
_CHUNK = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs(docnum INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS captures(docnum INTEGER NOT NULL, ts INTEGER NOT NULL,
                                    PRIMARY KEY (docnum, ts)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS captures_ts ON captures(ts, docnum);
CREATE TABLE IF NOT EXISTS runs(run_id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS run_figures(run_id TEXT PRIMARY KEY, figures TEXT NOT NULL);
"""


T = TypeVar("T")


def read_existing(directory: Path, read: Callable[[CaptureStore], T], default: T) -> T:
    """``read(store)`` on the index directory's capture store, opened read-only (no Whoosh, no
    writes); ``default`` when there is none yet or it cannot be read."""
    if not (Path(directory) / FILENAME).is_file():
        return default
    try:
        with CaptureStore(directory, readonly=True) as store:
            return read(store)
    except sqlite3.Error:
        return default


class CaptureStore:
    """The SQLite file in an index directory. ``readonly`` opens it for queries."""

    def __init__(self, directory: Path, readonly: bool = False):
        path = self.path = Path(directory) / FILENAME
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

    def put_run_figures(self, run_id: str, figures: dict) -> None:
        """What indexing a run in the background did (``index.fulltext.follow``), as JSON."""
        self.conn.execute(
            "INSERT OR REPLACE INTO run_figures VALUES (?, ?)", (run_id, json.dumps(figures, sort_keys=True))
        )

    def run_figures(self, run_id: str) -> dict | None:
        """The figures of a run indexed in the background, once it is done; None before (and for a
        run indexed otherwise, or a store older than the table)."""
        try:
            row = self.conn.execute("SELECT figures FROM run_figures WHERE run_id=?", (run_id,)).fetchone()
        except sqlite3.OperationalError:  # no such table: a read-only store written before it existed
            return None
        return json.loads(row[0]) if row else None

    # writing: one transaction

    def add(
        self, docs: Iterable[tuple[int, str]], captures: Iterable[tuple[int, str | int]], runs: Iterable[str]
    ) -> int:
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
    """Every capture of an index generation, for queries: the captures of a document, and the
    documents captured in a date range, without a query per hit. Two orders of the same rows (by
    document: offsets and timestamps; by date: timestamps and documents) in ``TABLE_FILE``, memory
    mapped and read in place: opening it costs nothing and a date range is a slice found by binary
    search. Reading the rows from SQLite instead took 0.2 s per order at 100,000 documents (260,000
    captures), the first date query's wait; so the table is written with the index
    (``write_table``) and again, from SQLite, by the first reader that finds it older than
    ``captures.sqlite`` (an ``index_run`` since)."""

    def __init__(self, store: CaptureStore, lock: threading.Lock | None = None):
        self._store = store
        self._lock = lock or threading.Lock()  # one reader of the store at a time
        self._table: _Table | None = None

    def _loaded(self) -> _Table:
        if self._table is None:
            with self._lock:
                if self._table is None:
                    self._table = _load_table(self._store)
        return self._table

    def of(self, docnum: int, lo: str | None = None, hi: str | None = None) -> list[str]:
        """The document's capture timestamps (14 digits), within [lo, hi] when given."""
        table = self._loaded()
        offsets, stamps_by_doc = table.offsets, table.stamps_by_doc
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
        table, start, end = self._between(lo, hi)
        return set(table.docs_by_ts[start:end])

    def mask_between(self, lo: str | None, hi: str | None, size: int) -> np.ndarray:
        """``docs_between`` as a mask of ``size`` booleans (a million documents: a millisecond, where
        the set took 30)."""
        import numpy as np  # here: a harvest imports this module, and numpy costs it 0.1 s

        table, start, end = self._between(lo, hi)
        mask = np.zeros(size, dtype=np.bool_)
        if end > start:
            docs = np.frombuffer(cast("memoryview | array", table.docs_by_ts), dtype=np.uint32)[start:end]
            mask[docs[docs < size]] = True
        return mask

    def _between(self, lo: str | None, hi: str | None) -> tuple[_Table, int, int]:
        """The table, and the slice of its captures by date that fall in [lo, hi]."""
        table = self._loaded()
        stamps = table.stamps_by_ts
        start = bisect.bisect_left(stamps, int(lo)) if lo else 0
        end = bisect.bisect_right(stamps, int(hi)) if hi else len(stamps)
        return table, start, end


# -- the table file ----------------------------------------------------------------------------------
#
#   header (64 bytes): b"SCT1", captures.sqlite's mtime_ns and size when the rows were read,
#                      len(offsets), captures
#   stamps_by_doc: int64[captures]    stamps_by_ts: int64[captures]
#   offsets: uint32[documents + 1]    docs_by_ts: uint32[captures]       (little-endian)

TABLE_FILE = "captures.table"
_MAGIC = b"SCT1"
_HEADER = struct.Struct("<4sqqqq")
_HEADER_SIZE = 64
_NATIVE = sys.byteorder == "little"  # the arrays are read in place only where they are native


@dataclass
class _Table:
    offsets: Sequence[int]
    stamps_by_doc: Sequence[int]
    stamps_by_ts: Sequence[int]
    docs_by_ts: Sequence[int]


def _stamp(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


def _read_rows(store: CaptureStore) -> _Table:
    conn = store.conn
    rows = conn.execute("SELECT docnum, ts FROM captures ORDER BY docnum, ts").fetchall()
    docs = array("I", map(itemgetter(0), rows))
    stamps = array("q", map(itemgetter(1), rows))
    del rows
    top = docs[-1] + 2 if docs else 1
    offsets = array("I", map(bisect.bisect_left, repeat(docs, top), range(top)))
    rows = conn.execute("SELECT ts, docnum FROM captures ORDER BY ts, docnum").fetchall()
    return _Table(offsets, stamps, array("q", map(itemgetter(0), rows)), array("I", map(itemgetter(1), rows)))


def write_table(store: CaptureStore, captures: tuple[array, array] | None = None) -> None:
    """Write ``TABLE_FILE`` beside the store (by rename: readers keep their map), from its rows,
    or from ``captures`` when given: the (docnum, timestamp) arrays just added to it, which a build
    holds anyway. Reading a million documents' 2.6 million rows back as tuples was the build's
    peak of memory (1.2 GB)."""
    stamp = _stamp(store.path)
    _write(store, stamp, _read_rows(store) if captures is None else _table_of(*captures))


def _table_of(docs: array, stamps: array) -> _Table:
    """The table of (docnum, timestamp) pairs, as ``_read_rows`` orders them."""
    import numpy as np

    d = np.frombuffer(docs, dtype=np.uint32) if len(docs) else np.zeros(0, np.uint32)
    ts = np.frombuffer(stamps, dtype=np.int64) if len(stamps) else np.zeros(0, np.int64)
    by_doc = np.lexsort((ts, d))
    d, ts = d[by_doc], ts[by_doc]
    if len(d) > 1:  # a pair given twice is one row (the store ignores duplicates)
        once = np.concatenate(([True], (d[1:] != d[:-1]) | (ts[1:] != ts[:-1])))
        d, ts = d[once], ts[once]
    top = int(d[-1]) + 2 if len(d) else 1
    offsets = np.searchsorted(d, np.arange(top), side="left").astype(np.uint32)
    by_ts = np.lexsort((d, ts))
    return _Table(_as_array("I", offsets), _as_array("q", ts), _as_array("q", ts[by_ts]), _as_array("I", d[by_ts]))


def _as_array(typecode: str, values: np.ndarray) -> array:
    import numpy as np

    found = array(typecode)
    found.frombytes(values.astype(np.dtype(typecode), copy=False).tobytes())
    return found


def _write(store: CaptureStore, stamp: tuple[int, int], table: _Table) -> None:
    if not _NATIVE:
        return
    path = store.path.with_name(TABLE_FILE)
    tmp = path.with_name(f"{TABLE_FILE}.{os.getpid()}-{threading.get_ident()}.tmp")
    header = _HEADER.pack(_MAGIC, stamp[0], stamp[1], len(table.offsets), len(table.stamps_by_doc))
    with open(tmp, "wb") as fh:
        fh.write(header.ljust(_HEADER_SIZE, b"\0"))
        for part in (table.stamps_by_doc, table.stamps_by_ts, table.offsets, table.docs_by_ts):
            assert isinstance(part, array)
            part.tofile(fh)
    os.replace(tmp, path)


def _mapped(path: Path, stamp: tuple[int, int]) -> _Table | None:
    """The table file in place, or None when it is missing, damaged or older than the rows."""
    try:
        with open(path, "rb") as fh:
            data = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
    except (OSError, ValueError):
        return None
    if len(data) < _HEADER_SIZE:
        return None
    magic, mtime, size, n_offsets, n = _HEADER.unpack_from(data)
    if magic != _MAGIC or (mtime, size) != stamp or len(data) != _HEADER_SIZE + 20 * n + 4 * n_offsets:
        return None
    view = memoryview(data)
    at = _HEADER_SIZE
    stamps_by_doc = view[at : at + 8 * n].cast("q")
    stamps_by_ts = view[at + 8 * n : at + 16 * n].cast("q")
    at += 16 * n
    offsets = view[at : at + 4 * n_offsets].cast("I")
    docs_by_ts = view[at + 4 * n_offsets : at + 4 * n_offsets + 4 * n].cast("I")
    return _Table(offsets, stamps_by_doc, stamps_by_ts, docs_by_ts)


def _load_table(store: CaptureStore) -> _Table:
    stamp = _stamp(store.path)  # before the rows are read: a commit after it makes the file stale
    if _NATIVE and (table := _mapped(store.path.with_name(TABLE_FILE), stamp)) is not None:
        return table
    table = _read_rows(store)
    try:
        _write(store, stamp, table)
    except OSError:  # a read-only index directory: every reader reads the rows
        pass
    return table

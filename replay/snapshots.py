"""Which snapshot a timestamp falls in: a moment during a finished run means that run's snapshot.

A harvest run takes time, a browser run more: a page's navigation is captured at T, and the JSON,
lazy images and later chunks its scripts ask for seconds after T, in the same run. Replayed at T
(its own capture's timestamp, as the calendar and search name it), the page would find those
resources "at or before T" only in an earlier run, and show the earlier version's data beside this
version's HTML. So replay's as-of ordering (``replay.asof``) asks not for T but for the end of
the run in progress at T: the archive as it stood when that snapshot was complete. A timestamp
outside every finished run (between runs, before the first, during a run still going) is left as
it is.

Runs come from the collection's harvest state (``runs``: ``started``, and ``snapshot``, the
14-digit timestamp that addresses the run's snapshot, its last capture), read again only when the
database file or its WAL changes.
"""

from __future__ import annotations

import bisect
import os
import sqlite3
from pathlib import Path

from index.storage.state import open_readonly
from strata.times import ts14_of


class RunSpans:
    """Per collection, the finished runs as (start, end) 14-digit timestamps."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._cache: dict[str, tuple[tuple, list[str], list[str]]] = {}

    def extend(self, coll: str, as_of: str) -> str:
        """``as_of`` (14 digits), or the end of the finished run whose span holds it."""
        starts, ends = self._spans(coll)
        at = bisect.bisect_right(starts, as_of) - 1
        if at >= 0 and as_of <= ends[at]:
            return ends[at]
        return as_of

    def _spans(self, coll: str) -> tuple[list[str], list[str]]:
        db = self.root / coll / "strata" / "harvest.sqlite"
        stamp = (_stat(db), _stat(Path(str(db) + "-wal")))
        cached = self._cache.get(coll)
        if cached is not None and cached[0] == stamp:
            return cached[1], cached[2]
        spans = _read_spans(db) if stamp[0] is not None else []
        starts, ends = [s for s, _ in spans], [e for _, e in spans]
        self._cache[coll] = (stamp, starts, ends)
        return starts, ends


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_ino, st.st_size


def _read_spans(db: Path) -> list[tuple[str, str]]:
    conn = open_readonly(db)
    if conn is None:
        return []
    try:
        rows = conn.execute(
            "SELECT started, snapshot FROM runs WHERE status != 'running' AND started IS NOT NULL "
            "AND snapshot IS NOT NULL"
        ).fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    spans = sorted((ts14_of(started), snapshot) for started, snapshot in rows if len(snapshot or "") == 14)
    # overlapping spans (never from one collection's lock; possible in files from elsewhere): keep
    # each start with the latest end reached so far, so a lookup never ends before its own run
    merged: list[tuple[str, str]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged

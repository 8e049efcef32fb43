"""Collection and site listings counted as a level sees them: a hidden capture adds to no count.

``index.state`` counts with SQL (``summary``, ``sites``, ``runs``); when the collection's rules hide
something from the level, the same figures are counted here from every capture's (url, host,
timestamp, run, class) through ``RuleSet.verdict``. A host, a seed or a run whose every capture is
hidden is not listed at all. Byte figures of a run cannot be split by capture, so they are left out
(None) whenever anything of the collection is hidden from the level.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections import OrderedDict, defaultdict

from index import state
from index.access.rules import RuleSet, urlkey

# a run's figure and the capture classes it counts
_FIGURES = {
    "new": ("new",),
    "changed": ("changed",),
    "soft": ("soft",),
    "unchanged": ("unchanged",),
    "not_modified": ("not_modified",),
    "deleted": ("deleted",),
    "redirect": ("redirect",),
    "errors": ("error",),
}


_cache: OrderedDict[tuple, tuple] = OrderedDict()  # (database, rule set, level[, minute]) -> counts
_cache_lock = threading.Lock()


def _database_stamp(conn: sqlite3.Connection) -> tuple | None:
    """The database file's identity and its write-ahead log's: a harvest that adds captures changes it."""
    row = conn.execute("PRAGMA database_list").fetchone()
    path = row[2] if row else ""
    if not path:
        return None
    out: list = [path]
    for name in (path, path + "-wal"):
        try:
            st = os.stat(name)
            out += [st.st_mtime_ns, st.st_size, st.st_ino]
        except OSError:
            out.append(None)
    return tuple(out)


class VisibleCounts:
    """Every count the collection's pages show, over the captures ``level`` may see. The counts of a
    (database, rule set, level) are kept for the next page (recounted each minute when a rule has a
    date condition), so a home page of large collections is not a full scan per request."""

    def __init__(self, conn: sqlite3.Connection, rules: RuleSet, level: str):
        self.conn, self.rules, self.level = conn, rules, level
        self.filtered = rules.hides_from(level)
        self._hosts: dict[str, dict] = {}
        self._runs: dict[str, dict] = {}
        self._visible_urls: set[str] = set()
        self._captures = 0
        if self.filtered:
            stamp = _database_stamp(conn)
            key = (stamp, rules.serial, level, int(time.time() // 60) if rules.dated else 0)
            cached = _cache.get(key) if stamp is not None else None
            if cached is None:
                self._count()
                cached = (self._hosts, self._runs, self._visible_urls, self._captures)
                with _cache_lock:
                    _cache[key] = cached
                    while len(_cache) > 32:
                        _cache.popitem(last=False)
            self._hosts, self._runs, self._visible_urls, self._captures = cached

    def _count(self) -> None:
        hosts: dict[str, dict] = {}
        runs: dict[str, dict] = defaultdict(lambda: defaultdict(int))
        run_sets: dict[str, set] = defaultdict(set)
        for url, host, ts, run_id, kind in state.capture_points(self.conn):
            if not self.rules.verdict_key(urlkey(url), ts, self.level).visible:
                continue
            self._captures += 1
            self._visible_urls.add(url)
            h = hosts.get(host)
            if h is None:
                h = hosts[host] = {"host": host, "first": ts, "last": ts, "captures": 0, "urls": set()}
            h["first"], h["last"] = min(h["first"], ts), max(h["last"], ts)
            h["captures"] += 1
            h["urls"].add(url)
            run_sets[host].add(run_id)
            runs[run_id]["urls_fetched"] += 1
            runs[run_id][kind or ""] += 1
        for host, h in hosts.items():
            h["urls"] = len(h["urls"])
            h["snapshots"] = len(run_sets[host])
        self._hosts = hosts
        self._runs = {k: dict(v) for k, v in runs.items()}

    def summary(self) -> dict:
        info = state.summary(self.conn)
        if not self.filtered:
            return info
        visible_runs = self.runs()
        info.update(captures=self._captures, urls=len(self._visible_urls), runs=len(visible_runs))
        info["latest"] = visible_runs[0] if visible_runs else None
        return info

    def sites(self) -> list[dict]:
        rows = state.sites(self.conn)
        if not self.filtered:
            return rows
        out = []
        for row in rows:
            h = self._hosts.get(row["host"])
            if h is None:
                continue
            seeds = [s for s in row["seeds"] if s in self._visible_urls]
            out.append({**row, **h, "seeds": seeds})
        return out

    def seeds(self) -> list[str]:
        seeds = state.seeds(self.conn)
        return seeds if not self.filtered else [s for s in seeds if s in self._visible_urls]

    def runs(self) -> list[dict]:
        rows = state.runs(self.conn)
        if not self.filtered:
            return rows
        out = []
        for run in rows:
            counted = self._runs.get(run["run_id"])
            if counted is None:
                continue
            figures = {"urls_fetched": counted.get("urls_fetched", 0), "bytes_stored": None, "bytes_saved": None}
            for name, classes in _FIGURES.items():
                figures[name] = sum(counted.get(c, 0) for c in classes)
            out.append({**run, "figures": figures, "restricted_figures": True})
        return out

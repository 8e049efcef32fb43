"""Collection and site listings counted as a level sees them: a hidden capture adds to no count.

``index.state`` counts with SQL (``summary``, ``sites``, ``runs``); when the collection's rules hide
something from the level, the same figures are counted here from every capture's (url, host,
timestamp, run, class) through ``RuleSet.verdict``. A host, a seed or a run whose every capture is
hidden is not listed at all. Byte figures of a run cannot be split by capture, so they are left out
(None) whenever anything of the collection is hidden from the level.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict

from index import state
from index.access import RuleSet, urlkey

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


class VisibleCounts:
    """Every count the collection's pages show, over the captures ``level`` may see."""

    def __init__(self, conn: sqlite3.Connection, rules: RuleSet, level: str):
        self.conn, self.rules, self.level = conn, rules, level
        self.filtered = rules.hides_from(level)
        self._hosts: dict[str, dict] = {}
        self._runs: dict[str, dict] = {}
        self._visible_urls: set[str] = set()
        self._captures = 0
        if self.filtered:
            self._count()

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

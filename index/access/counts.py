"""Collection and site listings counted as a level sees them: a hidden capture adds to no count.

``index.storage.state`` counts with SQL (``summary``, ``sites``, ``runs``); when the collection's rules hide
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

from index.access.rules import RuleSet, urlkey
from index.storage import state

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


def database_stamp(conn: sqlite3.Connection) -> tuple | None:
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
            stamp = database_stamp(conn)
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


def visible_sitemap_children(
    conn: sqlite3.Connection, rules: RuleSet, level: str, host: str, folder: str, since: str | None, default_since
) -> tuple[list[dict], str]:
    """``state.sitemap_children`` as ``level`` sees it: a hidden capture adds to no count, and an
    entry whose every capture is hidden is not listed. Counted in SQL when nothing is hidden. ``since``
    None: ``default_since(last capture)``. Returns the entries and the date their changes count from."""
    if not rules.hides_from(level):
        rows = state.sitemap_children(conn, host, folder, None)
        if not rows:
            return [], since or ""
        since = since or default_since(max(r["last"] for r in rows))
        state.add_sitemap_changes(conn, host, folder, since, {r["name"]: r for r in rows})
        return rows, since
    points = [
        (url, ts, kind)
        for url, ts, kind in state.sitemap_points(conn, host, folder)
        if rules.verdict_key(urlkey(url), ts, level).visible
    ]
    if not points:
        return [], since or ""
    since = since or default_since(max(ts for _, ts, _ in points))
    entries: dict[str, dict] = {}
    urls: dict[str, set] = defaultdict(set)
    changed: dict[str, set] = defaultdict(set)
    for url, ts, kind in points:
        name = _child_name(url, folder)
        e = entries.get(name)
        if e is None:
            e = entries[name] = {"name": name, "captures": 0, "first": ts, "last": ts, "url": url}
        e["captures"] += 1
        e["first"], e["last"], e["url"] = min(e["first"], ts), max(e["last"], ts), min(e["url"], url)
        urls[name].add(url)
        if ts >= since and kind in ("new", "changed", "deleted"):
            changed[name].add(url)
    for name, e in entries.items():
        e["urls"], e["changed"] = len(urls[name]), len(changed[name])
    return list(entries.values()), since


def _child_name(url: str, folder: str) -> str:
    """The name of the entry under ``folder`` that holds ``url`` (as ``state.sitemap_children``)."""
    after_scheme = url.split("//", 1)[1]
    rest = after_scheme[after_scheme.index("/") :][len(folder) :]
    slash, query = rest.find("/"), rest.find("?")
    return rest[: slash + 1] if slash >= 0 and (query < 0 or slash < query) else rest


# the holdings overview's columns and the capture classes each counts
HOLDINGS_KINDS = {
    "new": ("new",),
    "changed": ("changed", "soft"),
    "unchanged": ("unchanged", "not_modified"),
    "deleted": ("deleted",),
    "other": ("redirect", "error", None, ""),
}
NO_HOST = "(no host)"  # a URL whose host the state does not hold
_KIND_OF = {cls: kind for kind, classes in HOLDINGS_KINDS.items() for cls in classes}


def visible_holdings(conn: sqlite3.Connection, rules: RuleSet, level: str) -> dict[str, list[dict]]:
    """The collection's captures as ``level`` sees them, per month and per site: captures, record
    bytes, and captures of each kind (``HOLDINGS_KINDS``); per site also URLs, first and last
    month. Kept for the next page like ``VisibleCounts``."""
    filtered = rules.hides_from(level)
    stamp = database_stamp(conn)
    key: tuple = ("holdings", stamp, rules.serial if filtered else None, level if filtered else None)
    if filtered and rules.dated:
        key += (int(time.time() // 60),)
    cached = _cache.get(key) if stamp is not None else None
    if cached is not None:
        return cached  # type: ignore[return-value]
    site_urls: dict[str, set] = defaultdict(set)
    if filtered:
        months, sites = _fold(_visible_holding_rows(conn, rules, level, site_urls))
        url_counts = {host or NO_HOST: len(urls) for host, urls in site_urls.items()}
    else:
        months, sites = _fold(state.holdings(conn))
        url_counts = {host or NO_HOST: n for host, n in state.site_url_counts(conn).items()}
    for host, row in sites.items():
        row["urls"] = url_counts.get(host, 0)
    result = {"months": [months[m] for m in sorted(months)], "sites": [sites[h] for h in sorted(sites)]}
    if stamp is not None:
        with _cache_lock:
            _cache[key] = result  # type: ignore[assignment]
            while len(_cache) > 32:
                _cache.popitem(last=False)
    return result


def _fold(rows) -> tuple[dict[str, dict], dict[str, dict]]:
    """``state.holdings``' rows summed per month and per site."""
    months: dict[str, dict] = {}
    sites: dict[str, dict] = {}
    for month, host, cls, count, size, _ in rows:
        host = host or NO_HOST
        kind = _KIND_OF.get(cls, "other")
        for table, name in ((months, month), (sites, host)):
            row = table.get(name)
            if row is None:
                row = table[name] = {"name": name, "captures": 0, "bytes": 0, **dict.fromkeys(HOLDINGS_KINDS, 0)}
            row["captures"] += count
            row["bytes"] += size
            row[kind] += count
        site = sites[host]
        site["first"], site["last"] = min(site.get("first", month), month), max(site.get("last", month), month)
    return months, sites


def _visible_holding_rows(conn: sqlite3.Connection, rules: RuleSet, level: str, site_urls: dict[str, set]):
    """``state.holdings``' rows, one a visible capture; each site's visible URLs go to ``site_urls``."""
    for url, host, ts, cls, length in state.holdings_points(conn):
        if rules.verdict_key(urlkey(url), ts, level).visible:
            site_urls[host].add(url)
            yield ts[:6], host, cls, 1, length, 1

"""A host's archived URLs as a tree, one folder at a time: for each entry under a folder (a folder
of its own, a page, or the folder's own page, named ``""``), how many URLs and captures it holds,
its first and last capture, and how many of its URLs changed (new, changed or deleted) since a date.

Counted by ``index.storage.state.sitemap_children`` (SQL over the host's captures), or, when the collection's
access rules hide something from the reader, by ``index.access.counts.visible_sitemap_children``
(every capture through ``RuleSet.verdict``): a hidden capture counts nowhere and an entry of hidden
captures only is not listed. ``site_map(...)`` answers what the site map page and its JSON show.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections import OrderedDict
from datetime import datetime, timedelta

from index.access.counts import database_stamp, visible_sitemap_children
from index.access.rules import RuleSet
from strata.errors import ConfigError

__all__ = ["MAX_ENTRIES", "Entry", "SiteMap", "check_folder", "site_map"]

MAX_ENTRIES = 500  # entries a folder lists (the largest first); the totals count them all
CACHED = 64  # folders kept for the next request, until the database changes
DEFAULT_SINCE_DAYS = 90  # "changed since" defaults to this long before the host's last capture


@dataclasses.dataclass
class Entry:
    name: str  # "news/" (a folder), "a.html" (a page), "" (the folder's own page)
    urls: int
    captures: int
    first: str
    last: str
    changed: int  # URLs with a change since the date
    url: str  # one of its URLs (a page's own)

    @property
    def folder(self) -> bool:
        return self.name.endswith("/")

    @property
    def share_changed(self) -> float:
        return self.changed / self.urls if self.urls else 0.0

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "folder": self.folder}


@dataclasses.dataclass
class SiteMap:
    host: str
    folder: str
    since: str  # 14 digits
    entries: list[Entry]  # folders, then pages; each by URLs, most first; at most MAX_ENTRIES
    total: Entry  # the whole folder
    cut: int  # entries left out past MAX_ENTRIES

    @property
    def parents(self) -> list[tuple[str, str]]:
        """(name, folder path) from the host's root down to this folder."""
        out, path = [("/", "/")], "/"
        for part in self.folder.strip("/").split("/"):
            if part:
                path += part + "/"
                out.append((part + "/", path))
        return out

    def as_dict(self) -> dict:
        return {
            "host": self.host,
            "folder": self.folder,
            "since": self.since,
            "total": self.total.as_dict(),
            "entries": [e.as_dict() for e in self.entries],
            "left_out": self.cut,
        }


def check_folder(folder: str | None) -> str:
    """A folder path: starts and ends with ``/`` (``news`` is ``/news/``)."""
    folder = (folder or "/").strip()
    if "\x00" in folder or len(folder) > 2000:
        raise ConfigError("a folder is a path such as /news/")
    folder = "/" + folder.lstrip("/")
    return folder if folder.endswith("/") else folder + "/"


_cache: OrderedDict[tuple, SiteMap | None] = OrderedDict()
_lock = threading.Lock()


def site_map(
    conn: sqlite3.Connection, rules: RuleSet, level: str, host: str, folder: str, since: str | None
) -> SiteMap | None:
    """The folder of ``host`` as ``level`` sees it; None when it holds nothing visible.
    ``since``: 14 digits, or None for ``DEFAULT_SINCE_DAYS`` before the folder's last capture.
    Kept for the next request of the same folder until the database (a harvest) or the rules change;
    the root of a host of 100,000 URLs is one pass over its captures."""
    folder = check_folder(folder)
    stamp = database_stamp(conn)
    key = (stamp, rules.serial, level, host, folder, since)
    if stamp is not None and not rules.dated:
        with _lock:
            if key in _cache:
                _cache.move_to_end(key)
                return _cache[key]
    found = _site_map(conn, rules, level, host, folder, since)
    if stamp is not None and not rules.dated:
        with _lock:
            _cache[key] = found
            while len(_cache) > CACHED:
                _cache.popitem(last=False)
    return found


def _default_since(last: str) -> str:
    return (datetime.strptime(last[:8], "%Y%m%d") - timedelta(days=DEFAULT_SINCE_DAYS)).strftime("%Y%m%d000000")


def _site_map(
    conn: sqlite3.Connection, rules: RuleSet, level: str, host: str, folder: str, since: str | None
) -> SiteMap | None:
    rows, since = visible_sitemap_children(conn, rules, level, host, folder, since, _default_since)
    if not rows:
        return None
    entries = [Entry(**row) for row in rows]
    total = Entry(
        name=folder,
        urls=sum(e.urls for e in entries),
        captures=sum(e.captures for e in entries),
        first=min(e.first for e in entries),
        last=max(e.last for e in entries),
        changed=sum(e.changed for e in entries),
        url=min(e.url for e in entries),
    )
    entries.sort(key=lambda e: (not e.folder, -e.urls, e.name))
    return SiteMap(host, folder, since, entries[:MAX_ENTRIES], total, max(0, len(entries) - MAX_ENTRIES))

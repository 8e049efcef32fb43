"""A site's publications: the PDFs archived on one host, with their titles and dates (as NDL's
WARP lists them), from the full-text index.

``publications(collection, host)`` gives one entry per URL: its title (the PDF's own, else its
file name), author, description, published date (the PDF's creation date), and its captures
(every timestamp, first, last). The document shown for a URL is its most recently captured
version. Entries are ordered by published date, newest first, then those without one, by title.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from urllib.parse import unquote, urlsplit

from index.collection import Collection
from index.fulltext.metadata import date_key
from index.fulltext.query import open_view

__all__ = ["MAX_PUBLICATIONS", "publications"]

MAX_PUBLICATIONS = 5000


def publications(
    collection: Collection, host: str, limit: int = MAX_PUBLICATIONS, shown: Callable[[str, str], bool] | None = None
) -> dict:
    """``{"host", "entries": [...], "total", "indexed"}``; ``indexed`` is False when the collection
    has no full-text index (then there are no entries). ``shown(url, timestamp)``: the captures a
    reader may see (``index.access.exposure``); the others count for nothing, their documents' titles
    included."""
    view = open_view(collection)
    if view is None:
        return {"host": host, "entries": [], "total": 0, "indexed": False}
    docs = view.filter_docs("host", host) & view.filter_docs("mtype", "pdf")
    by_url: dict[str, dict] = {}
    url_col = view.columns["url"]
    for docnum in docs:
        stamps = view.captures.of(docnum)
        url = url_col[docnum]
        if shown is not None:
            stamps = [ts for ts in stamps if shown(url, ts)]
        if not stamps:
            continue
        entry = by_url.get(url)
        if entry is None:
            entry = by_url[url] = {"url": url, "captures": set(), "docnum": docnum, "latest": ""}
        entry["captures"].update(stamps)
        if stamps[-1] > entry["latest"]:
            entry["latest"], entry["docnum"] = stamps[-1], docnum
    entries = []
    for entry in by_url.values():
        stored = view.searcher.stored_fields(entry["docnum"])
        title, description, _, _, _ = view.texts(entry["docnum"])
        stamps = sorted(entry["captures"])
        entries.append(
            {
                "url": entry["url"],
                "title": title or _file_name(entry["url"]),
                "has_title": bool(title),
                "author": stored.get("author") or "",
                "description": description or "",
                "published": stored.get("published") or "",
                "size": stored.get("size") or 0,
                "captures": stamps,
                "count": len(stamps),
                "first": stamps[0],
                "last": stamps[-1],
            }
        )
    entries.sort(key=lambda e: (e["title"].lower(), e["url"]))
    entries.sort(key=lambda e: date_key(e["published"]) or "", reverse=True)
    return {"host": host, "entries": entries[:limit], "total": len(entries), "indexed": True}


def _file_name(url: str) -> str:
    path = unquote(urlsplit(url).path)
    return posixpath.basename(path.rstrip("/")) or url

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
from index.fulltext.engine import open_backend
from index.fulltext.metadata import date_key

__all__ = ["MAX_PUBLICATIONS", "publications"]

MAX_PUBLICATIONS = 5000


def publications(
    collection: Collection, host: str, limit: int = MAX_PUBLICATIONS, shown: Callable[[str, str], bool] | None = None
) -> dict:
    """``{"host", "entries": [...], "total", "indexed"}``; ``indexed`` is False when the collection
    has no full-text index (then there are no entries). ``shown(url, timestamp)``: the captures a
    reader may see (``index.access.exposure``); the others count for nothing, their documents' titles
    included."""
    backend = open_backend(collection)
    if backend is None:
        return {"host": host, "entries": [], "total": 0, "indexed": False}
    by_url: dict[str, dict] = {}
    for hit in backend.documents_of(host, "pdf"):
        stamps = hit.stamps
        if shown is not None:
            stamps = [ts for ts in stamps if shown(hit.url, ts)]
        if not stamps:
            continue
        entry = by_url.get(hit.url)
        if entry is None:
            entry = by_url[hit.url] = {"url": hit.url, "captures": set(), "hit": hit, "latest": ""}
        entry["captures"].update(stamps)
        if stamps[-1] > entry["latest"]:
            entry["latest"], entry["hit"] = stamps[-1], hit
    entries = []
    found = list(by_url.values())
    for entry, text in zip(found, backend.details(entry["hit"] for entry in found), strict=True):
        stamps = sorted(entry["captures"])
        entries.append(
            {
                "url": entry["url"],
                "title": text.title or _file_name(entry["url"]),
                "has_title": bool(text.title),
                "author": text.author,
                "description": text.description,
                "published": text.published,
                "size": text.size,
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

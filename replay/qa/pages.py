"""The pages of a run QA checks, and what their capture recorded of them.

A page is an HTML capture of the run that answered (2xx, or a revisit of such a payload: a page
that did not change is still a page of the snapshot), each URL once, at its capture's timestamp.
A browser-captured page also has its screenshot, rendered text and request list from capture
time (``strata.pageuris``: ``urn:view:``, ``urn:text:``, ``urn:pageinfo:`` records of the run's
files, found through the CDXJ index); an HTTP-captured page has none, and QA then reports what
replay lacked without a capture to compare with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from index.cdx.capture_index import capture_lines
from index.collection import Collection
from index.payload import read_record
from index.storage.state import HarvestState
from index.surtkey import surt_key
from strata.errors import ConfigError
from strata.media import HTML_TYPES
from strata.pageuris import PAGEINFO, TEXT, VIEW, page_uri


@dataclass
class Page:
    url: str
    timestamp: str  # the page capture's, 14 digits
    records: dict[str, tuple[str, int]] = field(default_factory=dict)  # kind -> (WARC file, offset)


def run_pages(collection: Collection, run_id: str, limit: int | None = None) -> list[Page]:
    """The run's pages in capture order, at most ``limit``. Raises ``ConfigError`` for an unknown run."""
    if not collection.db_path.is_file():
        raise ConfigError(
            f"collection {collection.name!r} has no harvest state; build it with: "
            f"strata index rebuild {collection.name} --root {collection.root}"
        )
    with HarvestState(collection.db_path) as state:
        if state.run(run_id) is None:
            known = ", ".join(r["run_id"] for r in state.runs()[:5]) or "none"
            raise ConfigError(f"no run {run_id!r} in {collection.name} (latest: {known})")
        files = {w["filename"] for w in state.warcs() if w["run_id"] == run_id}
        captures = state.captures(run_id=run_id)
    pages: dict[str, Page] = {}
    for cap in sorted(captures, key=lambda c: (c["timestamp"], c["id"])):
        if cap["url"] in pages or (cap["mime"] or "") not in HTML_TYPES:
            continue
        status = cap["status"]
        if status is not None and not (200 <= status < 300 or status == 304):
            continue
        pages[cap["url"]] = Page(cap["url"], cap["timestamp"])
        if limit is not None and len(pages) >= limit:
            break
    found = list(pages.values())
    for page in found:
        page.records = _page_records(collection, page, files)
    return found


def _page_records(collection: Collection, page: Page, files: set[str]) -> dict[str, tuple[str, int]]:
    """The run's view, text and pageinfo records of the page: at the page's timestamp if there is
    one, else the run's first. A revisit (an unchanged screenshot or text) stands for the record that
    holds its payload: the same URI's record of the same digest, in any run."""
    found: dict[str, tuple[str, int]] = {}
    for kind in (VIEW, TEXT, PAGEINFO):
        uri = page_uri(kind, page.url)
        key = surt_key(uri).encode()
        best = None
        holders: dict[str, tuple[str, int]] = {}  # digest -> a record holding that payload
        for line in capture_lines(collection, key + b" ", key + b"!"):
            try:
                _key, timestamp, fields = line.split(b" ", 2)
                cdx = json.loads(fields)
            except ValueError:
                continue
            if cdx.get("url") != uri:
                continue
            where = (cdx["filename"], int(cdx["offset"]))
            if cdx.get("mime") != "warc/revisit":
                holders.setdefault(cdx.get("digest") or "", where)
            if cdx.get("filename") not in files:
                continue
            if best is None or timestamp.decode() == page.timestamp:
                best = (cdx.get("digest") or "", where, cdx.get("mime") == "warc/revisit")
                if timestamp.decode() == page.timestamp:
                    break
        if best is not None:
            digest, where, revisit = best
            held = holders.get(digest) if revisit else where
            if held is None and revisit:  # its original comes later in the index's order
                held = _holder(collection, key, uri, digest)
            if held is not None:
                found[kind] = held
    return found


def _holder(collection: Collection, key: bytes, uri: str, digest: str) -> tuple[str, int] | None:
    for line in capture_lines(collection, key + b" ", key + b"!"):
        try:
            cdx = json.loads(line.split(b" ", 2)[2])
        except (ValueError, IndexError):
            continue
        if cdx.get("url") == uri and cdx.get("mime") != "warc/revisit" and (cdx.get("digest") or "") == digest:
            return cdx["filename"], int(cdx["offset"])
    return None


def read_page_record(collection: Collection, location: tuple[str, int], limit: int = 32 * 2**20) -> bytes | None:
    """The block of a page record (a screenshot, a text, a request list), or None if unreadable."""
    try:
        _rec, _http, raw = read_record(collection.archive_dir / location[0], location[1])
    except (OSError, ValueError, EOFError):
        return None
    return raw[:limit]


def captured_text(collection: Collection, page: Page) -> str | None:
    location = page.records.get(TEXT)
    raw = read_page_record(collection, location) if location else None
    return raw.decode("utf-8", "replace") if raw is not None else None


def captured_screenshot(collection: Collection, page: Page) -> bytes | None:
    location = page.records.get(VIEW)
    return read_page_record(collection, location) if location else None


def captured_requests(collection: Collection, page: Page) -> list[dict] | None:
    location = page.records.get(PAGEINFO)
    raw = read_page_record(collection, location) if location else None
    if raw is None:
        return None
    try:
        return list(json.loads(raw).get("requests") or [])
    except (ValueError, AttributeError):
        return None

"""Every hit of a search, not only the best ``MAX_DOCS``: the search export and exact paging.

``index.fulltext.query.search`` groups the best 500 matching documents, enough for a page of
results. ``all_hits`` groups them all, through the same query API (``parse_query``, ``evaluate``,
``rank``, the same filters and capture table) and the same grouping by (collection, URL) and sort
orders, so its hits are the hits a reader pages through. ``hit_page`` is one page of them with
``total`` and ``pages``; ``iter_rows`` gives each hit as a flat row (URL, title, captures in the
date range, first, last, type, host, replay address) for CSV and JSON Lines.

Every capture passes the collection's ``index.access.exposure`` filter (surface ``search-export``): a
capture it refuses is left out of the hit, a hit with no capture left is left out.

Memory: one small record per hit (score, where its first and last captures' documents are, its capture timestamps as
integers) besides what any search holds: 100,000 hits took 62 MB of heap more than a plain search
(``bench/search_export_bench.py``; the index files every search maps whole come on top).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path

from index.access.exposure import capture_filter, show_all
from index.collection import Collection, list_collections
from index.fulltext.backend import Hit, SearchBackend
from index.fulltext.engine import open_backend
from index.fulltext.params import SearchParams, parse_query
from index.fulltext.snippets import snippet
from strata.errors import ConfigError, QueryError

__all__ = [
    "CSV_FIELDS",
    "MAX_EXPORT_PER_PAGE",
    "HitSet",
    "all_hits",
    "csv_lines",
    "hit_page",
    "iter_rows",
    "jsonl_lines",
]

MAX_EXPORT_PER_PAGE = 1000
CSV_FIELDS = ("url", "title", "first", "last", "count", "captures", "type", "mime", "host", "collection", "replay")


@dataclasses.dataclass(slots=True)  # one per hit: 100,000 of them
class _Group:
    collection: str
    url: str
    score: float  # its best document's
    stamps: set[int]
    # the documents holding the first and the last capture: a hit's title and snippet are those of
    # the capture its replay address opens (one of the two), not of its best-scoring version
    first: tuple[int, SearchBackend, Hit]
    last: tuple[int, SearchBackend, Hit]


@dataclasses.dataclass
class HitSet:
    """Every hit of a query, sorted as the search sorts them."""

    params: SearchParams  # checked
    groups: list[_Group]
    terms: set[str]
    prefixes: set[str]
    timed_out: bool
    unindexed: list[str]
    private: list[SearchBackend] = dataclasses.field(default_factory=list)  # opened for this export alone

    @property
    def total(self) -> int:
        return len(self.groups)


RELEASE_EVERY = 2000  # rows between two unmappings of a private view's pages


def all_hits(
    root: Path, params: SearchParams, time_limit: float | None = None, private: bool = False, level: str = "public"
) -> HitSet:
    """Group every matching document by (collection, URL). ``time_limit`` (seconds per collection)
    bounds the work; past it the collection's hits so far are kept and ``timed_out`` is set.
    ``private`` (a process that exports and ends, the CLI): each index is opened for this export
    alone, unpopulated, and the pages it has read are unmapped as the rows go out, so the process's
    memory is what it holds, not the size of the index (a server shares its searches' views).
    ``level``: only the captures the access rules show that level (``index.access.exposure``)."""
    p = dataclasses.replace(params, page=1, per_page=1).checked()
    parsed = parse_query(p.q)
    names = p.collections if p.collections is not None else list_collections(root)
    groups: dict[tuple[str, str], _Group] = {}
    timed_out = False
    unindexed: list[str] = []
    private_backends: list[SearchBackend] = []
    for name in names:
        coll = Collection.existing(Path(root), name)
        backend = open_backend(coll, private=private)
        if backend is None:
            if coll.warc_files():
                unindexed.append(name)
            continue
        if private:
            private_backends.append(backend)
        shown = capture_filter(Path(root), name, "search-export", level)
        deadline = math.inf if time_limit is None else time.monotonic() + time_limit
        found = backend.matches(parsed, p, None, deadline)
        timed_out = timed_out or found.timed_out
        for hit in found.hits:
            url, stamps = hit.url, hit.stamps
            hit.stamps = []  # the group keeps them, as integers: 100,000 hits' lists would weigh
            if shown is not show_all:
                stamps = [ts for ts in stamps if shown(url, ts)]
                if not stamps:
                    continue
            _add_hit(groups, name, backend, hit, set(map(int, stamps)))
    hits = list(groups.values())
    if p.sort == "date":
        hits.sort(key=lambda g: (max(g.stamps), g.score), reverse=True)
    elif p.sort == "oldest":
        hits.sort(key=lambda g: (min(g.stamps), -g.score))
    else:
        hits.sort(key=lambda g: (-g.score, g.url))
    for backend in private_backends:
        backend.release_pages()
    return HitSet(p, hits, parsed.terms, parsed.prefixes, timed_out, unindexed, private_backends)


def _add_hit(
    groups: dict[tuple[str, str], _Group], name: str, backend: SearchBackend, hit: Hit, stamps: set[int]
) -> None:
    """A matching document (``stamps``: its captures shown) joins its (collection, URL) group."""
    lo, hi = min(stamps), max(stamps)
    group = groups.get((name, hit.url))
    if group is None:
        groups[(name, hit.url)] = _Group(name, hit.url, hit.score, stamps, (lo, backend, hit), (hi, backend, hit))
        return
    group.stamps.update(stamps)
    group.score = max(group.score, hit.score)
    if lo < group.first[0]:
        group.first = (lo, backend, hit)
    if hi > group.last[0]:
        group.last = (hi, backend, hit)


def _hit(hits: HitSet, group: _Group, with_snippet: bool = False, base: str = "") -> dict:
    """A hit in the shape ``index.fulltext.query.search`` gives, plus ``type`` and ``replay`` (the
    replay address, absolute when ``base``, the archive's ``scheme://host[/root]``, is given)."""
    p = hits.params
    stamps = [f"{ts:014d}" for ts in sorted(group.stamps)]
    opens_first = bool(p.date_from and not p.date_to)
    replay_ts = stamps[0] if opens_first else stamps[-1]
    _, backend, best = group.first if opens_first else group.last
    host, kind = backend.summary(best)
    out = {
        "collection": group.collection,
        "url": group.url,
        "title": "",
        "captures": stamps,
        "count": len(stamps),
        "first": stamps[0],
        "last": stamps[-1],
        "replay_ts": replay_ts,
        "type": kind,
        "mime": backend.mime(best),
        "host": host,
        "replay": f"{base}/{group.collection}/{replay_ts}/{group.url}",
        "score": round(float(group.score), 4),
    }
    if with_snippet:
        (text,) = backend.details([best])
        out["title"] = text.title
        out["snippet"], out["snippet_html"] = snippet(text.text or text.description, hits.terms, hits.prefixes)
    else:
        out["title"] = backend.title(best)
    return out


def hit_page(
    root: Path,
    params: SearchParams,
    page: int,
    per_page: int,
    private: bool = False,
    level: str = "public",
    base: str = "",
) -> dict:
    """One page of every hit: ``{total, hits, page, per_page, pages}`` (and the query's filters);
    ``base``: see ``_hit``."""
    if not 1 <= per_page <= MAX_EXPORT_PER_PAGE:
        raise QueryError(f"per_page must be from 1 to {MAX_EXPORT_PER_PAGE}")
    if page < 1:
        raise QueryError("page must be 1 or more")
    hits = all_hits(root, params, private=private, level=level)
    _require_indexed(hits)
    chosen = hits.groups[(page - 1) * per_page : page * per_page]
    p = hits.params
    return {
        "total": hits.total,
        "hits": [_hit(hits, g, with_snippet=True, base=base) for g in chosen],
        "page": page,
        "per_page": per_page,
        "pages": max(1, -(-hits.total // per_page)),
        "query": p.q,
        "from": p.date_from,
        "to": p.date_to,
        "site": p.site,
        "type": p.type,
        "sort": p.sort,
        "timed_out": hits.timed_out,
    }


def _require_indexed(hits: HitSet) -> None:
    if hits.unindexed:
        name = hits.unindexed[0]
        raise ConfigError(f"collection {name!r} has no full-text index yet; build it with: strata index rebuild {name}")


def iter_rows(hits: HitSet, limit: int | None = None, base: str = "") -> Iterator[dict]:
    """Each hit as a row (``CSV_FIELDS``), at most ``limit``; ``base``: see ``_hit``."""
    for n, group in enumerate(hits.groups):
        if limit is not None and n >= limit:
            return
        hit = _hit(hits, group, base=base)
        yield {k: hit[k] for k in CSV_FIELDS}
        if n % RELEASE_EVERY == RELEASE_EVERY - 1:
            for backend in hits.private:
                backend.release_pages()


def jsonl_lines(hits: HitSet, limit: int | None = None, base: str = "") -> Iterator[str]:
    """JSON Lines, one hit a line; when ``limit`` cut the hits, a last line says so."""
    for row in iter_rows(hits, limit, base):
        yield json.dumps(row, ensure_ascii=False) + "\n"
    if limit is not None and hits.total > limit:
        yield json.dumps({"truncated": True, "shown": limit, "total": hits.total}) + "\n"


def csv_lines(hits: HitSet, limit: int | None = None, base: str = "") -> Iterator[str]:
    """CSV with a header row (captures separated by spaces); when ``limit`` cut the hits, a last
    row says so in its first column."""
    buf = io.StringIO()
    writer = csv.writer(buf)

    def take() -> str:
        text = buf.getvalue()
        buf.seek(0)
        buf.truncate()
        return text

    writer.writerow(CSV_FIELDS)
    yield take()
    for row in iter_rows(hits, limit, base):
        writer.writerow([" ".join(row[k]) if k == "captures" else row[k] for k in CSV_FIELDS])
        yield take()
    if limit is not None and hits.total > limit:
        writer.writerow([f"# truncated: the first {limit} of {hits.total} hits"])
        yield take()

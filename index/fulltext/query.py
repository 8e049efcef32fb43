"""Searching the collections' full-text indexes: hits grouped by URL, facets, a histogram, paging.

The query and its parameters are ``index.fulltext.params``'s. Every search has a time bound
(``TIME_LIMIT`` per collection) and groups at most ``MAX_DOCS`` best matching documents for hits,
facets and the histogram (``exhaustive`` says whether it saw them all; ``total_documents`` is
estimated when a phrase was checked on part of its candidates only). Evaluation:
``index.fulltext.matching``; snippets: ``index.fulltext.snippets``.

``search(root, params)`` returns a JSON-ready dict: hits grouped by (collection, URL), each with
its capture timestamps in the date range, count, first and last, the capture to replay (the
latest in range), and the title and a highlighted snippet of that capture's document; the declared
facets (``index.fulltext.fields``); a histogram of captures over time; paging.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from index.access.rules import RulesUnreadable
from index.collection import Collection, list_collections
from index.fulltext.backend import Hit, SearchBackend
from index.fulltext.engine import open_backend, settle
from index.fulltext.fields import META_FIELDS, facets_of
from index.fulltext.filters import MetaFilters
from index.fulltext.histogram import histogram
from index.fulltext.params import SearchParams, parse_query
from index.fulltext.snippets import snippet

__all__ = ["MAX_DOCS", "TIME_LIMIT", "search"]

MAX_DOCS = 500  # best matching documents grouped and counted in facets and the histogram
TIME_LIMIT = 2.0  # seconds per collection searched


def search(root: Path, params: SearchParams, time_limit: float = TIME_LIMIT, access_level: str | None = None) -> dict:
    """``access_level`` (public, reading-room, staff): only what that level may see is found,
    counted or quoted (``index.access.rules``); None searches everything (the operator's command line)."""
    started = time.monotonic()
    p = params.checked()
    page, per_page = int(p.page), int(p.per_page)  # ints once checked
    parsed = parse_query(p.q)
    names = p.collections if p.collections is not None else list_collections(root)
    groups: dict[tuple[str, str], dict] = {}
    total_docs = 0
    total_exact = True
    timed_out = False
    exhaustive = True
    best: dict[tuple[str, str], tuple] = {}
    unindexed: list[str] = []
    for name in names:
        coll = Collection.existing(Path(root), name)
        backend = open_backend(coll)
        if backend is None:
            if coll.warc_files():
                unindexed.append(name)
            continue
        try:
            found = backend.matches(parsed, p, MAX_DOCS, time.monotonic() + time_limit, access_level)
        except RulesUnreadable:  # fails closed: none of its hits, the other collections' as ever
            continue
        timed_out = timed_out or found.timed_out
        total_docs += found.total
        total_exact = total_exact and found.exact
        if not found.exact or found.total > found.ranked:
            exhaustive = False
        _group_hits(backend, name, found.hits, groups, best)
    hits = list(groups.values())
    for group in hits:
        stamps = sorted(group.pop("stamps"))
        # the capture to open: the latest in range, or the earliest when only a start was given; its
        # document gives the hit's title and snippet, so they are the text of the page it opens
        opens_first = bool(p.date_from and not p.date_to)
        replay = stamps[0] if opens_first else stamps[-1]
        at_first, at_last = group.pop("at_first"), group.pop("at_last")
        best[(group["collection"], group["url"])] = (at_first if opens_first else at_last)[1:]
        group.update(captures=stamps, count=len(stamps), first=stamps[0], last=stamps[-1], replay_ts=replay)
    if p.sort == "date":
        hits.sort(key=lambda g: (g["last"], g["score"]), reverse=True)
    elif p.sort == "oldest":
        hits.sort(key=lambda g: (g["first"], -g["score"]))
    else:
        hits.sort(key=lambda g: (-g["score"], g["url"]))
    page_hits = hits[(page - 1) * per_page : page * per_page]
    for backend, chosen in _page_docs(page_hits, best).items():
        texts = backend.details(best[(group["collection"], group["url"])][1] for group in chosen)
        for group, text in zip(chosen, texts, strict=True):
            group.update(
                title=text.title,
                mime=text.mime,
                lang=text.lang,
                description=text.description,
                keywords=text.keywords,
                author=text.author,
                publisher=text.publisher,
                published=text.published,
            )
            # from the main text only: boilerplate is never a snippet
            group["snippet"], group["snippet_html"] = snippet(
                text.text or text.description, parsed.terms, parsed.prefixes, word_prefixes=parsed.word_prefixes
            )
    for group in page_hits:
        group["score"] = round(float(group["score"]), 4)
    result = {
        "query": p.q,
        "from": p.date_from,
        "to": p.date_to,
        "site": p.site,
        "type": p.type,
        "in": p.scope,
        "filters": _meta_echo(p.meta),
        "collections": names,
        "unindexed": unindexed,
        "sort": p.sort,
        "page": p.page,
        "per_page": p.per_page,
        "total_urls": len(hits),
        "total_documents": total_docs,
        "total_exact": total_exact,
        "pages": max(1, -(-len(hits) // per_page)),
        "exhaustive": exhaustive and not timed_out,
        "timed_out": timed_out,
        "hits": page_hits,
        "facets": facets_of(hits),
        "histogram": histogram(hits),
        "elapsed_ms": round((time.monotonic() - started) * 1000, 1),
    }
    settle()
    return result


def _group_hits(
    backend: SearchBackend, name: str, hits: Iterable[Hit], groups: dict, best: dict[tuple[str, str], tuple]
) -> None:
    """Add one collection's ranked hits to ``groups`` (one per collection and URL, with the capture
    dates it may show, and the hits holding its first and its last capture) and the best hit of
    each group to ``best``."""
    for hit in hits:
        key = (name, hit.url)
        group = groups.get(key)
        first, last = hit.stamps[0], hit.stamps[-1]  # sorted
        if group is None:
            host, kind = backend.summary(hit)
            group = groups[key] = {
                "collection": name,
                "url": hit.url,
                "host": host,
                "type": kind,
                "score": hit.score,
                "stamps": set(),
                "at_first": (first, backend, hit),
                "at_last": (last, backend, hit),
            }
            best[key] = (backend, hit)
        group["stamps"].update(hit.stamps)
        if first < group["at_first"][0]:
            group["at_first"] = (first, backend, hit)
        if last > group["at_last"][0]:
            group["at_last"] = (last, backend, hit)
        if hit.score > group["score"]:
            group["score"] = hit.score
            best[key] = (backend, hit)


def _page_docs(page_hits: list[dict], best: dict[tuple[str, str], tuple]) -> dict[SearchBackend, list[dict]]:
    """The groups a page shows, per collection's backend (their texts are read together)."""
    found: dict[SearchBackend, list[dict]] = {}
    for group in page_hits:
        backend, _ = best[(group["collection"], group["url"])]
        found.setdefault(backend, []).append(group)
    return found


def _meta_echo(meta: MetaFilters | None) -> dict:
    """The metadata filters in effect, as given (published dates as their 8-character keys)."""
    if meta is None:
        return {}
    return {f.name: getattr(meta, f.name) for f in META_FIELDS if getattr(meta, f.name)}

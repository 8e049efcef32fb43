"""Searching the collections' full-text indexes: hits grouped by URL, facets, a histogram, paging.

The query and its parameters are ``index.fulltext.params``'s. Every search has a time bound
(``TIME_LIMIT`` per collection) and groups at most ``MAX_DOCS`` best matching documents for hits,
facets and the histogram (``exhaustive`` says whether it saw them all; ``total_documents`` is
estimated when a phrase was checked on part of its candidates only). Evaluation:
``index.fulltext.matching``; snippets: ``index.fulltext.snippets``.

``search(root, params)`` returns a JSON-ready dict: hits grouped by (collection, URL), each with
its capture timestamps in the date range, count, first and last, the capture to replay (the
latest in range), title and a highlighted snippet; the declared facets (``index.fulltext.fields``);
a histogram of captures over time; paging.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from index.access.rules import rules_for
from index.collection import Collection, list_collections
from index.fulltext.access import SearchAccess
from index.fulltext.fields import META_FIELDS, facets_of
from index.fulltext.filters import MetaFilters, allowed_by_meta
from index.fulltext.histogram import histogram
from index.fulltext.mapfile import mapped_bytes
from index.fulltext.matching import STORED, Allowed, IndexView, TimeUp, evaluate, intersect, rank
from index.fulltext.params import SearchParams, parse_query
from index.fulltext.snippets import snippet

__all__ = ["TIME_LIMIT", "open_view", "search"]

MAX_DOCS = 500  # best matching documents grouped and counted in facets and the histogram
TIME_LIMIT = 2.0  # seconds per collection searched
MAPPED_LIMIT = 192 * 2**20  # bytes of index pages a process keeps mapped between searches


# -- searching -----------------------------------------------------------------------------------


def _allowed(view: IndexView, p: SearchParams) -> Allowed:
    """Documents the filters allow (None: no filter): captured in the date range, on the site,
    of the type. A set, or a mask of the index's documents where a date range is given."""
    dated = view.captures.mask_between(p.date_from, p.date_to, view.count) if p.date_from or p.date_to else None
    sets = []
    if p.site:
        sets.append(view.filter_docs("domains", p.site))
    if p.type:
        sets.append(view.filter_docs("mtype" if "/" not in p.type else "mime", p.type))
    if p.meta is not None:
        sets.extend(allowed_by_meta(view, p.meta))
    if not sets:
        return dated
    sets.sort(key=len)
    found = sets[0].intersection(*sets[1:])
    return found if dated is None else intersect(dated, found)


_views: dict[str, IndexView] = {}
_views_lock = threading.Lock()


def open_view(coll: Collection) -> IndexView | None:
    """The collection's index opened for searching, shared by threads until it changes (an
    older view is not closed: a search may still be using it; it goes with its last user)."""
    key = str(coll.path.resolve())
    with _views_lock:
        view = _views.get(key)
        if view is not None and view.is_current():
            return view
        _views.pop(key, None)
        try:
            view = IndexView(coll)
        except FileNotFoundError:
            return None
        _views[key] = view
        return view


def _bound_mapped_pages() -> None:
    """Past ``MAPPED_LIMIT`` of mapped index pages in this process, every view drops the pages it
    has read (they stay in the page cache: reading one again is a minor fault, not a disk read).
    Searches read different posting lists and texts, so without this the process's RSS grew
    towards the size of the index. A search reading at the same time faults its pages again."""
    if mapped_bytes() <= MAPPED_LIMIT:
        return
    with _views_lock:
        views = list(_views.values())
    for view in views:
        view.release_pages()


_access = SearchAccess()


def _allowed_for(view: IndexView, p: SearchParams, rules, level: str | None) -> Allowed:
    """Documents the filters allow and, with a level, that have a capture in range it may see."""
    allowed = _allowed(view, p)
    if rules is None or not level:
        return allowed
    visible = _access.allowed(view, rules, level, p.date_from, p.date_to)
    if visible is None:
        return allowed
    return visible if allowed is None else intersect(allowed, visible)


def _stamps_of(view: IndexView, p: SearchParams, rules, level: str | None, docnum: int, url: str) -> list[str]:
    if rules is None or not level:
        return view.captures.of(docnum, p.date_from, p.date_to)
    return _access.stamps(view, rules, level, docnum, url, p.date_from, p.date_to)


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
        coll = Collection.open(Path(root), name)
        view = open_view(coll)
        if view is None:
            if coll.warc_files():
                unindexed.append(name)
            continue
        deadline = time.monotonic() + time_limit
        rules = rules_for(coll.path) if access_level else None
        try:
            matches = evaluate(view, parsed.tree, deadline, p.scope)
            allowed = _allowed_for(view, p, rules, access_level)
            if time.monotonic() > deadline:
                raise TimeUp
            ranked = rank(matches, allowed, MAX_DOCS, deadline)
        except TimeUp:
            timed_out, exhaustive, total_exact = True, False, False
            continue
        timed_out = timed_out or ranked.timed_out
        total_docs += ranked.total
        total_exact = total_exact and ranked.exact
        if not ranked.exact or ranked.total > len(ranked.hits):
            exhaustive = False
        _group_hits(view, name, ranked, p, rules, access_level, groups, best)
    hits = list(groups.values())
    for group in hits:
        stamps = sorted(group.pop("stamps"))
        # the capture to open: the latest in range, or the earliest when only a start was given
        replay = stamps[0] if p.date_from and not p.date_to else stamps[-1]
        group.update(captures=stamps, count=len(stamps), first=stamps[0], last=stamps[-1], replay_ts=replay)
    if p.sort == "date":
        hits.sort(key=lambda g: (g["last"], g["score"]), reverse=True)
    elif p.sort == "oldest":
        hits.sort(key=lambda g: (g["first"], -g["score"]))
    else:
        hits.sort(key=lambda g: (-g["score"], g["url"]))
    page_hits = hits[(page - 1) * per_page : page * per_page]
    for view, docnums in _page_docs(page_hits, best).items():
        _prefetch_columns(view, docnums, (STORED, "parts"))
    for group in page_hits:
        view, docnum = best[(group["collection"], group["url"])]
        stored = view.searcher.stored_fields(docnum)
        title, description, keywords, text, _ = view.texts(docnum)
        group["title"] = title or ""
        group["mime"] = stored.get("mime") or ""
        group["lang"] = stored.get("lang") or ""
        group.update(
            description=description or "",
            keywords=keywords or "",
            author=stored.get("author") or "",
            publisher=stored.get("publisher") or "",
            published=stored.get("published") or "",
        )
        # from the main text only: boilerplate is never a snippet
        group["snippet"], group["snippet_html"] = snippet(
            text or description or "", parsed.terms, parsed.prefixes, word_prefixes=parsed.word_prefixes
        )
        group["score"] = round(float(group["score"]), 4)
        del group["rank"]
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
    _bound_mapped_pages()
    return result


def _group_hits(
    view: IndexView, name: str, ranked, p: SearchParams, rules, level: str | None, groups: dict, best: dict
) -> None:
    """Add one collection's ranked documents to ``groups`` (one per collection and URL, with the
    capture dates it may show) and the best document of each group to ``best``."""
    url_col, host_col, type_col = (view.columns[c] for c in ("url", "host", "mtype"))
    _prefetch_columns(view, [docnum for _, docnum in ranked.hits], ("url", "host", "mtype"))
    for position, (score, docnum) in enumerate(ranked.hits):
        url = url_col[docnum]
        stamps = _stamps_of(view, p, rules, level, docnum, url)
        if not stamps:
            continue
        key = (name, url)
        group = groups.get(key)
        if group is None:
            group = groups[key] = {
                "collection": name,
                "url": url,
                "host": host_col[docnum],
                "type": type_col[docnum],
                "score": score,
                "stamps": set(),
                "rank": position,
            }
            best[key] = (view, docnum)
        group["stamps"].update(stamps)
        if score > group["score"]:
            group["score"] = score
            best[key] = (view, docnum)


def _prefetch_columns(view: IndexView, docnums: list[int], columns: tuple[str, ...]) -> None:
    """The documents' values of these columns read ahead, together: on a cold disk, 500 hits' URLs
    read one by one cost 60 ms at a million documents, a page's texts and stored fields 80 ms."""
    for column in columns:
        view.prefetch(column, docnums)


def _page_docs(page_hits: list[dict], best: dict) -> dict[IndexView, list[int]]:
    """The documents a page shows, per index view."""
    found: dict[IndexView, list[int]] = {}
    for group in page_hits:
        view, docnum = best[(group["collection"], group["url"])]
        found.setdefault(view, []).append(docnum)
    return found


def _meta_echo(meta: MetaFilters | None) -> dict:
    """The metadata filters in effect, as given (published dates as their 8-character keys)."""
    if meta is None:
        return {}
    return {f.name: getattr(meta, f.name) for f in META_FIELDS if getattr(meta, f.name)}

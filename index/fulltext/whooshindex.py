"""The Whoosh engine behind ``index.fulltext.backend.SearchBackend``: a collection's segments
(``index.fulltext.postings``, read as arrays by ``index.fulltext.matching``), its capture dates
(``index.fulltext.captures``: rows by document number in ``captures.sqlite``, arrays mapped in
place in ``captures.table``) and the access split of its documents (``index.fulltext.access``).

A document here is a number, Whoosh's: the posting lists, the capture table and the columns are
arrays by it, which is what makes a search at a million documents take tens of milliseconds
(``bench/search_bench.py``). The numbers stay here: a ``Hit`` carries one as its ``ref``, which
only this module reads.

An index is opened once per process and shared by threads until it changes (``open_view``); a
process that exports and ends (the CLI) opens a private one, unpopulated, and releases its pages
as its rows go out. Past ``MAPPED_LIMIT`` of mapped pages after a search, every shared view drops
the pages it has read (``settle``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator

from index.access.rules import RuleSet, rules_for
from index.collection import Collection
from index.fulltext.access import SearchAccess
from index.fulltext.backend import Hit, HitText, Matches
from index.fulltext.filters import allowed_by_meta
from index.fulltext.mapfile import mapped_bytes
from index.fulltext.matching import STORED, Allowed, IndexView, TimeUp, evaluate, intersect, rank
from index.fulltext.params import ParsedQuery, SearchParams

__all__ = ["MAPPED_LIMIT", "WhooshBackend", "open_view", "settle"]

MAPPED_LIMIT = 192 * 2**20  # bytes of index pages a process keeps mapped between searches

_views: dict[str, IndexView] = {}
_views_lock = threading.Lock()
_access = SearchAccess()


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


def settle() -> None:
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


def _allowed_for(view: IndexView, p: SearchParams, rules: RuleSet | None, level: str | None) -> Allowed:
    """Documents the filters allow and, with a level, that have a capture in range it may see."""
    allowed = _allowed(view, p)
    if rules is None or not level:
        return allowed
    visible = _access.allowed(view, rules, level, p.date_from, p.date_to)
    if visible is None:
        return allowed
    return visible if allowed is None else intersect(allowed, visible)


class WhooshBackend:
    def __init__(self, collection: Collection, view: IndexView):
        self.collection = collection
        self.view = view

    @classmethod
    def open(cls, collection: Collection, private: bool = False) -> WhooshBackend | None:
        """The collection's index (None: it has none yet); ``private``: opened for one export."""
        if not private:
            view = open_view(collection)
        else:
            try:
                view = IndexView(collection, populate=False)
            except FileNotFoundError:
                view = None
        return None if view is None else cls(collection, view)

    @property
    def documents(self) -> int:
        return self.view.count

    def matches(
        self, query: ParsedQuery, params: SearchParams, limit: int | None, deadline: float, level: str | None = None
    ) -> Matches:
        view, p = self.view, params
        rules = rules_for(self.collection.path) if level else None
        try:
            found = evaluate(view, query.tree, deadline, p.scope)
            allowed = _allowed_for(view, p, rules, level)
            if time.monotonic() > deadline:
                raise TimeUp
            ranked = rank(found, allowed, view.count + 1 if limit is None else limit, deadline)
        except TimeUp:
            return Matches(iter(()), 0, False, 0, True)
        if limit is not None:
            # on a cold disk, 500 hits' URLs read one by one cost 60 ms at a million documents
            docnums = [docnum for _, docnum in ranked.hits]
            for column in ("url", "host", "mtype"):
                view.prefetch(column, docnums)
        hits = self._hits(ranked.hits, p, rules, level)
        return Matches(hits, ranked.total, ranked.exact, len(ranked.hits), ranked.timed_out)

    def _hits(
        self, ranked: list[tuple[float, int]], p: SearchParams, rules: RuleSet | None, level: str | None
    ) -> Iterator[Hit]:
        view = self.view
        url_col = view.columns["url"]
        for score, docnum in ranked:
            url = url_col[docnum]
            if rules is None or not level:
                stamps = view.captures.of(docnum, p.date_from, p.date_to)
            else:
                stamps = _access.stamps(view, rules, level, docnum, url, p.date_from, p.date_to)
            if stamps:
                yield Hit(url, score, stamps, docnum)

    def summary(self, hit: Hit) -> tuple[str, str]:
        columns = self.view.columns
        return columns["host"][hit.ref], columns["mtype"][hit.ref]

    def details(self, hits: Iterable[Hit]) -> list[HitText]:
        view = self.view
        docnums = [hit.ref for hit in hits]
        for column in (STORED, "parts"):  # read ahead together: a page's texts and fields, 80 ms cold
            view.prefetch(column, docnums)
        out = []
        for docnum in docnums:
            stored = view.searcher.stored_fields(docnum)
            title, description, keywords, text, _ = view.texts(docnum)
            out.append(
                HitText(
                    title=title or "",
                    description=description or "",
                    keywords=keywords or "",
                    text=text or "",
                    mime=stored.get("mime") or "",
                    lang=stored.get("lang") or "",
                    author=stored.get("author") or "",
                    publisher=stored.get("publisher") or "",
                    published=stored.get("published") or "",
                    size=stored.get("size") or 0,
                )
            )
        return out

    def title(self, hit: Hit) -> str:
        return self.view.raw_texts(hit.ref).split(b"\x00", 1)[0].decode("utf-8", "replace")

    def mime(self, hit: Hit) -> str:
        return self.view.searcher.stored_fields(hit.ref).get("mime") or ""

    def documents_of(self, host: str, kind: str) -> list[Hit]:
        view = self.view
        url_col = view.columns["url"]
        docs = view.filter_docs("host", host) & view.filter_docs("mtype", kind)
        return [Hit(url_col[docnum], 0.0, view.captures.of(docnum), docnum) for docnum in docs]

    def release_pages(self) -> None:
        self.view.release_pages()

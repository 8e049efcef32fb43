"""The search engine's seam: what a search asks of one collection's full-text index, keyed by what
the archive knows (a URL, its capture timestamps), never by an engine's own numbering.

    class SearchBackend(Protocol):
        documents: int                         # documents in the index
        matches(query, params, limit, deadline, level) -> Matches
        summary(hit) -> (host, type)           # what the facets count
        details([hit, ...]) -> [HitText, ...]  # what a page of results shows
        title(hit), mime(hit) -> str           # an export row's
        documents_of(host, type) -> [Hit, ...] # every document of a host and type (publications)
        release_pages() -> None                # memory back, between rows of a long export

A ``Hit`` is one matching document: one payload of one URL, with the capture timestamps of it
that the search may show (in the date range; with an access level, those the level may see), its
score, and ``ref``, the engine's own handle on the document, which only the engine reads. The
grouping by (collection, URL), the sort orders, paging, facets, the histogram, snippets and the
export are the search's (``index.fulltext.query``, ``index.fulltext.export``), the same for any
engine. ``index.fulltext.engine.open_backend(collection)`` opens a collection's engine: Whoosh
(``index.fulltext.whooshindex``) today; its ways in (``index.fulltext.update``, ``rebuild``,
``follow``) take a collection and a run, and the document numbers stay inside them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from index.fulltext.params import ParsedQuery, SearchParams


@dataclasses.dataclass(slots=True)  # one per matching document: an export makes 100,000 of them
class Hit:
    url: str
    score: float
    stamps: list[str]  # 14-digit capture timestamps, sorted
    ref: Any  # the engine's own handle on the document: only the engine reads it


@dataclasses.dataclass
class Matches:
    hits: Iterator[Hit]  # best first; documents with no capture to show are left out
    total: int  # documents that matched (estimated when not exact)
    exact: bool
    ranked: int  # documents ranked (at most the limit asked): fewer than total when the limit cut them
    timed_out: bool  # the deadline passed: the hits are those found by then (none when it passed early)


@dataclasses.dataclass
class HitText:
    """What a page of results shows of a document."""

    title: str
    description: str
    keywords: str
    text: str  # the main text, for a snippet
    mime: str
    lang: str
    author: str
    publisher: str
    published: str
    size: int


class SearchBackend(Protocol):
    @property
    def documents(self) -> int: ...

    def matches(
        self, query: ParsedQuery, params: SearchParams, limit: int | None, deadline: float, level: str | None = None
    ) -> Matches:
        """The documents matching a parsed query under the checked ``params``' filters, ranked, at
        most ``limit`` (None: all). ``level``: only documents and captures the access rules show
        that level (``index.access.rules``)."""

    def summary(self, hit: Hit) -> tuple[str, str]:
        """(host, type) of a hit's document."""

    def details(self, hits: Iterable[Hit]) -> list[HitText]: ...

    def title(self, hit: Hit) -> str: ...

    def mime(self, hit: Hit) -> str: ...

    def documents_of(self, host: str, kind: str) -> list[Hit]:
        """Every document of ``host`` of type ``kind`` (html, pdf ...), each with all its captures."""

    def release_pages(self) -> None: ...

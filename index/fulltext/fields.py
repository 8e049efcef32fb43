"""The search's request fields and facets, declared once.

Every parameter a search takes (the web form and its JSON API, ``strata search``'s options, the
search export's address) is a ``Field`` of ``FIELDS``: its ``SearchParams`` attribute, its request
parameter (the CLI option is the same name, ``--published-from``), its label and help, and how the
form shows it. ``params_of(get, getlist)`` reads a request's values into ``SearchParams``'s
arguments; ``index.fulltext.params`` checks them.

Every facet the results offer is a ``Facet`` of ``FACETS``: what it counts in each hit (URL, host,
type, the capture timestamps), how its values are ordered and cut, and the parameters a click
on a value sets. ``index.fulltext.query`` counts them, the results template lists them in this
order. A new facet over what a hit holds is one declaration here and its tests.

Nothing heavy is imported: the CLI builds its options from this module at start.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Field:
    name: str  # the SearchParams attribute
    param: str  # the request parameter; the CLI's option is --<param, '_' as '-'>
    label: str  # the web form's label
    help: str  # the CLI option's help
    kind: str  # query | capture (which captures) | meta (the page's own metadata and the scope) | order | page
    metavar: str = "TEXT"
    default: Any = None  # the value when the request gives none (or an empty one)
    form_id: str = ""  # the form input's id (the parameter's own when empty)
    placeholder: str = ""
    maxlength: int | None = None
    choices: tuple[tuple[str, str], ...] = ()  # (value, the form's label) of a select
    repeatable: bool = False

    @property
    def option(self) -> str:
        return "--" + self.param.replace("_", "-")

    @property
    def input_id(self) -> str:
        return self.form_id or self.param

    @property
    def selects(self) -> bool:
        """Giving it asks for a search (a query, or a filter on captures or metadata)."""
        return self.kind in ("query", "capture", "meta") and self.name != "scope"


FIELDS: tuple[Field, ...] = (
    Field("q", "q", "Search words", 'words, "phrases", AND, OR, NOT, -word, parentheses', "query", default=""),
    Field(
        "date_from",
        "from",
        "Captured from",
        "Captures from: 2024, 2024-03-05, ISO 8601 date-time or 14 digits.",
        "capture",
        metavar="WHEN",
        placeholder="YYYY-MM-DD",
    ),
    Field(
        "date_to",
        "to",
        "Captured to",
        "Captures up to (inclusive; a date means its whole day).",
        "capture",
        metavar="WHEN",
        placeholder="YYYY-MM-DD",
    ),
    Field(
        "site",
        "site",
        "Site",
        "Host or domain (example.org also matches www.example.org).",
        "capture",
        placeholder="example.org",
    ),
    Field("type", "type", "Type", "html, pdf, text, image, audio, video ... or a MIME type.", "capture", metavar="T"),
    Field(
        "collections",
        "c",
        "Collection",
        "Collection (repeatable; default: all).",
        "collection",
        repeatable=True,
    ),
    Field(
        "sort",
        "sort",
        "Order",
        "relevance, date (newest first) or oldest.",
        "order",
        default="relevance",
        choices=(("relevance", "relevance"), ("date", "newest first"), ("oldest", "oldest first")),
    ),
    Field(
        "title",
        "title",
        "Title has",
        "Pages whose title has these words.",
        "meta",
        metavar="WORDS",
        form_id="f-title",
        placeholder="words of the title",
    ),
    Field(
        "author",
        "author",
        "Author or publisher",
        "Pages whose author or publisher has these words.",
        "meta",
        metavar="NAME",
        form_id="f-author",
        placeholder="a name",
    ),
    Field(
        "keyword",
        "keyword",
        "Keyword",
        "Pages whose keywords (meta keywords, DC.subject, PDF keywords) have these words.",
        "meta",
        metavar="WORDS",
        form_id="f-keyword",
    ),
    Field(
        "lang",
        "lang",
        "Language",
        "Pages in this language: en, ja, zh ...",
        "meta",
        metavar="CODE",
        form_id="f-lang",
        placeholder="en, ja, zh …",
        maxlength=3,
    ),
    Field(
        "published_from",
        "published_from",
        "Published from",
        "Pages published (by their own date) from: 2024, 2024-03, 2024-03-05.",
        "meta",
        metavar="DATE",
        form_id="f-pfrom",
        placeholder="YYYY-MM-DD",
    ),
    Field(
        "published_to",
        "published_to",
        "Published to",
        "Pages published up to (inclusive).",
        "meta",
        metavar="DATE",
        form_id="f-pto",
        placeholder="YYYY-MM-DD",
    ),
    Field(
        "scope",
        "in",
        "Search in",
        "all: main text and boilerplate (menus, headers, footers; weighing less); main: main text only.",
        "meta",
        default="all",
        form_id="f-in",
        choices=(("all", "all text (menus weigh less)"), ("main", "main text only")),
    ),
    Field("page", "page", "Page", "The page of hits.", "page", default="1"),
    Field("per_page", "per_page", "Hits a page", "Hits a page.", "page"),
)

#: The parameters a search's address keeps (paging aside: a changed search starts at page 1).
PARAMS = tuple(field.param for field in FIELDS if field.kind != "page")
#: The parameters that ask for a search: the page shows results.
SELECTING = tuple(field.param for field in FIELDS if field.selects)
#: The parameters that give the export something to list: a query or a filter on captures.
EXPORT_SELECTING = tuple(field.param for field in FIELDS if field.kind in ("query", "capture"))
#: Page metadata and the scope: the form's "more" part, open when one is given.
META_PARAMS = tuple(field.param for field in FIELDS if field.kind == "meta")
META_FIELDS = tuple(field for field in FIELDS if field.kind == "meta" and field.name != "scope")
#: The filters (on captures, on page metadata, the scope): what "clear filters" removes.
FILTER_PARAMS = tuple(field.param for field in FIELDS if field.kind in ("capture", "meta"))


def params_of(get: Callable[[str], str | None], getlist: Callable[[str], list[str]], per_page: int) -> dict:
    """``SearchParams``'s arguments from a request's values (``get``: a parameter's value or None;
    ``getlist``: all of its values); an empty value is no value. ``per_page``: when none is given."""
    values: dict[str, Any] = {}
    for field in FIELDS:
        if field.repeatable:
            values[field.name] = [v for v in getlist(field.param) if v] or None
            continue
        value = get(field.param)
        if field.name == "per_page":
            value = str(per_page) if value is None else value
        elif field.kind == "page" or field.name == "q":  # given empty, checked (and refused) as given
            value = field.default if value is None else value
        else:
            value = value or field.default
        values[field.name] = value
    return values


@dataclasses.dataclass(frozen=True)
class Facet:
    name: str  # the key in a search's "facets"; the template's list is facet-<name>
    label: str
    values: Callable[[Mapping[str, Any]], Iterable[str]]  # what the facet counts in one hit
    select: Callable[[str], dict[str, str]]  # the parameters a click on a value sets
    param: str | None = None  # the parameter a value of it is chosen by (shown as active), if one
    by_count: bool = True  # most hits first (then by value); False: by value
    limit: int | None = None  # values shown, at most

    def counted(self, hits: Iterable[Mapping[str, Any]]) -> list[dict]:
        counts: dict[str, int] = {}
        for hit in hits:
            for value in self.values(hit):
                counts[value] = counts.get(value, 0) + 1
        order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]) if self.by_count else kv[0])
        return [{"value": value, "count": count} for value, count in order[: self.limit]]


FACETS: tuple[Facet, ...] = (
    Facet(
        "year",
        "Year",
        lambda hit: {ts[:4] for ts in hit["captures"]},
        lambda year: {"from": year, "to": year},
        by_count=False,
    ),
    Facet("type", "Type", lambda hit: (hit["type"],), lambda value: {"type": value}, param="type"),
    Facet("site", "Site", lambda hit: (hit["host"],), lambda value: {"site": value}, param="site", limit=20),
)


def facets_of(hits: list[dict]) -> dict[str, list[dict]]:
    """Every declared facet, counted over the grouped hits (each with its host, type and captures)."""
    return {facet.name: facet.counted(hits) for facet in FACETS}

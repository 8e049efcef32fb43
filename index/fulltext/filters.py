"""Search filters on page metadata (``index.fulltext.metadata``) and the search's scope.

    title      words of the title (every one must be there; stems and CJK bigrams, as in a query)
    author     words of the author or the publisher
    keyword    words of the keywords (``<meta name=keywords>``, ``DC.subject``, a PDF's /Keywords)
    lang       a primary language subtag: en, ja, zh ...
    published_from, published_to
               the page's own published date: 2024, 2024-03 or 2024-03-05; a page that gives only
               a year or a month is in a range that holds that year or month
    scope      ``all`` (main text and boilerplate, boilerplate weighing less) or ``main``

Like the other filters they come only from parameters, never from the query text.
"""

from __future__ import annotations

import dataclasses
import re

from index.fulltext.documents import filter_terms
from index.fulltext.matching import SCOPES, IndexView
from index.fulltext.metadata import date_key, normalize_date
from strata.errors import QueryError

__all__ = ["MetaFilters", "allowed_by_meta"]

MAX_FILTER_CHARS = 200
_DATE = re.compile(r"^\d{4}(?:-\d{2}(?:-\d{2})?)?$")
_LANG = re.compile(r"^[a-z]{2,3}$")


@dataclasses.dataclass(frozen=True)
class MetaFilters:
    title: str | None = None
    author: str | None = None
    keyword: str | None = None
    lang: str | None = None
    published_from: str | None = None  # 8 characters (date_key) once checked
    published_to: str | None = None
    scope: str = "all"

    @classmethod
    def checked(cls, **values) -> MetaFilters:
        """Check a form's values; raises ``QueryError`` saying what to write instead."""
        words = {}
        for name in ("title", "author", "keyword"):
            value = " ".join(str(values.get(name) or "").split())
            if len(value) > MAX_FILTER_CHARS:
                raise QueryError(f"the {name} filter is longer than {MAX_FILTER_CHARS} characters: shorten it")
            if value and not filter_terms(value):
                raise QueryError(f"the {name} filter has no searchable words")
            words[name] = value or None
        lang = (values.get("lang") or "").strip().lower() or None
        if lang and not _LANG.match(lang):
            raise QueryError("lang must be a language code such as en, ja or zh")
        lo, hi = (_published(values.get(k), k, end=k.endswith("to")) for k in ("published_from", "published_to"))
        if lo and hi and lo > hi:
            raise QueryError("the 'published from' date is after the 'published to' date")
        scope = (values.get("scope") or "all").strip().lower()
        if scope not in SCOPES:
            raise QueryError(f"in must be one of {', '.join(SCOPES)}, not {scope!r}")
        return cls(lang=lang, published_from=lo, published_to=hi, scope=scope, **words)

    def active(self) -> bool:
        return any((self.title, self.author, self.keyword, self.lang, self.published_from, self.published_to))


def _published(value, name: str, end: bool) -> str | None:
    text = str(value or "").strip()
    if not text:
        return None
    if not _DATE.match(text) or normalize_date(text) != text:
        raise QueryError(f"{name.replace('_', ' ')} must be a date such as 2024, 2024-03 or 2024-03-05")
    return date_key(text, end=end)


def allowed_by_meta(view: IndexView, f: MetaFilters) -> list[set[int]]:
    """One set of allowed documents per active filter (the caller intersects them)."""
    sets: list[set[int]] = []
    for field, value in (("tterms", f.title), ("aterms", f.author), ("kterms", f.keyword)):
        if value:
            for term in filter_terms(value):
                sets.append(view.filter_docs(field, term))
    if f.lang:
        sets.append(view.filter_docs("lang", f.lang))
    if f.published_from or f.published_to:
        sets.append(view.published_between(f.published_from, f.published_to))
    return sets

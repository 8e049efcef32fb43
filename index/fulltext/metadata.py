"""Page metadata for search: title, description, keywords, author, publisher, language and
published date, from what a page or a PDF says about itself.

Sources, in the order each field believes them (the first that has a value wins):

========== ===================================================================================
title      ``<title>``, ``og:title``, ``DC.title`` / ``dcterms.title``, ``citation_title``,
           JSON-LD ``headline`` / ``name``; PDF: document info ``/Title``, XMP ``dc:title``
description ``<meta name=description>``, ``og:description``, ``DC.description``, JSON-LD
           ``description``; PDF: ``/Subject``
keywords   ``<meta name=keywords>``, ``DC.subject``, ``article:tag``, JSON-LD ``keywords``;
           PDF: ``/Keywords``
author     ``<meta name=author>``, ``article:author``, ``DC.creator``, ``citation_author``,
           JSON-LD ``author`` (names, joined by ``; ``); PDF: ``/Author``, XMP ``dc:creator``
publisher  ``DC.publisher``, ``citation_publisher``, ``og:site_name``, JSON-LD ``publisher``
language   ``<html lang>``, ``Content-Language`` (meta, then header), ``DC.language``,
           JSON-LD ``inLanguage``, then the script of the text (``index.fulltext.text``);
           PDF: the catalog's ``/Lang``
published  ``article:published_time``, ``citation_publication_date`` / ``citation_date``,
           ``DC.date.issued`` / ``dcterms.issued``, ``DC.date`` / ``dcterms.created``,
           ``datePublished`` (``itemprop`` or JSON-LD), ``date`` / ``pubdate``;
           PDF: ``/CreationDate``
========== ===================================================================================

A published date is kept as far as it is known: ``2024``, ``2024-03`` or ``2024-03-05``
(``normalize_date`` reads ISO 8601, ``2024/03/05``, ``20240305``, PDF dates ``D:20240305...``
and ``2024年3月5日``); ``date_key`` turns it into the 8 characters the search filter compares
(unknown month or day as ``00``). JSON-LD is read from at most ``MAX_JSONLD_BYTES`` of
``<script type="application/ld+json">``; what does not parse is ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import date, datetime

__all__ = ["META_NAMES", "PageMeta", "date_key", "from_jsonld", "normalize_date", "page_meta", "pdf_meta"]

MAX_JSONLD_BYTES = 256 * 1024
MAX_FIELD_CHARS = 1000

# <meta name|property|itemprop> (lowercased) -> the field it gives, in the order believed
_SOURCES: dict[str, tuple[str, ...]] = {
    "title": ("og:title", "dc.title", "dcterms.title", "citation_title", "twitter:title"),
    "description": ("description", "og:description", "dc.description", "dcterms.description", "twitter:description"),
    "keywords": ("keywords", "dc.subject", "dcterms.subject", "article:tag", "news_keywords"),
    "author": ("author", "article:author", "dc.creator", "dcterms.creator", "citation_author", "byl"),
    "publisher": ("dc.publisher", "dcterms.publisher", "citation_publisher", "og:site_name", "publisher"),
    "language": ("content-language", "dc.language", "dcterms.language", "og:locale"),
    "published": (
        "article:published_time",
        "citation_publication_date",
        "citation_date",
        "dc.date.issued",
        "dcterms.issued",
        "dc.date",
        "dcterms.date",
        "dcterms.created",
        "dc.date.created",
        "datepublished",
        "date",
        "pubdate",
        "publish_date",
        "og:published_time",
    ),
}
META_NAMES = frozenset(name for names in _SOURCES.values() for name in names)
_MULTI = frozenset({"author", "keywords"})  # several <meta> of these add up (citation_author, article:tag)


class PageMeta(dict):
    """field -> text, for the fields of ``_SOURCES`` that were found."""


def page_meta(meta: dict[str, list[str]], jsonld: list[str]) -> PageMeta:
    """The fields from a page's ``<meta>`` values (name -> contents, in page order) and its JSON-LD blocks."""
    out = PageMeta()
    ld = from_jsonld(jsonld)
    for field, names in _SOURCES.items():
        for name in names:
            values = [v for v in meta.get(name, ()) if v.strip()]
            if values:
                out[field] = "; ".join(dict.fromkeys(values)) if field in _MULTI else values[0]
                break
        else:
            if ld.get(field):
                out[field] = ld[field]
    if "published" in out:
        out["published"] = normalize_date(out["published"])
    if out.get("language", "").lower().startswith(("en_", "ja_", "zh_", "ko_", "fr_", "de_")):
        out["language"] = out["language"][:2]  # og:locale's ll_CC
    return PageMeta({k: v[:MAX_FIELD_CHARS] for k, v in out.items() if v})


def from_jsonld(blocks: list[str]) -> dict[str, str]:
    """Title, description, keywords, author, publisher, language and published date of the first
    JSON-LD item that says something of them (an item of a ``@graph`` counts as an item)."""
    out: dict[str, str] = {}
    for block in blocks:
        try:
            data = json.loads(block)
        except (ValueError, RecursionError):  # not JSON, or nested past the decoder's depth
            continue
        for item in _items(data, 0):
            found = {
                "title": _text(item.get("headline") or item.get("name")),
                "description": _text(item.get("description")),
                "keywords": _names(item.get("keywords")),
                "author": _names(item.get("author") or item.get("creator")),
                "publisher": _names(item.get("publisher")),
                "language": _text(item.get("inLanguage")),
                "published": _text(item.get("datePublished") or item.get("dateCreated")),
            }
            for key, value in found.items():
                if value and key not in out:
                    out[key] = value
    return out


def _items(data, depth: int) -> Iterator[dict]:
    if depth > 4:
        return
    if isinstance(data, list):
        for entry in data[:50]:
            yield from _items(entry, depth + 1)
    elif isinstance(data, dict):
        yield data
        if isinstance(data.get("@graph"), list):
            yield from _items(data["@graph"], depth + 1)
        main = data.get("mainEntity") or data.get("mainEntityOfPage")
        if isinstance(main, dict):
            yield from _items(main, depth + 1)


def _text(value, depth: int = 0) -> str:
    if isinstance(value, str):
        return value.strip()
    if depth > 4:
        return ""
    if isinstance(value, dict):
        return _text(value.get("@value") or value.get("name"), depth + 1)
    if isinstance(value, list) and value:
        return _text(value[0], depth + 1)
    return ""


def _names(value, depth: int = 0) -> str:
    """A person, organisation, string or list of them as ``a; b``."""
    if isinstance(value, str):
        return value.strip()
    if depth > 4:
        return ""
    if isinstance(value, dict):
        return _text(value.get("name") or value.get("@value"), depth + 1)
    if isinstance(value, list):
        return "; ".join(dict.fromkeys(n for n in (_names(v, depth + 1) for v in value[:50]) if n))
    return ""


# -- dates -----------------------------------------------------------------------------------------

_COMPACT = re.compile(r"^\s*(?:D:)?(\d{4})(\d{2})(\d{2})")  # 20240305, PDF's D:20240305101010+01'00'
_ISO = re.compile(r"^\s*(?:D:)?(\d{4})(?:[-/.]?(\d{2})(?:[-/.]?(\d{2}))?)?(?!\d)")
_ISO_LOOSE = re.compile(r"^\s*(\d{4})[-/.](\d{1,2})(?:[-/.](\d{1,2}))?(?!\d)")
_CJK_DATE = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月(?:\s*(\d{1,2})\s*日)?")
_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
_WORDY = re.compile(r"(\d{1,2})?\s*([A-Za-z]{3})[a-z]*\.?\s+(\d{1,2})?,?\s*(\d{4})")


def normalize_date(value) -> str:
    """``2024``, ``2024-03`` or ``2024-03-05`` from a date as pages and PDFs write it; "" when it
    is not one."""
    if isinstance(value, datetime | date):
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    text = str(value or "").strip()[:100]
    for pattern in (_CJK_DATE, _ISO_LOOSE, _COMPACT, _ISO):
        match = pattern.search(text) if pattern is _CJK_DATE else pattern.match(text)
        if match:
            return _checked(match.group(1), match.group(2), match.group(3))
    match = _WORDY.search(text)  # "5 March 2024", "March 5, 2024"
    if match and match.group(2).lower() in _MONTHS:
        return _checked(match.group(4), str(_MONTHS[match.group(2).lower()]), match.group(1) or match.group(3))
    return ""


def _checked(year: str, month: str | None, day: str | None) -> str:
    y = int(year)
    if not 1000 <= y <= 2999:
        return ""
    if not month or not 1 <= int(month) <= 12:
        return f"{y:04d}"
    m = int(month)
    if day:
        try:
            return date(y, m, int(day)).isoformat()
        except ValueError:
            pass
    return f"{y:04d}-{m:02d}"


def date_key(value: str, end: bool = False) -> str:
    """8 characters comparable as strings: ``2024-03`` -> ``20240300`` (``20240399`` as the end of
    a range)."""
    digits = re.sub(r"\D", "", value or "")[:8]
    if len(digits) not in (4, 6, 8):
        return ""
    return digits + ("99" if end else "00") * ((8 - len(digits)) // 2)


# -- PDF -------------------------------------------------------------------------------------------


def pdf_meta(reader) -> PageMeta:
    """A pypdf ``PdfReader``'s document info (and XMP where the info lacks a field), and its
    catalog's ``/Lang``. A broken dictionary only loses what it held."""
    out = PageMeta()
    try:
        info = reader.metadata
    except Exception:  # noqa: BLE001 - malformed PDFs are common; the text may still read
        info = None
    if info:
        for field, key in (("title", "/Title"), ("author", "/Author"), ("description", "/Subject")):
            out[field] = _pdf_text(info.get(key))
        out["keywords"] = _pdf_text(info.get("/Keywords"))
        created = None
        try:
            created = info.creation_date
        except Exception:  # noqa: BLE001 - a bad date string
            created = None
        out["published"] = normalize_date(created or _pdf_text(info.get("/CreationDate")))
    if not out.get("title") or not out.get("author"):
        _xmp(reader, out)
    try:
        lang = reader.trailer["/Root"].get("/Lang")
        out["language"] = _pdf_text(lang)
    except Exception:  # noqa: BLE001
        pass
    return PageMeta({k: v[:MAX_FIELD_CHARS] for k, v in out.items() if v})


def _xmp(reader, out: PageMeta) -> None:
    try:
        xmp = reader.xmp_metadata
        if xmp is None:
            return
        title = xmp.dc_title or {}
        creators = xmp.dc_creator or []
    except Exception:  # noqa: BLE001
        return
    if not out.get("title") and isinstance(title, dict) and title:
        out["title"] = str(title.get("x-default") or next(iter(title.values())))
    if not out.get("author") and creators:
        out["author"] = "; ".join(str(c) for c in creators)


def _pdf_text(value) -> str:
    if value is None:
        return ""
    try:
        return " ".join(str(value).split())
    except Exception:  # noqa: BLE001
        return ""

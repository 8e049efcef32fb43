"""What the full-text index holds: its schema and format, one document per distinct payload of a
URL, and which captures are indexable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from whoosh import columns, fields

from index.fulltext.cjk import CJKBigramAnalyzer
from index.fulltext.metadata import date_key
from index.fulltext.postings import CharTerms, Content
from index.fulltext.text import extract, mime_group
from strata.errors import ArchiveError
from strata.urls import url_host

# bump when the schema, analysis, postings or stored text change: older indexes are rebuilt
# (5: postings SPL3; 6: full-width punctuation stored as written)
FORMAT = 6
FORMAT_FILE = "strata-fulltext.json"
CAPTURES_FILE = "captures.sqlite"
PART_BOOSTS = (("title", 3.0), ("description", 1.5), ("keywords", 1.5), ("text", 1.0))
PARTS = tuple(name for name, _ in PART_BOOSTS) + ("boilerplate",)  # the ``parts`` column, in order
POOL_BYTES = 120 * 2**20  # postings held in memory before a segment is written (BulkWriter.pooled_bytes)
LOCK_WAIT = 600.0  # seconds index_run waits for another writer (a rebuild) to finish

ProgressFn = Callable[[dict], None]


class IndexUnusable(ArchiveError):
    """The index is missing, of an older format, or fails to open."""


def schema() -> fields.Schema:
    return fields.Schema(
        key=fields.ID(unique=True, stored=True),  # "<url> <digest>"
        url=fields.ID(stored=True, sortable=True),
        digest=fields.ID(stored=True),
        host=fields.ID(stored=True, sortable=True),
        domains=fields.KEYWORD(lowercase=True),  # the host and each parent domain
        mime=fields.ID(stored=True, sortable=True),
        mtype=fields.ID(stored=True, sortable=True),  # index.fulltext.text.mime_group
        lang=fields.ID(stored=True),  # primary language subtag: en, ja, zh ...
        status=fields.STORED(),
        size=fields.STORED(),
        author=fields.STORED(),
        publisher=fields.STORED(),
        published=fields.ID(stored=True, sortable=True),  # 2024, 2024-03 or 2024-03-05
        parts=fields.COLUMN(columns.VarBytesColumn()),  # pack_texts(title, description, keywords, text, boilerplate)
        content=Content(chars="chars"),  # title, meta and main text: the main field
        chars=CharTerms(),  # every CJK character, from content
        boiler=Content(chars="bchars"),  # menus, headers, footers, lists of links
        bchars=CharTerms(),
        # the filters' terms (filter_terms): words of the title, of author and publisher, of keywords
        tterms=fields.KEYWORD(lowercase=True),
        aterms=fields.KEYWORD(lowercase=True),
        kterms=fields.KEYWORD(lowercase=True),
    )


_FILTER_ANALYZER = CJKBigramAnalyzer()


def filter_terms(text: str) -> list[str]:
    """The terms a metadata filter matches on: the analyzer's (stems, CJK bigrams), each once."""
    return list(dict.fromkeys(t.text for t in _FILTER_ANALYZER(text or "", mode="query")))


def domains(host: str) -> list[str]:
    """``www.example.org`` -> ``www.example.org example.org org`` (IP addresses stay whole)."""
    host = (host or "").lower()
    if not host or host.replace(".", "").isdigit() or ":" in host:
        return [host] if host else []
    parts = host.split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


# -- documents -------------------------------------------------------------------------------------


@dataclass
class Payload:
    """What a document says about the payload itself (the same for every URL that holds it)."""

    mime: str = ""
    status: int = 200
    size: int = 0
    title: str = ""
    description: str = ""
    keywords: str = ""
    text: str = ""
    lang: str = ""
    boilerplate: str = ""
    author: str = ""
    publisher: str = ""
    published: str = ""

    @classmethod
    def from_record(cls, http_headers, raw: bytes) -> Payload:
        content_type = http_headers.get_header("Content-Type") if http_headers else None
        mime = (content_type or "").split(";")[0].strip().lower() or "unknown"
        status = int(http_headers.get_statuscode() or 0) if http_headers else 0
        out = extract(
            raw,
            content_type,
            http_headers.get_header("Content-Encoding") if http_headers else None,
            http_headers.get_header("Content-Language") if http_headers else None,
        )
        return cls(
            mime=mime,
            status=status,
            size=len(raw),
            title=out.title,
            description=out.description,
            keywords=out.keywords,
            text=out.text,
            lang=out.language,
            boilerplate=out.boilerplate,
            author=out.author,
            publisher=out.publisher,
            published=out.published,
        )

    @classmethod
    def from_stored(cls, stored: dict, parts: bytes | None) -> Payload:
        title, description, keywords, text, boilerplate = unpack_texts(parts)
        return cls(
            mime=stored.get("mime") or "",
            status=stored.get("status") or 0,
            size=stored.get("size") or 0,
            title=title,
            description=description,
            keywords=keywords,
            text=text,
            lang=stored.get("lang") or "",
            boilerplate=boilerplate,
            author=stored.get("author") or "",
            publisher=stored.get("publisher") or "",
            published=stored.get("published") or "",
        )


def make_document(url: str, digest: str, payload: Payload) -> dict:
    host = url_host(url) or (urlsplit(url).hostname or "")
    texts = {
        "title": payload.title,
        "description": payload.description,
        "keywords": payload.keywords,
        "text": payload.text,
        "boilerplate": payload.boilerplate,
    }
    return {
        "key": f"{url} {digest}",
        "url": url,
        "digest": digest,
        "host": host,
        "domains": " ".join(domains(host)),
        "mime": payload.mime,
        "mtype": mime_group(payload.mime),
        "lang": payload.lang or None,
        "status": payload.status,
        "size": payload.size,
        "author": payload.author or None,
        "publisher": payload.publisher or None,
        "published": date_key(payload.published) and payload.published or None,
        "parts": pack_texts(texts[name] for name in PARTS),
        "content": tuple((texts[name] or "", boost) for name, boost in PART_BOOSTS),
        "boiler": payload.boilerplate or None,
        "tterms": " ".join(filter_terms(payload.title)) or None,
        "aterms": " ".join(filter_terms(f"{payload.author} {payload.publisher}")) or None,
        "kterms": " ".join(filter_terms(payload.keywords)) or None,
    }


def pack_texts(texts) -> bytes:
    """The ``parts`` column: the texts in UTF-8, separated by NUL (dropped from the texts)."""
    return "\x00".join((t or "").replace("\x00", "") for t in texts).encode("utf-8")


def unpack_texts(data: bytes | None) -> tuple[str, str, str, str, str]:
    """(title, description, keywords, text, boilerplate)."""
    if not data:
        return "", "", "", "", ""
    title, description, keywords, text, boilerplate = data.decode("utf-8").split("\x00")
    return title, description, keywords, text, boilerplate


def indexable(url: str, status: int | None) -> bool:
    """Successful payloads only (no redirects, errors or robots.txt)."""
    if status is not None and not 200 <= status < 300:
        return False
    return urlsplit(url).path != "/robots.txt"

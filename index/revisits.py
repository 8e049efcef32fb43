"""Where a revisit's payload is: the one answer replay, verify, ``strata captures``, diff and the WACZ
export all give.

pywb replays a revisit record (``ResolvingLoader._load_different_url_payload``; FIELD-NOTES, "How
pywb resolves a revisit") by asking the collection's index for the captures of its
``WARC-Refers-To-Target-URI`` closest to its ``WARC-Refers-To-Date`` that are not revisits and carry
its payload digest, and loading the first it can. This module is that rule, once:

- the **target** is ``WARC-Refers-To-Target-URI``, else the revisit's own URI (wget's and
  Heritrix's older revisits name neither; their original is a capture of the same URI), and the
  time is ``WARC-Refers-To-Date``, else the revisit's own date;
- **candidates** are the index lines of the target's SURT key, the key pywb's index is sorted by:
  ``http://`` and ``https://`` (and ``www.``) forms of a URI are one key, so an original captured
  over http answers a revisit that names https;
- a candidate must not be a revisit and must hold the same payload digest, compared as a digest
  (``same_digest``: ``sha1:ABC`` and ``ABC``, ``sha-256:`` and ``sha256:``, hex in either case),
  where pywb compares strings and so misses the same payload written with another label;
- they are tried **closest in time first** (pywb's ``cdx_sort_closest``; equally close ones in index
  order, earlier first), and among candidates equally close the record the revisit's
  ``WARC-Refers-To`` names comes first. A reader takes the first it can read; a damaged one is
  damage (replay answers its damage page, verify lists the revisit under that damage).

Each surface brings its own candidates (replay and the export from the CDXJ, verify from the records
it read, ``strata captures`` from the harvest state) and orders them here. Nothing here reads a file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from strata.times import digits14

REVISIT_MIME = "warc/revisit"
# pywb's EMPTY_DIGEST: a revisit of an empty payload is its own payload, nothing to look up
EMPTY_SHA1 = "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
_LABELS = {"sha-1": "sha1", "sha-256": "sha256", "sha-512": "sha512"}


def digest_key(value: str | None) -> str:
    """A payload digest in one form for comparison: ``sha1:ABC``, ``ABC`` -> ``sha1:ABC``; other
    algorithms keep their (normalised) label; the value upper-cased (base32 is, hex may not be)."""
    value = (value or "").strip()
    if not value or value == "-":
        return ""
    label, sep, rest = value.partition(":")
    if not sep:
        return "sha1:" + value.upper()
    label = label.strip().lower()
    return f"{_LABELS.get(label, label)}:{rest.strip().upper()}"


def same_digest(a: str | None, b: str | None) -> bool:
    key = digest_key(a)
    return bool(key) and key == digest_key(b)


@dataclasses.dataclass(frozen=True)
class Revisit:
    """What a revisit says about its original."""

    url: str
    timestamp: str  # the revisit's own, 14 digits
    digest: str | None
    refers_to_uri: str | None = None
    refers_to_date: str | None = None  # WARC-Refers-To-Date (any precision) or 14 digits
    refers_to: str | None = None  # WARC-Refers-To, a record id

    @property
    def target(self) -> str:
        return self.refers_to_uri or self.url

    @property
    def when(self) -> str:
        return digits14(self.refers_to_date or "") or self.timestamp

    @property
    def empty(self) -> bool:
        """A revisit of the empty payload: pywb serves it as it is, without an original."""
        return digest_key(self.digest) == "sha1:" + EMPTY_SHA1

    @classmethod
    def from_headers(cls, headers: Mapping[str, str], timestamp: str, url: str | None = None) -> Revisit:
        """From a revisit record's WARC headers (names lower-cased)."""
        return cls(
            url=url or headers.get("warc-target-uri", ""),
            timestamp=timestamp,
            digest=headers.get("warc-payload-digest") or None,
            refers_to_uri=headers.get("warc-refers-to-target-uri") or None,
            refers_to_date=headers.get("warc-refers-to-date") or None,
            refers_to=headers.get("warc-refers-to") or None,
        )


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A capture of the target's key that may hold the payload: an index line, a record, a row."""

    url: str
    timestamp: str  # 14 digits
    digest: str | None
    filename: str
    offset: int
    length: int | None = None
    mime: str = ""
    record_id: str | None = None  # when the source knows it
    source: object = None  # what the surface made it from (a CDX object, a row), handed back

    @property
    def revisit(self) -> bool:
        return self.mime == REVISIT_MIME

    @classmethod
    def from_cdx(cls, cdx: Mapping, source: object = None) -> Candidate:
        """From a CDXJ line's fields (pywb's ``CDXObject`` or ``index.cdxj.parse_line``'s dict)."""
        try:
            offset = int(cdx.get("offset", -1))
        except (TypeError, ValueError):
            offset = -1
        length = str(cdx.get("length") or "")
        return cls(
            url=str(cdx.get("url", "")),
            timestamp=str(cdx.get("timestamp", "")),
            digest=str(cdx.get("digest") or "") or None,
            filename=str(cdx.get("filename", "")),
            offset=offset,
            length=int(length) if length.isdigit() else None,
            mime=str(cdx.get("mime", "")),
            source=cdx if source is None else source,
        )


def _seconds(ts14: str) -> float:
    ts = (ts14 + "00000101000000"[len(ts14) :])[:14] if len(ts14) < 14 else ts14[:14]
    try:
        return datetime.strptime(ts, "%Y%m%d%H%M%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return 0.0


def rank(revisit: Revisit, candidates: Iterable[Candidate]) -> list[Candidate]:
    """The candidates that can hold the revisit's payload, in the order they are tried (see the
    module's docstring). ``candidates`` must be the lines of the target's key in index order."""
    when = _seconds(revisit.when)
    wanted = digest_key(revisit.digest)
    # without a digest pywb filters on nothing but the type: any capture of the target may do
    fitting = [c for c in candidates if not c.revisit and (not wanted or digest_key(c.digest) == wanted)]
    order = {id(c): n for n, c in enumerate(fitting)}
    named = revisit.refers_to or ""

    def key(c: Candidate) -> tuple:
        return (abs(_seconds(c.timestamp) - when), 0 if named and c.record_id == named else 1, order[id(c)])

    return sorted(fitting, key=key)


def original_of(revisit: Revisit, candidates: Iterable[Candidate]) -> Candidate | None:
    """The first candidate ``rank`` gives, or None."""
    ranked = rank(revisit, candidates)
    return ranked[0] if ranked else None


__all__ = ["Candidate", "Revisit", "digest_key", "original_of", "rank", "same_digest"]

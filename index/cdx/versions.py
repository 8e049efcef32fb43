"""The captures of one URL, read from the collection's CDXJ index files, for moving between them.

``read_versions(collection, url)`` gives every capture of ``url`` (pywb's canonical match: the
same SURT key replay looks up, in the same index parts, files or Redis: ``index.cdx.capture_index``),
oldest first, as ``Version`` rows: timestamp, payload digest, MIME type, HTTP status, record type
and where the record is. Everything here comes from the CDXJ
(itself derived from the WARCs), so it works for a collection indexed by ``wb-manager`` alone and
says the same after ``strata index rebuild``.

``filter_captures`` is the one point every surface that lists captures (the replay banner's
previous/next and snapshot switch, the diff, ``/web/``, the permanent-id resolver, ``strata
diff``) passes them through: access rules are applied there.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from index.access.rules import rules_for
from index.cdx.capture_index import capture_lines
from index.cdx.cdxj import parse_line
from index.collection import Collection
from index.revisits import Candidate, Revisit, digest_key, original_of
from index.storage.state import record_locations
from strata.errors import ConfigError, StrataError
from strata.times import pad_as_of, pad_start


class NoSuchCapture(StrataError):
    """No capture of the URL matches what was asked (exit 2, HTTP 404)."""

    exit_code = 2
    http_status = 404


@dataclasses.dataclass(frozen=True)
class Version:
    timestamp: str  # 14 digits, as in the CDXJ
    url: str
    digest: str | None  # base32 SHA-1 of the payload (a revisit's is its original's)
    mime: str
    status: str
    revisit: bool
    filename: str
    offset: int
    length: int

    @classmethod
    def from_cdx(cls, cdx: Mapping) -> Version:
        digest = cdx.get("digest")
        if digest and ":" in digest:
            digest = digest.split(":", 1)[1]
        return cls(
            timestamp=str(cdx["timestamp"]),
            url=str(cdx.get("url", "")),
            digest=digest if digest and digest != "-" else None,
            mime=str(cdx.get("mime", "")),
            status=str(cdx.get("status", "") or ""),
            revisit=cdx.get("mime") == "warc/revisit",
            filename=str(cdx.get("filename", "")),
            offset=_int(cdx.get("offset")),
            length=_int(cdx.get("length")),
        )

    def same_payload(self, other: Version | None) -> bool:
        return other is not None and self.digest is not None and self.digest == other.digest


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def filter_captures(collection: Collection, versions: list[Version], viewer: Mapping | None = None) -> list[Version]:
    """THE filter point: the captures of ``collection`` a reader may be shown. Every capture-listing
    surface of the banner, diff, ``/web/`` and permanent ids calls this, so the access rules
    (``index.access.rules``) apply to all of them. ``viewer`` says who asks: its ``level`` (the replay app
    passes the request's, ``replay.access``; the command line the one given with ``--as``); none
    given: ``public``."""
    level = (viewer or {}).get("level") or "public"
    shown = rules_for(collection.path).shown_to(level)
    return versions if shown is None else [v for v in versions if shown(v.url, v.timestamp)]


def url_key(url: str) -> str:
    """The SURT key pywb's indexer gives ``url`` (what the CDXJ lines are sorted by)."""
    from pywb.utils.canonicalize import UrlCanonicalizeException, canonicalize  # pywb's utils patch nothing

    try:
        return canonicalize(url)
    except UrlCanonicalizeException:
        raise ConfigError(f"{url!r} is not a URL that can be looked up") from None


def read_versions(
    collection: Collection, url: str, limit: int | None = None, viewer: Mapping | None = None, filtered: bool = True
) -> list[Version]:
    """Every capture of ``url`` in the collection, oldest first (same second: in file and offset
    order, as replay orders them), passed through ``filter_captures`` (``filtered=False``: where
    payloads are, for reading them, never for showing)."""
    key = url_key(url).encode("utf-8")
    # pywb's exact match: the lines whose first field is the key
    found = [Version.from_cdx(cdx) for cdx in _parse_lines(list(capture_lines(collection, key + b" ", key + b"!")))]
    found.sort(key=_ORDER)
    if filtered:
        found = filter_captures(collection, found, viewer)
    return found[:limit] if limit else found


_ORDER = operator.attrgetter("timestamp", "filename", "offset")


def _parse_lines(lines: list[bytes]) -> list[dict]:
    """``parse_line`` of every line, their JSON read in one call (a URL of 10,000 captures: 5 times
    faster than a ``json.loads`` a line); a line that does not parse is read alone, as before."""
    if not lines:
        return []
    split = [line.rstrip(b"\n").split(b" ", 2) for line in lines]
    try:
        fields = json.loads(b"[" + b",".join([parts[2] for parts in split]) + b"]")
    except (ValueError, IndexError):
        return [parse_line(line) for line in lines]
    keys: dict[bytes, str] = {}  # one URL's lines share their key: decoded once
    for cdx, (key, stamp, _) in zip(fields, split, strict=True):
        urlkey = keys.get(key)
        if urlkey is None:
            urlkey = keys[key] = key.decode("utf-8")
        cdx["urlkey"], cdx["timestamp"] = urlkey, stamp.decode("ascii")
    return fields


def revisit_candidates(collection: Collection, url: str) -> list[Candidate]:
    """Every capture of ``url``'s key as ``index.revisits`` ranks a revisit's originals: the CDXJ
    lines replay's lookup reads, unfiltered (an access rule on a page does not move its payload)."""
    try:
        key = url_key(url).encode("utf-8")
    except ConfigError:
        return []
    found = [Candidate.from_cdx(cdx) for cdx in _parse_lines(list(capture_lines(collection, key + b" ", key + b"!")))]
    found.sort(key=lambda c: (c.timestamp, c.filename, c.offset))
    return found


def original_finder(
    collection: Collection, conn: sqlite3.Connection | None = None
) -> Callable[[Revisit], Candidate | None]:
    """A revisit's original as replay finds it (``index.revisits``), from the collection's CDXJ; with
    the harvest state (``conn``), the record its ``WARC-Refers-To`` names is known among equals.

    A target's lines are read once per finder and kept grouped by payload digest: the calendar of a
    URL of 10,000 captures asks for the originals of a period's revisits, all of one target (read
    and ranked anew for each, that was 20 s). ``rank`` keeps only the non-revisits of the revisit's
    digest, so giving it that group alone, in index order, ranks the same."""
    by_target: dict[str, tuple[list[Candidate], dict[str, list[Candidate]]]] = {}

    def candidates_for(revisit: Revisit) -> list[Candidate]:
        entry = by_target.get(revisit.target)
        if entry is None:
            every = revisit_candidates(collection, revisit.target)
            groups: dict[str, list[Candidate]] = {}
            for c in every:
                if not c.revisit:
                    groups.setdefault(digest_key(c.digest), []).append(c)
            entry = by_target[revisit.target] = (every, groups)
        every, groups = entry
        wanted = digest_key(revisit.digest)
        return groups.get(wanted, []) if wanted else every

    def find(revisit: Revisit) -> Candidate | None:
        candidates = candidates_for(revisit)
        if conn is not None and revisit.refers_to:
            where = {tuple(loc) for loc in record_locations(conn, revisit.refers_to)}
            candidates = [
                dataclasses.replace(c, record_id=revisit.refers_to) if (c.filename, c.offset) in where else c
                for c in candidates
            ]
        return original_of(revisit, candidates)

    return find


def check_timestamp(ts: str) -> str:
    """A 4 to 14 digit timestamp (YYYY[MM[DD[hh[mm[ss]]]]]) that is a real date, or ConfigError."""
    hint = "use 4 to 14 digits, YYYYMMDDhhmmss, e.g. 20240115120000"
    if not (ts.isascii() and ts.isdigit() and 4 <= len(ts) <= 14):
        raise ConfigError(f"{ts!r} is not a timestamp; {hint}")
    try:
        datetime.strptime(pad_start(ts), "%Y%m%d%H%M%S")
    except ValueError:
        raise ConfigError(f"{ts!r} is not a valid date and time; {hint}") from None
    return ts


def as_of(versions: Iterable[Version], ts: str) -> Version | None:
    """The capture a reader sees at ``ts``: an exact 14-digit match, else the latest at or before
    the end of the period ``ts`` names (``2024`` is as of 2024-12-31 23:59:59)."""
    end = pad_as_of(check_timestamp(ts))
    best = None
    for v in versions:
        if v.timestamp <= end:
            best = v
    return best


def neighbours(versions: list[Version], current: Version) -> tuple[Version | None, Version | None]:
    """The captures just before and just after ``current`` in ``versions`` (oldest first)."""
    try:
        i = versions.index(current)
    except ValueError:
        before = [v for v in versions if v.timestamp < current.timestamp]
        after = [v for v in versions if v.timestamp > current.timestamp]
        return (before[-1] if before else None), (after[0] if after else None)
    return (versions[i - 1] if i > 0 else None), (versions[i + 1] if i + 1 < len(versions) else None)

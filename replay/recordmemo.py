"""Records the warcserver has checked and parsed, remembered by their exact bytes.

Every load still reads the record's gzip member from the file (one positioned read,
``index.integrity.recordscan.read_member``). A memo entry holds the bytes such a read returned before, the
member inflated, and the record as parsed from them; it is used only when the bytes just read are
equal to the entry's, byte for byte. The digest check and the parse are functions of those bytes
(and of the offset and length the entry is filed under) alone, so their result is the one already
had: no check is skipped on bytes that were not checked. Any difference, one flipped bit that keeps
the file's size, times and inode included, and the record is checked and parsed afresh, as without
a memo. Nothing about the file (size, mtime, inode) is trusted in place of its bytes.

What is reused: the verdict (only records that passed are remembered), the WARC and HTTP headers
(copied for each load, since pywb edits them in place) and the stream's position in the inflated
bytes (a new reader over them each time). A record whose stream is not a reader over the inflated
bytes alone (one longer than the first buffer, which warcio inflates block by block) keeps only its
verdict and inflated bytes: it is parsed again, not checked again.

Bounded: least recently used entries go once the raw and inflated bytes kept pass ``max_bytes``.
One memo per warcserver. ``strata serve`` runs its greenlets on one thread and no call in here
yields; a lock keeps the entries whole under a threaded server too.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Hashable
from io import BytesIO

from warcio.digestverifyingreader import DigestChecker
from warcio.limitreader import LimitReader
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders

from replay.recordload import InflatedReader

DEFAULT_MAX_BYTES = 32 << 20


def _copy_headers(headers: StatusAndHeaders | None) -> StatusAndHeaders | None:
    """A copy whose header list can be edited without touching the original's."""
    if headers is None:
        return None
    copy = object.__new__(type(headers))
    copy.__dict__.update(headers.__dict__)
    copy.headers = list(headers.headers)
    return copy


@dataclasses.dataclass(slots=True)
class _Parsed:
    """A record as parsed, its stream described by where it stood in the inflated bytes."""

    fields: tuple  # format, rec_type, rec_headers, http_headers, content_type, length, payload_length
    limit: tuple[int, int] | None  # the LimitReader's (limit, original limit), None if none
    reader_state: dict  # the InflatedReader's attributes but its streams
    position: int | None  # of its buffer, None when it had none left

    @classmethod
    def of(cls, record: ArcWarcRecord) -> _Parsed | None:
        stream = record.raw_stream
        limit = None
        if type(stream) is LimitReader:
            limit = (stream.limit, stream._orig_limit)
            stream = stream.stream
        if type(stream) is not InflatedReader or stream.decompressor is not None:
            return None
        state = {k: v for k, v in vars(stream).items() if k not in ("stream", "buff")}
        fields = (
            record.format,
            record.rec_type,
            _copy_headers(record.rec_headers),
            _copy_headers(record.http_headers),
            record.content_type,
            record.length,
            record.payload_length,
        )
        return cls(fields, limit, state, None if stream.buff is None else stream.buff.tell())

    def record(self, inflated: bytes) -> ArcWarcRecord:
        reader = object.__new__(InflatedReader)
        reader.__dict__.update(self.reader_state)
        reader.stream = BytesIO(b"")
        buff = None
        if self.position is not None:
            buff = BytesIO(inflated)  # shares ``inflated``
            buff.seek(self.position)
        reader.buff = buff
        stream: InflatedReader | LimitReader = reader
        if self.limit is not None:
            stream = LimitReader(reader, self.limit[1])
            stream.limit = self.limit[0]
        fmt, rec_type, rec_headers, http_headers, content_type, length, payload_length = self.fields
        return ArcWarcRecord(
            fmt,
            rec_type,
            _copy_headers(rec_headers),
            stream,
            _copy_headers(http_headers),
            content_type,
            length,
            payload_length=payload_length,
            digest_checker=DigestChecker(False),
        )


@dataclasses.dataclass(slots=True)
class _Entry:
    raw: bytes
    inflated: bytes
    parsed: _Parsed | None


class RecordMemo:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self.kept = 0
        self.hits = 0
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def _entry(self, key: Hashable, raw: bytes) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.raw != raw:  # the bytes changed: forget what was made from the old ones
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry

    def record(self, key: Hashable, raw: bytes) -> ArcWarcRecord | None:
        """A fresh copy of the record remembered under ``key`` if it was made from exactly ``raw``
        and can be rebuilt without parsing; else None."""
        entry = self._entries.get(key)
        if entry is None or entry.parsed is None:
            return None
        entry = self._entry(key, raw)
        if entry is None or entry.parsed is None:
            return None
        return entry.parsed.record(entry.inflated)

    def inflated(self, key: Hashable, raw: bytes) -> bytes | None:
        """The inflated bytes of a record that passed its check when read as exactly ``raw``."""
        entry = self._entry(key, raw)
        return None if entry is None else entry.inflated

    def remember(self, key: Hashable, raw: bytes, inflated: bytes, record: ArcWarcRecord) -> None:
        """``record``, just parsed from ``raw`` (``inflated`` once inflated) after it passed its
        check, and before anyone read or edited it."""
        size = len(raw) + len(inflated)
        if size > self.max_bytes // 16:
            return
        entry = _Entry(raw, inflated, _Parsed.of(record))
        with self._lock:
            self._drop(key)
            self._entries[key] = entry
            self.kept += size
            while self.kept > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def _drop(self, key: Hashable) -> None:
        """Forgets ``key`` (the lock held)."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.kept -= len(entry.raw) + len(entry.inflated)

"""ARC files, read with warcio's reader: how far an ARC file (gzipped one member per record or not)
reads as whole records, for ``index.integrity.recordscan``'s whole-prefix view (``scan_prefix``), whose
own parser reads WARC only.

Each record is checked as it is read: the block is as long as its ``Content-Length``, a gzip member
ends where the record ends, the record is followed by the blank lines that end it. ARC records carry
no digest. The first record that fails, or the first bytes that do not parse as a record, ends the
reading: ``ArcReading.damage_at`` and ``reason``; ``good_end`` is the length of the whole records
before it. Nothing here raises on bad input.
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

_CHUNK = 1 << 16
_REASON_MAX = 160


@dataclasses.dataclass
class ArcReading:
    """What ``read_arc`` found: the whole records from the start of the file, and where they end."""

    size: int
    gzipped: bool
    records: int = 0
    good_end: int = 0
    versions: set[str] = dataclasses.field(default_factory=set)  # "ARC/1.0" once a record was read
    damage_at: int | None = None  # None: every byte read as whole records
    reason: str = ""


class _Damaged(Exception):
    def __init__(self, offset: int, reason: str):
        super().__init__(reason)
        self.offset = offset
        self.reason = reason


def read_arc(fh: BinaryIO, size: int, gzipped: bool) -> ArcReading:
    """Read the ARC file open as ``fh`` (at its start) until its first damage."""
    scan = ArcReading(size, gzipped)
    _walk(fh, scan)
    return scan


class _QuietIterator(ArchiveIterator):
    """warcio prints a warning on stderr for a record not followed by blank lines; it is counted
    (``err_count``) and reported as damage instead."""

    INC_RECORD = ""


def _walk(fh, scan: ArcReading) -> None:
    iterator = _QuietIterator(fh, no_record_parse=True, arc2warc=True)
    records = iter(iterator)
    while True:
        start = iterator.offset
        try:
            record = next(records)
        except StopIteration:
            _check_tail(fh, scan)
            return
        except ArchiveLoadFailed as exc:
            if "non-chunked gzip" in str(exc):  # no record but the first can be reached by its offset
                scan.records, scan.good_end = 0, 0
                scan.damage_at, scan.reason = 0, _reason(exc)
            else:
                scan.damage_at, scan.reason = start, _failure(fh, start, scan, exc)
            return
        except Exception as exc:  # noqa: BLE001 (any parse failure of a third-party file is damage)
            scan.damage_at, scan.reason = start, _failure(fh, start, scan, exc)
            return
        try:
            _check(iterator, record, start, scan)
        except _Damaged as exc:
            reason = exc.reason
            if scan.gzipped:  # a torn or garbled gzip member says more than what it held
                member = _member_reason(fh, exc.offset)
                reason = member if ("cut short" in member or "inflate" in member) else reason
            scan.damage_at, scan.reason = exc.offset, reason
            return
        except Exception as exc:  # noqa: BLE001
            scan.damage_at, scan.reason = start, _failure(fh, start, scan, exc)
            return
        scan.records += 1
        scan.good_end = start + iterator.get_record_length()


def _check(iterator: ArchiveIterator, record, start: int, scan: ArcReading) -> None:
    headers = record.rec_headers
    scan.versions.add("ARC/1.0")  # as warcio reads it, a WARC/1.0 record
    declared = headers.get_header("Content-Length")
    if declared is None or not declared.strip().isdigit():
        if not scan.gzipped and _headers_cut(iterator.fh, start):
            raise _Damaged(start, "record cut short inside its headers (the file ends there)")
        raise _Damaged(start, f"record has no valid Content-Length ({declared!r})")
    expected = record.length if record.length is not None else int(declared)
    got = 0
    while chunk := record.raw_stream.read(_CHUNK):
        got += len(chunk)
    if got < expected:
        raise _Damaged(start, f"record cut short: {got} of its {expected} bytes")
    errors = iterator.err_count
    iterator.read_to_end(record)
    decompressor = iterator.reader.decompressor if iterator.reader else None
    if decompressor is not None and not decompressor.eof:
        raise _Damaged(start, "gzip member cut short (the file ends inside it)")
    if iterator.err_count > errors:
        raise _Damaged(start, "record is not followed by the blank lines that end a record (wrong Content-Length?)")


def _headers_cut(fh, start: int) -> bool:
    """The file ends before the blank line that ends the record's headers (we stop here: no need to
    put the position back)."""
    fh.seek(start)
    head = fh.read(_CHUNK)
    return len(head) < _CHUNK and b"\r\n\r\n" not in head and b"\n\n" not in head


def _check_tail(fh, scan: ArcReading) -> None:
    """After the last record only blank lines may follow; anything else is a torn record."""
    fh.seek(scan.good_end)
    offset = scan.good_end
    while chunk := fh.read(_CHUNK):
        stripped = chunk.lstrip(b"\r\n")
        if stripped:
            offset += len(chunk) - len(stripped)
            reason = (
                _member_reason(fh, offset)
                if scan.gzipped
                else f"{scan.size - offset} bytes after the last whole record are not a record (a cut file?)"
            )
            scan.damage_at, scan.reason = offset, reason
            return
        offset += len(chunk)


def _failure(fh, start: int, scan: ArcReading, exc: Exception) -> str:
    if scan.gzipped and start >= 0:
        try:
            return _member_reason(fh, start)
        except OSError:
            pass
    return _reason(exc)


def _member_reason(fh, start: int) -> str:
    """Why the gzip member at ``start`` cannot be read: it does not inflate, or ends too soon."""
    fh.seek(start)
    if fh.read(2) != b"\x1f\x8b":
        return "bytes that are neither a gzip member nor a record"
    fh.seek(start)
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = 0
    try:
        while chunk := fh.read(_CHUNK):
            out += len(decoder.decompress(chunk, _CHUNK))
            while decoder.unconsumed_tail and not decoder.eof:
                out += len(decoder.decompress(decoder.unconsumed_tail, _CHUNK))
            if decoder.eof:
                break
    except zlib.error as exc:
        return f"gzip member does not inflate ({exc})"
    if not decoder.eof:
        return "gzip member cut short (the file ends inside it)"
    return "gzip member does not hold a WARC or ARC record"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, zlib.error):
        text = f"gzip data does not inflate ({exc})"
    elif isinstance(exc, ArchiveLoadFailed) and "non-chunked gzip" in str(exc):
        text = (
            "one gzip stream holds several records (each record must be its own gzip member); "
            "recompress it with: warcio recompress IN OUT"
        )
    elif isinstance(exc, ArchiveLoadFailed):
        text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "not a WARC or ARC record")
    elif isinstance(exc, EOFError):
        text = "the file ends inside a record"
    else:
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
        text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    text = text.encode("ascii", "backslashreplace").decode("ascii")
    return text if len(text) <= _REASON_MAX else text[: _REASON_MAX - 3] + "..."

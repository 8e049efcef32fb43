"""Reading a WARC or ARC file record by record and finding where it stops being whole.

``scan_file`` walks a file (WARC 0.17 to 1.1 or ARC, gzipped one member per record or not) with
warcio's reader and checks each record as it goes: the block is as long as its ``Content-Length``,
its ``WARC-Block-Digest`` (when there is one) matches, a gzip member ends where the record ends,
the record is followed by the blank lines that end it. The first record that fails, or the first
bytes that do not parse as a record, is the file's ``Damage``: the file, the byte offset where the
damaged record (or the unreadable bytes) starts, and the reason in one line. ``good_end`` is the
length of the whole prefix before it; ``open_prefix`` opens a file cut there, so that readers that
trust what they read (warcio, pywb's indexer) see only whole records.

Nothing here raises on bad input: a file that cannot be read at all is damaged at byte 0.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import os
import zlib
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

_CHUNK = 1 << 16
_REASON_MAX = 160
_ALGORITHMS = {"sha1": "sha1", "sha256": "sha256", "sha-256": "sha256", "sha512": "sha512", "md5": "md5"}


@dataclasses.dataclass(frozen=True)
class Damage:
    """Where a file stops being readable, and why."""

    filename: str
    offset: int
    reason: str

    def __str__(self) -> str:
        return f"{self.filename}: damaged at byte {self.offset}: {self.reason}"

    def as_dict(self) -> dict:
        return {"file": self.filename, "offset": self.offset, "reason": self.reason}


@dataclasses.dataclass
class Scan:
    """What ``scan_file`` found in one file."""

    filename: str
    size: int
    format: str = "warc"  # "warc" or "arc" (of the first record)
    gzipped: bool = False
    records: int = 0  # whole records before any damage
    good_end: int = 0  # bytes of whole records from the start of the file
    versions: set[str] = dataclasses.field(default_factory=set)  # "WARC/1.1", "ARC/1.0", ...
    damage: Damage | None = None

    @property
    def whole(self) -> bool:
        return self.damage is None


class _Damaged(Exception):
    def __init__(self, offset: int, reason: str):
        super().__init__(reason)
        self.offset = offset
        self.reason = reason


def scan_file(path: Path, filename: str | None = None) -> Scan:
    """Check every record of ``path``; stop at the first damage (see the module's docstring)."""
    path = Path(path)
    filename = filename or path.name
    try:
        size = path.stat().st_size
        fh = open(path, "rb")
    except OSError as exc:
        return Scan(filename, 0, damage=Damage(filename, 0, f"cannot be read: {exc.strerror or exc}"))
    scan = Scan(filename, size)
    with fh:
        head = fh.read(4096)
        fh.seek(0)
        scan.gzipped = head[:2] == b"\x1f\x8b"
        scan.format = sniff_format(head)
        if size == 0:
            scan.damage = Damage(filename, 0, "the file is empty")
            return scan
        _walk(fh, scan)
    if scan.damage is None and scan.records == 0:
        scan.damage = Damage(filename, 0, "no WARC or ARC record in the file")
    return scan


class _QuietIterator(ArchiveIterator):
    """warcio prints a warning on stderr for a record not followed by blank lines; it is counted
    (``err_count``) and reported as damage instead."""

    INC_RECORD = ""


def _walk(fh, scan: Scan) -> None:
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
                scan.damage = Damage(scan.filename, 0, _reason(exc))
            else:
                scan.damage = Damage(scan.filename, start, _failure(fh, start, scan, exc))
            return
        except Exception as exc:  # noqa: BLE001 (any parse failure of a third-party file is damage)
            scan.damage = Damage(scan.filename, start, _failure(fh, start, scan, exc))
            return
        try:
            _check(iterator, record, start, scan)
        except _Damaged as exc:
            reason = exc.reason
            if scan.gzipped:  # a torn or garbled gzip member says more than what it held
                member = _member_reason(fh, exc.offset)
                reason = member if ("cut short" in member or "inflate" in member) else reason
            scan.damage = Damage(scan.filename, exc.offset, reason)
            return
        except Exception as exc:  # noqa: BLE001
            scan.damage = Damage(scan.filename, start, _failure(fh, start, scan, exc))
            return
        scan.records += 1
        scan.good_end = start + iterator.get_record_length()


def _check(iterator: ArchiveIterator, record, start: int, scan: Scan) -> None:
    headers = record.rec_headers
    scan.versions.add("ARC/1.0" if scan.format == "arc" else headers.protocol)
    declared = headers.get_header("Content-Length")
    if declared is None or not declared.strip().isdigit():
        if not scan.gzipped and _headers_cut(iterator.fh, start):
            raise _Damaged(start, "record cut short inside its headers (the file ends there)")
        raise _Damaged(start, f"record has no valid Content-Length ({declared!r})")
    expected = record.length if record.length is not None else int(declared)
    digest = headers.get_header("WARC-Block-Digest")
    hasher = _hasher(digest)
    got = 0
    while True:
        chunk = record.raw_stream.read(_CHUNK)
        if not chunk:
            break
        got += len(chunk)
        if hasher is not None:
            hasher.update(chunk)
    if got < expected:
        raise _Damaged(start, f"record cut short: {got} of its {expected} bytes")
    if hasher is not None and not _digest_matches(digest, hasher):
        raise _Damaged(start, f"block digest does not match ({digest})")
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


def _check_tail(fh, scan: Scan) -> None:
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
            scan.damage = Damage(scan.filename, offset, reason)
            return
        offset += len(chunk)


def _failure(fh, start: int, scan: Scan, exc: Exception) -> str:
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


def file_format(path: Path) -> str:
    """ "arc" or "warc" (see ``sniff_format``)."""
    with open(path, "rb") as fh:
        return sniff_format(fh.read(4096))


def sniff_format(head: bytes) -> str:
    """ "arc" or "warc", from a file's first bytes (gzipped or not)."""
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 64)
        except zlib.error:
            return "warc"
    return "arc" if head.lstrip(b"\r\n").startswith(b"filedesc://") else "warc"


def _hasher(digest: str | None):
    if not digest or ":" not in digest:
        return None
    algo = _ALGORITHMS.get(digest.split(":", 1)[0].strip().lower())
    return hashlib.new(algo) if algo else None


def _digest_matches(digest: str, hasher) -> bool:
    """Base32 (the usual), hex or base64: tools differ."""
    value = digest.split(":", 1)[1].strip()
    raw = hasher.digest()
    return (
        value.upper().rstrip("=") == base64.b32encode(raw).decode().rstrip("=")
        or value.lower() == raw.hex()
        or value.rstrip("=") == base64.b64encode(raw).decode().rstrip("=")
    )


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


class _Prefix(io.RawIOBase):
    """The first ``limit`` bytes of an open file, read-only."""

    def __init__(self, fh, limit: int):
        self._fh = fh
        self._left = limit
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        want = min(len(buffer), self._left)
        if want <= 0:
            return 0
        data = self._fh.read(want)
        buffer[: len(data)] = data
        self._left -= len(data)
        self._pos += len(data)
        return len(data)

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        try:
            self._fh.close()
        finally:
            super().close()


def open_prefix(path: Path, limit: int | None):
    """``path`` opened for reading, cut at ``limit`` bytes (None: the whole file)."""
    fh = open(path, "rb")
    if limit is None or limit >= os.fstat(fh.fileno()).st_size:
        return fh
    return io.BufferedReader(_Prefix(fh, limit), buffer_size=_CHUNK)


def read_payload(record) -> int:
    """Reads a response's payload; returns its length. When the record has no payload digest (ARC
    records never do) it is computed as pywb's indexer computes it, SHA-1 of the payload as stored,
    and added to the record's headers as ``WARC-Payload-Digest``."""
    if record.rec_headers.get_header("WARC-Payload-Digest"):
        length = 0
        while chunk := record.raw_stream.read(_CHUNK):
            length += len(chunk)
        return length
    hasher = hashlib.sha1()
    length = 0
    while chunk := record.raw_stream.read(_CHUNK):
        hasher.update(chunk)
        length += len(chunk)
    record.rec_headers.add_header("WARC-Payload-Digest", "sha1:" + base64.b32encode(hasher.digest()).decode("ascii"))
    return length


def is_archive_name(name: str) -> bool:
    """File names a collection's archive holds: WARC and ARC, gzipped or not."""
    return name.endswith((".warc.gz", ".warc", ".arc.gz", ".arc"))


__all__ = [
    "Damage",
    "Scan",
    "is_archive_name",
    "open_prefix",
    "file_format",
    "read_payload",
    "scan_file",
    "sniff_format",
]

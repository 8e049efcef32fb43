"""Rolling WARC 1.1 output for one run.

Each file is written as ``<name>.open`` and renamed when sealed (fsync first, then rename, then fsync
the directory), one gzip member per record, a ``warcinfo`` record first. Files are named
``<collection>-<14-digit>-<serial>-<host>.warc.gz`` and rolled over past ``max_size``.
``on_sealed(filename, size, lines)`` runs after each rename: that is where index entries become
usable. With a ``fixity`` (``index.integrity.fixity.Fixity``) the file's SHA-256, computed over the bytes as
they are written, and its size are added to the collection's manifest between the rename and
``on_sealed``. With an ``indexer`` (``index.cdxj.RecordIndexer``) the roller makes each record's CDXJ line
as it writes it and hands the file's lines over (``None`` when a record needs the file read back).
"""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import typing
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from isal import isal_zlib
from warcio.warcwriter import WARCWriter

from harvester.records import PreparedRecord
from index.cdx.cdxj import NeedsFileIndex, RecordIndexer
from index.integrity.fixity import Fixity, HashingFile

OPEN_SUFFIX = ".open"
# Payloads that are compressed already gain nothing from a slow deflate level.
_COMPRESSED_TYPES = (
    "image/",
    "video/",
    "audio/",
    "font/",
    "application/pdf",
    "application/zip",
    "application/gzip",
    "application/x-gzip",
    "application/octet-stream",
    "application/wasm",
)
# Of those, the ones whose payloads are entropy-coded through and through: deflate at any level
# finds nothing in them (on random bytes level 1 made output 10 bytes LONGER than stored blocks) and
# costs 7 x what storing them does (2.25 ms against 0.30 ms for 60 KB, measured). Their payloads
# are stored (level 0) behind headers deflated as usual. Not SVG, BMP, TTF, WAV, PDF: those compress.
_ENTROPY_CODED_TYPES = (
    "image/jpeg",
    "image/png",
    "image/gif",
    "image/webp",
    "image/avif",
    "video/",
    "audio/mpeg",
    "audio/mp4",
    "audio/aac",
    "audio/ogg",
    "audio/opus",
    "audio/webm",
    "font/woff",
    "application/zip",
    "application/gzip",
    "application/x-gzip",
)


# Most records are small (every request, every revisit): a 4 KiB window compresses them exactly
# as well as zlib's default 32 KiB one, and sets up in a seventh of the time (about 10 against 69
# us per record, measured; for a page of 304s that was 5% of a harvest's CPU). Any inflater reads
# a stream made with a smaller window.
_SMALL_BLOCK = 2048
_SMALL_WINDOW = (12, 4)  # (window bits, memLevel)
_DEFAULT_WINDOW = (zlib.MAX_WBITS, 8)

# Deflate is ISA-L's (python-isal, zlib's API; standard deflate that every inflater reads), at its
# own scale of 1 to 3. On issue 2's site (one process, best of 3): HTML, zlib at 6 against ISA-L at
# 3, 0.42 -> 0.10 s for 19 MB, members 7 % larger (0.422 of the page against 0.393); PDFs, level 1
# either way, 0.30 -> 0.03 s for 14 MB, the same size. Level 0 (stored blocks) stays zlib's.
_TEXT_LEVEL = 3  # ISA-L's best
_FAST_LEVEL = 1  # payloads compressed already
# A gzip member's header (RFC 1952): deflate, no name, no time, unknown OS.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


# A JPEG is Huffman-coded whatever its encoder (EXIF and ICC segments aside): a payload that starts
# as one is stored without the probe below, which costs about as much as storing it (80-150 us).
_JPEG_START = b"\xff\xd8\xff"


def _compresses(payload_start: bytes) -> bool:
    """Whether a payload of an entropy-coded type deflates after all (a PNG written without
    compression, a BMP served as image/png): its first 4 KiB at ISA-L's level 1 save a tenth or
    more (19 us a probe; zlib's level 1 took 113 us, paid by every gzip-encoded page)."""
    if payload_start.startswith(_JPEG_START):
        return False
    probe = payload_start[:4096]
    return len(probe) >= 256 and len(isal_zlib.compress(probe, 1)) < 0.9 * len(probe)


class _Member:
    """One gzip member around one record, at the level and window that suit it. The file itself is
    flushed by the roller, once per group of records.

    With ``stored_after``, the first ``stored_after`` writes (warcio writes the WARC headers, then
    the HTTP headers, then the payload) are deflated at ``level`` and the rest stored (level 0):
    the first deflate stream is sync-flushed (byte-aligned, not final) and a second one continues
    it, which is one valid deflate stream (as pigz joins its blocks). The gzip wrapper is written
    here, since zlib's cannot span two compressors."""

    def __init__(self, out, level: int, small: bool, stored_after: int | None = None):
        self.out = out
        self.wbits, self.mem_level = _SMALL_WINDOW if small else _DEFAULT_WINDOW
        self.compressor: typing.Any = isal_zlib.compressobj(level, zlib.DEFLATED, -self.wbits, self.mem_level)
        self.stored_after = stored_after
        self.crc = 0
        self.size = 0
        out.write(_GZIP_HEADER)

    def write(self, data: bytes) -> None:
        if self.stored_after is not None:
            if self.stored_after == 0:
                self.stored_after = None
                if not _compresses(data):
                    self.out.write(self.compressor.flush(zlib.Z_SYNC_FLUSH))
                    self.compressor = zlib.compressobj(0, zlib.DEFLATED, -self.wbits, self.mem_level)
            else:
                self.stored_after -= 1
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        self.out.write(self.compressor.compress(data))

    def flush(self) -> None:
        self.out.write(self.compressor.flush())
        self.out.write((self.crc & 0xFFFFFFFF).to_bytes(4, "little") + (self.size & 0xFFFFFFFF).to_bytes(4, "little"))


class LeveledWARCWriter(WARCWriter):
    """warcio's writer, one gzip member per record as before, but ISA-L's deflate at level 3 for
    text and 1 for payloads that are compressed already (warcio uses zlib at 9 for everything: the
    slowest part of writing images and PDFs, for well under 1% of size), and entropy-coded payloads
    stored."""

    def __init__(self, filebuf, **kwargs):
        super().__init__(filebuf, gzip=False, **kwargs)

    def _write_warc_record(self, out, record):
        http = record.http_headers
        ctype = (http.get_header("Content-Type") or "").lower() if http else ""
        encoded = bool(http and (http.get_header("Content-Encoding") or "identity").strip().lower() != "identity")
        level = _FAST_LEVEL if ctype.startswith(_COMPRESSED_TYPES) or encoded else _TEXT_LEVEL
        small = record.rec_type in ("request", "revisit", "warcinfo") or (record.length or 0) <= _SMALL_BLOCK
        stored_after = None
        if record.rec_type == "response" and http and (encoded or ctype.startswith(_ENTROPY_CODED_TYPES)):
            stored_after = 2  # the WARC headers, the HTTP headers: then the payload
            level = _TEXT_LEVEL
        member = _Member(out, level, small, stored_after)
        if isinstance(record, PreparedRecord):  # made as bytes already: no warcio writer
            member.write(record.data)
            member.flush()
            return
        super()._write_warc_record(member, record)  # flushed at the record's end


@dataclasses.dataclass(frozen=True)
class RecordLocation:
    filename: str
    offset: int
    length: int


def _host_label() -> str:
    return re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname() or "localhost")[:40] or "localhost"


class WarcRoller:
    def __init__(
        self,
        archive_dir: Path,
        collection: str,
        warcinfo: dict[str, str],
        max_size: int,
        on_open: Callable[[str], None] | None = None,
        on_sealed: Callable[[str, int, list[bytes] | None], None] | None = None,
        indexer: RecordIndexer | None = None,
        fixity: Fixity | None = None,
        label: str | None = None,
    ):
        self.archive_dir = Path(archive_dir)
        self.label = label  # in each file's name: the worker that wrote it (default: this host's name)
        self.collection = collection
        self.warcinfo = warcinfo
        self.max_size = max_size
        self.on_open = on_open
        self.on_sealed = on_sealed
        self.indexer = indexer
        self.fixity = fixity
        self._lines: list[bytes] | None = None  # the current file's CDXJ lines, None: index from disk
        self.files: list[str] = []
        self.bytes_written = 0
        self._fh: HashingFile | None = None
        self._writer: WARCWriter | None = None
        self._filename: str | None = None
        self._serial = 0

    # -- records -------------------------------------------------------------------------------
    def write(self, records: list) -> list[RecordLocation]:
        """Write records one after another into the current file (a request/response pair stays
        together); roll over afterwards if the file is past ``max_size``."""
        if self._fh is None:
            self._open_next()
        assert self._fh is not None and self._writer is not None and self._filename is not None
        locations = []
        for record in records:
            offset = self._fh.tell()
            self._writer.write_record(record)
            length = self._fh.tell() - offset
            self.bytes_written += length
            locations.append(RecordLocation(self._filename, offset, length))
            if self._lines is not None:
                self._index(record, offset, length)
        self._fh.flush()
        if self._fh.tell() >= self.max_size:
            self.seal()
        return locations

    def _index(self, record, offset: int, length: int) -> None:
        assert self.indexer is not None and self._lines is not None and self._filename is not None
        try:
            line = self.indexer.line(record, offset, length, self._filename)
        except NeedsFileIndex:
            self._lines = None
            return
        if line:
            self._lines.append(line)

    @property
    def current_file(self) -> str | None:
        return self._filename

    # -- files ---------------------------------------------------------------------------------
    def _open_next(self) -> None:
        stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
        while True:
            self._serial += 1
            name = f"{self.collection}-{stamp}-{self._serial:05d}-{self.label or _host_label()}.warc.gz"
            if not (self.archive_dir / name).exists() and not (self.archive_dir / (name + OPEN_SUFFIX)).exists():
                break
        self.archive_dir.mkdir(parents=True, exist_ok=True)
        self._fh = fh = HashingFile(open(self.archive_dir / (name + OPEN_SUFFIX), "xb"))
        self._writer = LeveledWARCWriter(fh, warc_version="1.1")
        self._filename = name
        self._lines = [] if self.indexer else None
        self.files.append(name)
        if self.on_open:
            self.on_open(name)
        info = self._writer.create_warcinfo_record(name, {**self.warcinfo, "format": "WARC File Format 1.1"})
        start = fh.tell()
        self._writer.write_record(info)
        self.bytes_written += fh.tell() - start

    def seal(self) -> None:
        if self._fh is None:
            return
        name = self._filename
        assert name is not None  # named when opened
        self._fh.flush()
        os.fsync(self._fh.fileno())
        size = self._fh.tell()
        self._fh.close()
        digest = self._fh.hexdigest()
        lines, self._lines = self._lines, None
        self._fh = self._writer = self._filename = None
        seal_file(self.archive_dir, name)
        if self.fixity is not None:
            self.fixity.add(name, size, digest, agent="harvest")
        if self.on_sealed:
            self.on_sealed(name, size, lines)

    def close(self) -> None:
        self.seal()


def seal_file(archive_dir: Path, name: str) -> None:
    """Rename ``name.open`` to ``name`` durably."""
    os.replace(archive_dir / (name + OPEN_SUFFIX), archive_dir / name)
    dir_fd = os.open(archive_dir, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def warc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

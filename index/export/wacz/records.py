"""Reading what the WACZ export needs of a collection: its index lines, a record's raw bytes and WARC
headers, and the original record of a revisit.

A record is taken as the index locates it (file, offset, length): in a ``.warc.gz`` that is one gzip
member, copied as it is; in a plain ``.warc`` the record and its CRLF CRLF trailer, which the export
compresses into a member of its own. ARC records are not copied (a WARC cannot hold them).

The original of a revisit is found as pywb finds it when replaying (``ResolvingLoader``): among the
index lines of its ``WARC-Refers-To-Target-URI`` with the revisit's payload digest, not revisits
themselves, nearest to ``WARC-Refers-To-Date``. Of those, the record whose ``WARC-Record-ID`` is the
revisit's ``WARC-Refers-To`` is taken (located through the harvest state when there is one, else by
reading the candidates' headers), so that ``WARC-Refers-To`` still resolves in the package.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path

from pywb.utils.binsearch import iter_exact
from pywb.utils.canonicalize import canonicalize

from index.collection import Collection
from index.state import indexed_original
from strata.times import digits14

HEAD_BYTES = 1 << 16  # enough for any WARC header block the export reads


@dataclasses.dataclass(frozen=True)
class Located:
    """One index line and the record it points at."""

    filename: str
    offset: int
    length: int
    line: bytes  # the CDXJ line as the collection's index has it
    fields: dict

    @property
    def sort_key(self) -> bytes:
        return b"%s\x00%020d" % (self.filename.encode("utf-8"), self.offset)

    def encode(self) -> bytes:
        """One line for an ``ExternalSort``: sorts by file, then offset."""
        return self.sort_key + b"\x00" + self.line

    @classmethod
    def decode(cls, data: bytes) -> Located:
        return cls.from_line(data.split(b"\x00", 2)[2])

    @classmethod
    def from_line(cls, line: bytes) -> Located:
        urlkey, timestamp, blob = line.rstrip(b"\n").split(b" ", 2)
        fields = json.loads(blob)
        fields["urlkey"], fields["timestamp"] = urlkey.decode("utf-8"), timestamp.decode("ascii")
        return cls(fields["filename"], int(fields["offset"]), int(fields["length"]), line, fields)


def index_files(coll: Collection) -> list[Path]:
    """The collection's CDXJ files, as pywb reads ``indexes/`` (``*.cdxj`` and ``*.cdx``)."""
    if not coll.indexes_dir.is_dir():
        return []
    return sorted(p for p in coll.indexes_dir.iterdir() if p.suffix in (".cdxj", ".cdx") and p.is_file())


def iter_located(coll: Collection) -> Iterator[Located]:
    """Every index line that locates a record (CDXJ lines with filename, offset and length)."""
    for path in index_files(coll):
        with open(path, "rb") as fh:
            for line in fh:
                if not line.strip() or line.startswith(b"!") or b" {" not in line:
                    continue
                try:
                    located = Located.from_line(line if line.endswith(b"\n") else line + b"\n")
                except (ValueError, KeyError):
                    continue  # not a CDXJ line that locates a record
                yield located


class RecordReader:
    """Raw record bytes from the collection's WARC files (one descriptor per file, kept open)."""

    def __init__(self, coll: Collection):
        self.archive = coll.archive_dir
        self._fds: dict[str, int] = {}

    def path(self, filename: str) -> Path:
        return self.archive / filename

    def _fd(self, filename: str) -> int:
        fd = self._fds.get(filename)
        if fd is None:
            fd = self._fds[filename] = os.open(self.path(filename), os.O_RDONLY)
        return fd

    def member(self, loc: Located) -> bytes:
        """The record as a gzip member: read as it is from a ``.warc.gz``, compressed from a ``.warc``."""
        fd = self._fd(loc.filename)
        if loc.filename.endswith(".warc.gz"):
            return os.pread(fd, loc.length, loc.offset)
        plain = os.pread(fd, loc.length + 4, loc.offset)  # the index's length leaves out CRLF CRLF
        return gzip.compress(plain, compresslevel=6, mtime=0)

    def headers(self, loc: Located) -> dict[str, str]:
        """The record's WARC headers (names lower-cased)."""
        fd = self._fd(loc.filename)
        raw = os.pread(fd, min(loc.length, HEAD_BYTES), loc.offset)
        if loc.filename.endswith(".gz"):
            raw = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, HEAD_BYTES)
        return parse_warc_headers(raw)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}


def parse_warc_headers(raw: bytes) -> dict[str, str]:
    head = raw.split(b"\r\n\r\n", 1)[0].decode("utf-8", "replace")
    out: dict[str, str] = {}
    for line in head.split("\r\n")[1:]:
        name, sep, value = line.partition(":")
        if sep:
            out[name.strip().lower()] = value.strip()
    return out


def _bare(digest: str) -> str:
    return digest.split(":", 1)[1] if digest[:5].lower() == "sha1:" else digest


class OriginalFinder:
    """The record a revisit's payload lives in, as pywb's replay would find it in the collection."""

    def __init__(self, coll: Collection, reader: RecordReader, conn: sqlite3.Connection | None):
        self.files = index_files(coll)
        self.reader = reader
        self.conn = conn

    def find(self, revisit: Located, headers: dict[str, str]) -> tuple[Located | None, bool]:
        """(the original, whether its record ID is the revisit's ``WARC-Refers-To``)."""
        target = headers.get("warc-refers-to-target-uri") or revisit.fields.get("url", "")
        digest = _bare(revisit.fields.get("digest") or headers.get("warc-payload-digest", ""))
        if not target or not digest or digest == "-":
            return None, False
        when = digits14(headers.get("warc-refers-to-date") or "") or revisit.fields["timestamp"]
        candidates = sorted(self._candidates(target, digest), key=lambda c: abs(int(c.fields["timestamp"]) - int(when)))
        if not candidates:
            return None, False
        record_id = headers.get("warc-refers-to", "")
        if not record_id:
            return candidates[0], False
        where = self._state_location(record_id)
        for cand in candidates:
            if where is not None and (cand.filename, cand.offset) == where:
                return cand, True
        if where is None:
            for cand in candidates:
                if self.reader.headers(cand).get("warc-record-id") == record_id:
                    return cand, True
        return candidates[0], False

    def _candidates(self, target: str, digest: str) -> list[Located]:
        key = canonicalize(target, True).encode("utf-8")
        out = []
        for path in self.files:
            with open(path, "rb") as fh:
                for line in iter_exact(fh, key):
                    try:
                        cand = Located.from_line(line if line.endswith(b"\n") else line + b"\n")
                    except (ValueError, KeyError):
                        continue
                    if cand.fields.get("mime") != "warc/revisit" and _bare(cand.fields.get("digest", "")) == digest:
                        out.append(cand)
        return out

    def _state_location(self, record_id: str) -> tuple[str, int] | None:
        if self.conn is None:
            return None
        try:
            row = indexed_original(self.conn, record_id)
        except sqlite3.Error:
            return None
        return None if row is None else (row["warc"], int(row["offset"]))

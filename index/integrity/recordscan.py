"""The record scanner: Strata's one reader of a WARC file's records (offsets, lengths, digests,
damage), in one streaming pass, and the three views its callers take of it.

- **Every record, going on after damage**: ``scan(path, hasher)`` yields a ``Record`` per record (its
  offset and length in the file as pywb's index gives them: for a gzipped file, the gzip member
  holding it) and a ``Damage`` for each stretch it could not read (a member that does not inflate or
  fails its CRC, a header that does not parse, a block shorter than its ``Content-Length``, a file
  that ends inside a record), then goes on at the next gzip member, so the records after a damaged
  one are still checked. What ``strata verify`` reads.
- **The whole prefix**: ``WholePrefix`` and ``scan_prefix`` take those records up to the first
  ``Damage`` or the first record whose digest fails; ``good_end`` is where the last whole record
  ends, and ``open_prefix`` opens the file cut there, so that readers that trust what they read
  (warcio, pywb's indexer) see only whole records. What import, the rebuild and the full-text
  rebuild read, and where recovery cuts a killed run's ``.open`` file. This parser reads WARC
  only: an ARC file's prefix is read by warcio's reader behind the same ``Scan``
  (``index.integrity.arcscan``).
- **One record**: ``check_record_at`` and ``read_checked_record`` (``read_member`` +
  ``check_member``) read only the record at an index line's offset and length, with the same
  parser and the same verdicts. What replay checks a record with before serving it, and the WACZ
  export before packing it.

Each byte of the file is read once and, with a ``hasher``, hashed as it is read: the file's SHA-256
costs no second read. Digests are checked as ``warcio check`` does (``WARC-Block-Digest`` over the
block; for a response, request or resource, ``WARC-Payload-Digest`` over the payload, de-chunked when
the stored HTTP headers say chunked and the bytes as stored do not match), but not for a revisit's
payload digest, which is its original's: a revisit is checked by resolving its original
(``index.integrity.verify``). Memory stays bounded: inflated output is taken in slices of
``OUT_SLICE`` and hashed as it comes; only a chunked payload (up to ``DECHUNK_LIMIT``) is kept whole.
Bad bytes in a file are damage, never an exception.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import os
import re
import types
import zlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from index.integrity import arcscan

isal_zlib: types.ModuleType | None
try:
    from isal import isal_zlib
except ImportError:  # pragma: no cover - isal is a dependency; zlib reads the same
    isal_zlib = None

READ_SIZE = 1 << 20
OUT_SLICE = 1 << 20
HEADER_LIMIT = 1 << 20  # WARC and HTTP header blocks larger than this are not headers
DECHUNK_LIMIT = 64 << 20
RESYNC_LIMIT = 16 << 20  # how much of a damaged member is kept to look for the next one in
GZIP_MAGIC = b"\x1f\x8b\x08"
_BLANK = b"\r\n\r\n"
_HASHES = {
    "sha1": hashlib.sha1,
    "sha-1": hashlib.sha1,
    "sha256": hashlib.sha256,
    "sha-256": hashlib.sha256,
    "md5": hashlib.md5,
    "sha512": hashlib.sha512,
    "sha-512": hashlib.sha512,
}


@dataclasses.dataclass(slots=True)
class Record:
    offset: int
    length: int
    rec_type: str
    uri: str
    date: str
    record_id: str
    payload_digest: str  # as written, e.g. "sha1:ABC..." ("" if none)
    refers_to: str = ""
    refers_to_uri: str = ""
    refers_to_date: str = ""
    http_status: str = ""  # "200"; "" when the block has no HTTP status line
    problem: str = ""  # "" when every digest it carries matches
    note: str = ""  # a deviation from the spec every reader tolerates (verify's notes), e.g. no CRLF CRLF
    # with ``scan(..., facts=True)`` (what the rebuild derives a capture from): every WARC header
    # (names lower-cased), the HTTP header block (or a warcinfo's block), the payload's length
    headers: dict | None = None
    http_head: bytes = b""
    payload_length: int = 0
    payload_sha1: str = ""  # a response or resource without WARC-Payload-Digest: pywb's indexer's digest
    # with ``facts``: its WARC header block is ASCII and unfolded (every reader reads it alike)
    plain_headers: bool = True
    version: str = ""  # its first line: "WARC/1.1", ...

    @property
    def damaged(self) -> bool:
        return bool(self.problem)

    @property
    def indexed_digest(self) -> str:
        """The payload digest pywb's indexer gives the record: its own, else (a response or resource
        without one) the SHA-1 of its payload as stored; "" for none."""
        return self.payload_digest or (self.payload_sha1 if self.rec_type != "revisit" else "")


@dataclasses.dataclass(slots=True)
class Damage:
    """A stretch of a file that does not read as whole records (or a record whose digest fails, in
    the whole-prefix view), and why in one line."""

    offset: int  # where the unreadable stretch starts (a member, or a record)
    end: int  # where reading went on (the file's size if nowhere)
    reason: str
    uri: str = ""  # of the record it hit, when its WARC headers were still readable
    record_id: str = ""
    rec_type: str = ""
    filename: str = ""  # named by the whole-prefix view (``WholePrefix``, ``scan_prefix``) for reports

    def __str__(self) -> str:
        return f"{self.filename}: damaged at byte {self.offset}: {self.reason}"

    def as_dict(self) -> dict:
        return {"file": self.filename, "offset": self.offset, "reason": self.reason}


# ISA-L's inflate (python-isal, zlib's API) takes about half zlib's time on text: a fifth less for a
# whole verification. Same results, same CRC and length checks; only the error messages differ.
_INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error, isal_zlib.error) if isal_zlib else (zlib.error,)


def _inflater():
    return isal_zlib.decompressobj(31) if isal_zlib else zlib.decompressobj(31)


class ParseError(Exception):
    pass


def bare_digest(value: str) -> str:
    """``sha1:ABC`` -> ``ABC`` (pywb's CDXJ form), upper-cased for comparison."""
    if value and value[:5] == "sha1:":
        bare = value[5:]
        if bare.isalnum() and bare.isupper():
            return bare  # as nearly every writer writes it
    value = (value or "").strip()
    return (value.split(":", 1)[1] if ":" in value else value).upper()


_B32_TO_INT = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789ABCDEFGHIJKLMNOPQRSTUV", "01890"
)  # not in the RFC 4648 alphabet: deleted, then the lengths differ


class _DigestCheck:
    """A running digest against a ``label:value`` header (base32 or hex)."""

    __slots__ = ("hash", "expected")

    def __init__(self, header: str):
        label, _, value = header.strip().partition(":")
        make = _HASHES.get(label.lower())
        self.hash = make() if make and value else None
        self.expected = value.strip()

    def matches(self, digest: bytes | None = None) -> bool | None:
        """True/False, or None when the digest cannot be checked (unknown algorithm)."""
        if self.hash is None:
            return None
        digest = self.hash.digest() if digest is None else digest
        expected = self.expected
        if len(expected) == 2 * len(digest) and expected.lower() == digest.hex():
            return True  # hex (some tools write it so)
        # base32 read as a base-32 number (C speed; base64.b32encode is a Python loop)
        text = expected.upper().rstrip("=")
        pad = 5 * len(text) - 8 * len(digest)
        if not 0 <= pad < 8 or not text.isalnum():
            return False
        try:
            value = int(text.translate(_B32_TO_INT), 32)
        except ValueError:
            return False
        return value >> pad == int.from_bytes(digest, "big") and not value & ((1 << pad) - 1)


_HTTP_SCHEMES = ("http:", "https:")
_HTTP_RECORDS = ("response", "request", "revisit")
# The end of an HTTP header block as warcio's parser finds it: the first line that is blank once
# trailing whitespace is stripped (CRLF CRLF nearly always; LF LF or CR CR LF from some writers).
_HTTP_END = re.compile(rb"\n[ \t\r]*\n")
_BLANK_BYTES = b"\r\n \t"
FACTS_HEAD_LIMIT = 64 << 10  # a warcinfo block or an HTTP header block kept for ``facts``


def target_uri(value: str) -> str:
    """``WARC-Target-URI`` as warcio (and so pywb) reads it: wget 1.19's ``<...>`` taken off, spaces
    percent-encoded."""
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    return value.replace(" ", "%20") if " " in value else value


class _Pending:
    """The record being read: its headers and the digests running over its block."""

    __slots__ = (
        "start",
        "member",
        "headers",
        "rec_type",
        "remaining",
        "block",
        "payload",
        "http_head",
        "http_done",
        "http_status",
        "chunked",
        "raw_payload",
        "uri",
        "facts",
        "kept_head",
        "payload_length",
        "note",
        "sha1",
        "plain",
        "version",
    )

    def __init__(
        self, start: int, member: int, headers: dict[str, str], facts: bool = False, plain: bool = True, version=""
    ):
        self.start, self.member, self.headers = start, member, headers
        self.plain, self.version = plain, version
        self.rec_type = headers.get("warc-type", "")
        self.uri = target_uri(headers.get("warc-target-uri", ""))
        try:
            self.remaining = int(headers.get("content-length", ""))
        except ValueError:
            raise ParseError("Content-Length missing or not a number") from None
        if self.remaining < 0:
            raise ParseError("negative Content-Length")
        block = headers.get("warc-block-digest")
        self.block = _DigestCheck(block) if block else None
        payload = headers.get("warc-payload-digest")
        self.http_head = bytearray()
        self.http_status = ""
        self.chunked = False
        self.raw_payload: bytearray | None = None
        self.facts = facts
        self.kept_head = b""  # with ``facts``: the HTTP header block, or a warcinfo's block
        self.payload_length = 0  # bytes after the HTTP headers (the whole block when there are none)
        self.note = ""  # a deviation every reader tolerates (``Record.note``)
        # HTTP headers are read as warcio reads them: in a response, request or revisit of an http(s)
        # URI, whatever its Content-Type; an HTTP block is parsed for its status (the CDXJ check
        # needs it) whatever its digests. Any other block is its own payload.
        is_http = self.rec_type in _HTTP_RECORDS and self.uri.startswith(_HTTP_SCHEMES) and self.remaining > 0
        self.http_done = not is_http
        truncated = bool(headers.get("warc-truncated")) or "warc-segment-number" in headers
        self.payload = None
        if payload and not truncated and self.rec_type in ("response", "request", "resource"):
            self.payload = _DigestCheck(payload)
            if self.payload.hash is None:
                self.payload = None
        # the SHA-1 pywb's indexer computes (and indexes) for a payload that has no digest: what a
        # revisit's digest is matched against (verify, the rebuild)
        self.sha1 = hashlib.sha1() if not payload and self.rec_type in ("response", "resource") else None

    def feed(self, data: bytes, i: int, j: int) -> None:
        """Take ``data[i:j]``, the next bytes of the block."""
        view = memoryview(data)[i:j]
        if self.block is not None and self.block.hash is not None:
            self.block.hash.update(view)
        if self.http_done:
            self._payload(view)
            return
        head = self.http_head
        if not head:
            end = _http_end(data, i, min(j, i + HEADER_LIMIT))
            if end >= 0:
                self._http_headers(data[i:end])
                self.http_done = True
                self._payload(memoryview(data)[end:j])
                return
        old = len(head)
        head += view
        end = _http_end(head, max(0, old - 3), len(head))
        if end < 0:
            if len(head) > HEADER_LIMIT:
                self.http_done, self.payload = True, None
                self.http_head = bytearray()
            return
        self._http_headers(bytes(head[:end]))
        self.http_done = True
        self._payload(bytes(head[end:]))
        self.http_head = bytearray()

    def _http_headers(self, block: bytes) -> None:
        """``block``: the HTTP header block, its blank line included."""
        if self.facts:
            self.kept_head = block[:FACTS_HEAD_LIMIT]
        first, _, rest = block.partition(b"\n")
        parts = first.split(None, 2)
        if first.startswith(b"HTTP/") and len(parts) >= 2:
            self.http_status = parts[1].decode("latin-1")
        if b"hunked" in rest or b"HUNKED" in rest:  # rare: only then look at each header
            for line in rest.split(b"\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"transfer-encoding" and b"chunked" in value.lower():
                    self.chunked = True
        if self.chunked and self.payload is not None:
            self.raw_payload = bytearray()

    def _payload(self, data) -> None:
        self.payload_length += len(data)
        if self.sha1 is not None:
            self.sha1.update(data)
        if self.facts and self.rec_type == "warcinfo" and len(self.kept_head) < FACTS_HEAD_LIMIT:
            self.kept_head += bytes(data[: FACTS_HEAD_LIMIT - len(self.kept_head)])
        if self.payload is None or self.payload.hash is None:
            return
        self.payload.hash.update(data)
        if self.raw_payload is not None:
            if len(self.raw_payload) + len(data) > DECHUNK_LIMIT:
                self.raw_payload = None
            else:
                self.raw_payload += data

    def finish(self, offset: int, length: int) -> Record:
        h = self.headers
        problem = ""
        if self.block is not None and self.block.matches() is False:
            problem = "block digest does not match WARC-Block-Digest"
        elif self.payload is not None and not self.http_done:
            # no end of HTTP headers in the block: nothing that could be called a payload
            pass
        elif self.payload is not None and self.payload.matches() is False:
            if not (self.raw_payload is not None and self._dechunked_matches()):
                problem = "payload digest does not match WARC-Payload-Digest"
        record = Record(
            offset,
            length,
            self.rec_type,
            self.uri,
            h.get("warc-date", ""),
            h.get("warc-record-id", ""),
            h.get("warc-payload-digest", ""),
            h.get("warc-refers-to", ""),
            target_uri(h.get("warc-refers-to-target-uri", "")),
            h.get("warc-refers-to-date", ""),
            self.http_status,
            problem,
            self.note,
            version=self.version,
        )
        if self.facts:
            record.headers = h
            # an HTTP header block that never ended: all of it, as warcio reads headers to the end
            record.http_head = self.kept_head if self.http_done else bytes(self.http_head[:FACTS_HEAD_LIMIT])
            record.payload_length = self.payload_length
            record.plain_headers = self.plain
        if self.sha1 is not None:
            record.payload_sha1 = "sha1:" + base64.b32encode(self.sha1.digest()).decode("ascii")
        return record

    def _dechunked_matches(self) -> bool:
        assert self.raw_payload is not None  # only called when the payload was kept
        body = dechunk(bytes(self.raw_payload))
        if body is None:
            return False
        check = _DigestCheck(self.headers.get("warc-payload-digest", ""))
        if check.hash is None:
            return False
        return check.matches(hashlib.new(check.hash.name, body).digest()) is True


def dechunk(data: bytes) -> bytes | None:
    out = bytearray()
    pos = 0
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return None
        try:
            size = int(data[pos:eol].split(b";", 1)[0].strip(), 16)
        except ValueError:
            return None
        pos = eol + 2
        if size == 0:
            return bytes(out)
        if pos + size > len(data):
            return None
        out += data[pos : pos + size]
        pos += size + 2


def _http_end(data, start: int, stop: int) -> int:
    """Where the HTTP header block in ``data[start:stop]`` ends (after its blank line), or -1."""
    end = data.find(_BLANK, start, stop)
    found = _HTTP_END.search(data, start, end + 4 if end >= 0 else stop)
    if found is None:
        return -1
    return found.end()


def _parse_warc_headers(block: bytes) -> dict[str, str]:
    if not block.startswith(b"WARC/"):
        raise ParseError("no WARC record starts here")
    text = block.decode("utf-8", "replace")
    if "\n " not in text and "\n\t" not in text and ":  " not in text:
        # what every writer seen writes ("Name: value", no folding): one split per line
        try:
            pairs = [line.split(": ", 1) for line in text.split("\r\n")[1:]]
            # a name given twice: its first value, as warcio's get_header answers
            return {name.lower(): value.rstrip() for name, value in reversed(pairs)}
        except ValueError:  # a line without ": ": the general loop below
            pass
    headers: dict[str, str] = {}
    folded: set[str] = set()  # names whose first value is the one being read
    last = None
    for line in block.decode("utf-8", "replace").split("\r\n")[1:]:
        if line[:1] in (" ", "\t") and last is not None:
            if last in folded:
                headers[last] += " " + line.strip()
            continue
        name, sep, value = line.partition(":")
        if sep:
            last = name.strip().lower()
            if last not in headers:
                headers[last] = value.strip()
                folded.add(last)
            else:
                folded.discard(last)
    return headers


class RecordParser:
    """Push parser over a WARC's decompressed bytes. ``feed(data, member)`` takes the next bytes and
    the file offset of the gzip member they came from; finished records wait in ``done`` as
    ``(record start member, decompressed start, _Pending, decompressed end of its block)`` until
    their member's end is known.

    A record ends after its block and the blank lines that follow it. The spec's CRLF CRLF is
    expected; other blank lines (one CRLF, LF only, none before the next record or the end of a gzip
    member or of the file) are read as warcio and pywb read them, and noted on the record
    (``Record.note``). Anything else after a block is damage."""

    HEAD, BLOCK, TRAILER = 0, 1, 2

    def __init__(self, facts: bool = False):
        self.state = self.HEAD
        self.head = bytearray()
        self.trailer = b""
        self.current: _Pending | None = None
        self.head_member = 0
        self.pos = 0  # decompressed position (= file position for a plain file)
        self.block_end = 0  # decompressed position where the current record's block ended
        self.done: list[tuple[int, int, _Pending, int]] = []
        self.head_start = 0
        self.facts = facts

    def reset(self) -> None:
        RecordParser.__init__(self, self.facts)

    def in_record(self) -> bool:
        """Inside a record's headers or block (a record waiting only for its trailer is whole)."""
        return self.state == self.BLOCK or bool(self.head)

    def feed(self, data: bytes, member: int) -> None:
        n = len(data)
        i = 0
        view = memoryview(data)
        while i < n:
            if self.state == self.HEAD:
                if not self.head:
                    while i < n and data[i] in (10, 13):  # blank lines between records
                        i += 1
                    if i == n:
                        break
                    self.head_member = member
                    self.head_start = self.pos + i
                    end = data.find(_BLANK, i)
                    if end >= 0:
                        block = data[i:end]
                        i = end + 4
                        self._begin(block, self.pos + i)
                        continue
                    self.head += view[i:]
                    i = n
                else:
                    old = len(self.head)
                    self.head += view[i:]
                    end = self.head.find(_BLANK, max(0, old - 3))
                    if end < 0:
                        i = n
                    else:
                        block = bytes(self.head[:end])
                        i += end + 4 - old
                        self.head = bytearray()
                        self._begin(block, self.pos + i)
                        continue
                if len(self.head) > HEADER_LIMIT:
                    raise ParseError("WARC header block too long")
                if not self.head.startswith(b"WARC/"[: len(self.head)]):
                    raise ParseError("no WARC record starts here")
            elif self.state == self.BLOCK:
                current = self.current
                assert current is not None  # a record's headers were read
                take = min(current.remaining, n - i)
                if take:
                    current.feed(data, i, i + take)
                    current.remaining -= take
                    i += take
                if current.remaining == 0:
                    self.state = self.TRAILER
                    self.block_end = self.pos + i
            else:
                i = self._trailer(data, i, n, member)
        self.pos += n

    def _trailer(self, data: bytes, i: int, n: int, member: int) -> int:
        """Read the blank lines after a block from ``data[i:n]``; the position after what was taken."""
        need = 4 - len(self.trailer)
        self.trailer += data[i : i + need]
        i += min(need, n - i)
        if self.trailer == _BLANK:
            self._record_done()
            return i
        rest = self.trailer.lstrip(b"\r\n")
        if rest:  # a byte that is not a line end: the next record begins there, or damage
            blank = self.trailer[: len(self.trailer) - len(rest)]
            if b"\n" not in blank or not b"WARC/".startswith(rest[:5]):
                raise ParseError("record does not end where its Content-Length says")
            self._record_done(blank)
            # ``rest`` came in this call: every byte before it was a line end
            self.head_member = member
            self.head_start = self.pos + i - len(rest)
            self.head = bytearray(rest)
        elif len(self.trailer) == 4:  # four line-end bytes, not CRLF CRLF
            self._record_done(self.trailer)
        return i

    def _record_done(self, trailer: bytes | None = None) -> None:
        """The current record ended after its block; ``trailer``: the blank bytes that followed it,
        when they were not CRLF CRLF."""
        current = self.current
        assert current is not None
        if trailer is not None and not current.note:
            got = repr(trailer)[2:-1] if trailer else "nothing"
            current.note = f"record not followed by CRLF CRLF ({got} instead); warcio and pywb read it"
        self.done.append((self.head_member, self.head_start, current, self.block_end))
        self.current = None
        self.trailer = b""
        self.state = self.HEAD

    def end(self) -> None:
        """The end of a gzip member, or of the file: a record waiting for its trailer ends here."""
        if self.state == self.TRAILER:
            self._record_done(self.trailer)

    def _begin(self, block: bytes, at: int) -> None:
        """A record's WARC header block was read; its block starts at decompressed position ``at``."""
        headers = _parse_warc_headers(block)
        version = block[: block.find(b"\r\n")].decode("latin-1")
        if self.facts:
            plain = block.isascii() and b"\n " not in block and b"\n\t" not in block
            self.current = _Pending(self.head_start, self.head_member, headers, True, plain, version)
        else:
            self.current = _Pending(self.head_start, self.head_member, headers, version=version)
        self.state = self.BLOCK if self.current.remaining else self.TRAILER
        self.block_end = at  # where an empty block ends (set again when a block ends)

    def describe_current(self) -> tuple[str, str, str]:
        """URI, record ID and type of the record being read (else of the last one finished but
        not yet handed out): what a damage report can still name."""
        cur = self.current or (self.done[-1][2] if self.done else None)
        return (cur.uri, cur.headers.get("warc-record-id", ""), cur.rec_type) if cur else ("", "", "")


class _Source:
    """The file read once, front to back, each block hashed as it is read. The hashing runs on a
    thread of its own, in order (hashlib lets go of the GIL for large updates), while the caller
    inflates the block: on two cores the file's SHA-256 costs no wall time. At most
    ``HASH_BACKLOG`` blocks wait to be hashed."""

    HASH_BACKLOG = 8

    def __init__(self, path: Path, hasher):
        self.fh = open(path, "rb")
        self.hasher = hasher
        self.pos = 0  # file offset of the next byte read
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="recordscan-hash") if hasher is not None else None
        self._pending: deque = deque()

    def read(self, n: int | None = None) -> bytes:
        data = self.fh.read(n or READ_SIZE)
        if data and self._pool is not None:
            if len(data) < 4096:  # not worth a thread's turn
                self._wait(0)
                self.hasher.update(data)
            else:
                self._pending.append(self._pool.submit(self.hasher.update, data))
                self._wait(self.HASH_BACKLOG)
        self.pos += len(data)
        return data

    def _wait(self, backlog: int) -> None:
        while len(self._pending) > backlog:
            self._pending.popleft().result()

    def drain(self) -> None:
        while self.read(max(READ_SIZE, 1 << 22)):
            pass

    def close(self) -> None:
        self.fh.close()
        if self._pool is not None:
            self._wait(0)
            self._pool.shutdown()


def scan(path: Path, hasher=None, facts: bool = False) -> Iterator[Record | Damage]:
    """Records and damage of one WARC file, in file order (see the module's docstring). With
    ``facts``, each record also carries its WARC headers, HTTP header block and payload length."""
    src = _Source(Path(path), hasher)
    try:
        first = src.read()
        if first[:2] == GZIP_MAGIC[:2]:
            yield from _scan_gzip(src, first, facts)
        else:
            yield from _scan_plain(src, first, facts)
        src.drain()
    finally:
        src.close()


def _scan_plain(src: _Source, data: bytes, facts: bool = False) -> Iterator[Record | Damage]:
    parser = RecordParser(facts)
    while data:
        try:
            parser.feed(data, 0)
        except ParseError as exc:
            uri, rid, rtype = parser.describe_current()
            start = parser.current.start if parser.current else parser.head_start
            src.drain()
            yield from _plain_done(parser)
            yield Damage(start, src.pos, str(exc), uri, rid, rtype)
            return
        yield from _plain_done(parser)
        data = src.read()
    parser.end()
    yield from _plain_done(parser)
    if parser.in_record():
        uri, rid, rtype = parser.describe_current()
        start = parser.current.start if parser.current else parser.head_start
        yield Damage(start, src.pos, "the file ends inside a record (truncated)", uri, rid, rtype)


def _plain_done(parser: RecordParser) -> Iterator[Record]:
    done, parser.done = parser.done, []
    for _, start, pending, block_end in done:
        yield pending.finish(start, block_end - start)  # as warcio and pywb count it: no trailer


def _scan_gzip(src: _Source, pending: bytes, facts: bool = False) -> Iterator[Record | Damage]:
    """Members one after another; a member that fails is reported and the next one looked for. A
    record is one member: one that holds several records, or ends inside a record, is damage."""
    parser = RecordParser(facts)
    member_start = 0  # file offset of ``pending[0]``
    while True:
        while len(pending) < len(GZIP_MAGIC):  # a member's first bytes may come in a later read
            more = src.read()
            if not more:
                break
            pending += more
        if not pending:
            break
        if not pending.startswith(GZIP_MAGIC):
            found, rest, skipped, zeros = _resync(src, pending, 0)
            if not (zeros and not found):  # zero padding at the end of a file is no record
                yield Damage(
                    member_start, member_start + skipped, "bytes that are not a gzip member", *parser.describe_current()
                )
            parser.reset()
            member_start += skipped
            pending = rest
            if not found:
                break
            continue
        kind, used, kept, reason = yield from _member(src, parser, pending, member_start)
        if kind == "ok":
            if reason:  # the member inflates, but does not hold one whole record
                yield Damage(member_start, member_start + used, reason, *parser.describe_current())
                parser.reset()
            pending = kept
            member_start += used
            continue
        uri, rid, rtype = parser.describe_current()
        if not uri and not rid and kept and used == member_start:
            uri, rid, rtype = _salvage_headers(kept)
        damage_start = parser.current.member if parser.current else member_start
        if kind == "truncated":
            yield Damage(damage_start, src.pos, reason, uri, rid, rtype)
            return
        # look for the next member after this one's first byte (``kept`` starts at ``used``)
        found, pending, skipped, _ = _resync(src, kept, 1 if used == member_start else 0)
        end = used + skipped
        yield Damage(damage_start, end, reason, uri, rid, rtype)
        parser.reset()
        member_start = end
        if not found:
            break
    if parser.in_record():
        uri, rid, rtype = parser.describe_current()
        start = parser.current.member if parser.current else parser.head_member
        yield Damage(start, src.pos, "the file ends inside a record (truncated)", uri, rid, rtype)


def _member(src: _Source, parser: RecordParser, data: bytes, member_start: int):
    """Inflate one member from ``data`` (more read as needed), feeding the parser; yields the
    records that ended in it. Returns ``("ok", compressed length, bytes after it, "")``,
    ``("damaged", file offset of kept, bytes kept, reason)`` (kept: the member's bytes from its start,
    or the last ones read when it grew past ``RESYNC_LIMIT``) or ``("truncated", ...)``."""
    decoder = _inflater()
    kept = [data]
    kept_at = member_start
    kept_size = len(data)
    fed = 0
    while True:
        fed += len(data)
        try:
            _inflate_into(parser, decoder, data, member_start)
        except _INFLATE_ERRORS as exc:
            return "damaged", kept_at, b"".join(kept), f"gzip member does not inflate ({_zlib_reason(exc)})"
        except ParseError as exc:
            return "damaged", kept_at, b"".join(kept), str(exc)
        if decoder.eof:
            used = fed - len(decoder.unused_data)
            parser.end()
            if parser.in_record():
                return "ok", used, decoder.unused_data, SPANNING
            several = len(parser.done) > 1
            yield from _records_of_member(parser, member_start, used)
            return "ok", used, decoder.unused_data, SEVERAL if several else ""
        data = src.read()
        if not data:
            return "truncated", kept_at, b"", "the file ends inside a gzip member (truncated)"
        if kept_size >= RESYNC_LIMIT:
            kept, kept_at, kept_size = [], src.pos - len(data), 0
        kept.append(data)
        kept_size += len(data)


def _inflate_into(parser: RecordParser, decoder, data: bytes, member: int) -> None:
    """Inflate ``data``, bytes of the gzip member at file offset ``member``, into ``parser`` in slices
    of ``OUT_SLICE`` (memory stays bounded). Inflate errors and ``ParseError`` go to the caller."""
    chunk = data
    while chunk:
        out = decoder.decompress(chunk, OUT_SLICE)
        if out:
            parser.feed(out, member)
        chunk = decoder.unconsumed_tail


def _salvage_headers(member: bytes) -> tuple[str, str, str]:
    """URI, record ID and type from the start of a member that fails to inflate as a whole: zlib
    drops a call's output when it raises, so inflate a little at a time, up to the error."""
    decoder = _inflater()
    out = bytearray()
    for i in range(0, min(len(member), 1 << 16), 16):
        try:
            out += decoder.decompress(member[i : i + 16])
        except _INFLATE_ERRORS:
            break
        if _BLANK in out:
            break
    head, sep, _ = bytes(out).partition(_BLANK)
    if not sep:
        return "", "", ""
    try:
        headers = _parse_warc_headers(head)
    except ParseError:
        return "", "", ""
    return headers.get("warc-target-uri", ""), headers.get("warc-record-id", ""), headers.get("warc-type", "")


SPANNING = "a record goes on past the end of its gzip member (each record must be a gzip member of its own)"
SEVERAL = (
    "one gzip member holds several records (each record must be a gzip member of its own; "
    "warcio recompress IN OUT mends it)"
)


def _records_of_member(parser: RecordParser, member_start: int, length: int) -> Iterator[Record]:
    """The record the member held (none when it held several: replay cannot reach the others)."""
    done, parser.done = parser.done, []
    if len(done) > 1:
        parser.done = done[-1:]  # kept for ``describe_current``; dropped with the parser's reset
        return
    end = member_start + length
    for member, _, pending, _ in done:
        yield pending.finish(member, end - member)


def _resync(src: _Source, data: bytes, skip: int) -> tuple[bool, bytes, int, bool]:
    """Find the next gzip member header at or after ``skip`` in ``data``, reading on into the file.
    ``(found, bytes from that member on, bytes skipped from data's start, skipped bytes all zero)``."""
    skipped = 0
    pos = skip
    zeros = True
    while True:
        at = data.find(GZIP_MAGIC, pos)
        if at >= 0:
            zeros = zeros and not data[skip:at].strip(b"\x00")
            return True, data[at:], skipped + at, zeros
        keep = data[-2:] if len(data) >= 2 else data
        zeros = zeros and not data[skip : len(data) - len(keep)].strip(b"\x00")
        skipped += len(data) - len(keep)
        more = src.read()
        if not more:
            zeros = zeros and not keep[max(0, skip - skipped) :].strip(b"\x00")
            return False, b"", skipped + len(keep), zeros
        data = keep + more
        pos = skip = 0


def _zlib_reason(exc: Exception) -> str:
    text = str(exc)
    return text.split(": ", 1)[-1] if ": " in text else text


# The whole prefix: the records of a file up to its first damage (import, the rebuilds, full text).


@dataclasses.dataclass
class Scan:
    """A file's whole prefix (``scan_prefix``): its whole records from the start, up to its first
    damage, and that damage."""

    filename: str
    size: int
    format: str = "warc"  # "warc" or "arc" (``sniff_format``)
    gzipped: bool = False
    records: int = 0  # whole records before any damage
    good_end: int = 0  # where the last of them ends: the file cut there holds them all
    versions: set[str] = dataclasses.field(default_factory=set)  # "WARC/1.1", "ARC/1.0", ...
    damage: Damage | None = None

    @property
    def whole(self) -> bool:
        return self.damage is None


class WholePrefix:
    """The records of a WARC file up to its first damage: iterate it for them (read as ``scan``
    reads them, with ``hasher`` and ``facts``), then ``scan`` says where they ended and why. The
    first ``Damage`` ``scan`` yields, or the first record whose digest fails, ends the prefix."""

    def __init__(self, path: Path, filename: str | None = None, hasher=None, facts: bool = False):
        self.path = Path(path)
        self.scan = Scan(filename or self.path.name, 0)  # ``scan_prefix`` fills in the file's size and kind
        self._hasher, self._facts = hasher, facts

    def __iter__(self) -> Iterator[Record]:
        found = self.scan
        for item in scan(self.path, self._hasher, self._facts):
            if type(item) is Damage:
                item.filename = found.filename
                found.damage = item
                return
            assert type(item) is Record
            if item.problem:
                end = item.offset + item.length
                reason = f"{item.rec_type} record: {item.problem}"
                found.damage = Damage(item.offset, end, reason, item.uri, item.record_id, item.rec_type, found.filename)
                return
            found.records += 1
            found.good_end = item.offset + item.length
            found.versions.add(item.version)
            yield item


def scan_prefix(path: Path, filename: str | None = None) -> Scan:
    """The whole prefix of a WARC or ARC file (gzipped or not): a WARC's read by ``WholePrefix``, an
    ARC's by warcio's reader (``index.integrity.arcscan``: this parser reads WARC only). A file that
    cannot be read at all, is empty or holds no record is damaged at byte 0; nothing raises on bad
    input."""
    path = Path(path)
    filename = filename or path.name
    try:
        size = path.stat().st_size
        fh = open(path, "rb")
    except OSError as exc:
        return Scan(filename, 0, damage=Damage(0, 0, f"cannot be read: {exc.strerror or exc}", filename=filename))
    with fh:
        head = fh.read(4096)
        fh.seek(0)
        found = Scan(filename, size, sniff_format(head), head[:2] == GZIP_MAGIC[:2])
        if size == 0:
            found.damage = Damage(0, 0, "the file is empty", filename=filename)
            return found
        if found.format == "arc":
            arc = arcscan.read_arc(fh, size, found.gzipped)
            found.records, found.good_end, found.versions = arc.records, arc.good_end, arc.versions
            if arc.damage_at is not None:
                found.damage = Damage(arc.damage_at, size, arc.reason, filename=filename)
    if found.format == "warc":
        prefix = WholePrefix(path, filename)
        try:
            for _ in prefix:
                pass
        except OSError as exc:  # the file went away or cannot be read any further
            reason = f"cannot be read: {exc.strerror or exc}"
            prefix.scan.damage = Damage(prefix.scan.good_end, size, reason, filename=filename)
        found.records, found.good_end, found.versions = prefix.scan.records, prefix.scan.good_end, prefix.scan.versions
        found.damage = prefix.scan.damage
    if found.damage is None and found.records == 0:
        found.damage = Damage(0, size, "no WARC or ARC record in the file", filename=filename)
    return found


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
    """``path`` opened for reading, cut at ``limit`` bytes (None: the whole file), so that readers
    that trust what they read (warcio, pywb's indexer) see only the whole prefix's records."""
    fh = open(path, "rb")
    if limit is None or limit >= os.fstat(fh.fileno()).st_size:
        return fh
    return io.BufferedReader(_Prefix(fh, limit), buffer_size=1 << 16)


def read_payload(record) -> int:
    """Reads a warcio record's payload; returns its length. When the record has no payload digest
    (ARC records never do) it is computed as pywb's indexer computes it, SHA-1 of the payload as
    stored, and added to the record's headers as ``WARC-Payload-Digest``."""
    if record.rec_headers.get_header("WARC-Payload-Digest"):
        length = 0
        while chunk := record.raw_stream.read(1 << 16):
            length += len(chunk)
        return length
    hasher = hashlib.sha1()
    length = 0
    while chunk := record.raw_stream.read(1 << 16):
        hasher.update(chunk)
        length += len(chunk)
    record.rec_headers.add_header("WARC-Payload-Digest", "sha1:" + base64.b32encode(hasher.digest()).decode("ascii"))
    return length


def file_format(path: Path) -> str:
    """ "arc" or "warc" (see ``sniff_format``)."""
    with open(path, "rb") as fh:
        return sniff_format(fh.read(4096))


def sniff_format(head: bytes) -> str:
    """ "arc" or "warc", from a file's first bytes (gzipped or not)."""
    if head[:2] == GZIP_MAGIC[:2]:
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 64)
        except zlib.error:
            return "warc"
    return "arc" if head.lstrip(b"\r\n").startswith(b"filedesc://") else "warc"


def is_archive_name(name: str) -> bool:
    """File names a collection's archive holds: WARC and ARC, gzipped or not."""
    return name.endswith((".warc.gz", ".warc", ".arc.gz", ".arc"))


# One record: replay's check before it serves a record, the WACZ export's before it packs one.


def _feed_member(fd: int, parser: RecordParser, first: bytes, offset: int, pos: int, length: int | None) -> str:
    """Inflate the gzip member at ``offset`` (``first`` already read) into ``parser``: why it cannot be
    read whole, or ""."""
    decoder = _inflater()
    left = None if length is None else length - len(first)
    data = first
    try:
        while True:
            _inflate_into(parser, decoder, data, offset)
            if decoder.eof:
                return ""
            size = READ_SIZE if left is None else min(READ_SIZE, left)
            data = os.pread(fd, size, pos) if size > 0 else b""
            if not data:
                return "the record's gzip member ends early (truncated)"
            pos += len(data)
            if left is not None:
                left -= len(data)
    except _INFLATE_ERRORS as exc:
        return f"gzip member does not inflate ({_zlib_reason(exc)})"
    except ParseError as exc:
        return str(exc)


def check_record_at(path: Path, offset: int, length: int | None) -> str:
    """Why the record at ``offset`` (``length`` bytes, as the index says) cannot be trusted, or ""
    when it reads whole and every digest it carries matches. Reads only that record."""
    parser = RecordParser()
    fd = os.open(path, os.O_RDONLY)
    try:
        first = os.pread(fd, min(length, READ_SIZE) if length else READ_SIZE, offset)
        pos = offset + len(first)
        if first[:2] == GZIP_MAGIC[:2]:
            why = _feed_member(fd, parser, first, offset, pos, length)
            if why:
                return why
        elif length is None:
            return ""  # a plain record of unknown length: nothing to bound it by
        else:
            end = offset + length + len(_BLANK)  # the index's length leaves out the trailer
            first = first + os.pread(fd, end - pos, pos) if pos < end else first[: end - offset]
            pos = offset + len(first)
            try:
                data = first
                while True:
                    parser.feed(data, offset)
                    if pos >= end or not data:
                        break
                    data = os.pread(fd, min(READ_SIZE, end - pos), pos)
                    pos += len(data)
            except ParseError as exc:
                return str(exc)
            parser.end()
            if not parser.done and pos < end:
                return "the file ends inside the record (truncated)"
    finally:
        os.close(fd)
    parser.end()
    if not parser.done:
        return "the record is incomplete"
    return parser.done[0][2].finish(offset, length or 0).problem


# A record read into memory by ``read_checked_record``: at most this much in the file (one read)
# and this much inflated. Anything larger is left to ``check_record_at`` and a streaming reader.
WHOLE_READ_LIMIT = 1 << 20
WHOLE_INFLATED_LIMIT = 4 << 20


def read_checked_record(path: Path, offset: int, length: int | None) -> tuple[str, bytes | None, bytes | None]:
    """The record at ``offset`` as ``check_record_at`` checks it, from one positioned read of exactly
    its ``length`` bytes (its gzip member), inflated once: ``(why it cannot be trusted, None, None)``
    or ``("", the member as read, the member inflated)``, which a reader can parse from memory
    instead of reading the file again. ``("", None, None)`` when the record is not a gzip member
    of at most ``WHOLE_READ_LIMIT`` bytes inflating to less than ``WHOLE_INFLATED_LIMIT``; it is
    then not checked here (``check_record_at`` does that, reading as it goes)."""
    data = read_member(path, offset, length)
    if data is None or not length:
        return "", None, None
    reason, inflated = check_member(data, offset, length)
    return (reason, None, None) if reason or inflated is None else ("", data, inflated)


def read_member(path: str | Path, offset: int, length: int | None) -> bytes | None:
    """The ``length`` bytes at ``offset``, from one positioned read, or None when ``length`` is
    unknown or more than ``WHOLE_READ_LIMIT`` (``read_checked_record`` reads no more). ``path`` may
    be a ``str``: building a ``Path`` costs more than the read of a small record."""
    if not length or length > WHOLE_READ_LIMIT:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)


def check_member(data: bytes, offset: int, length: int) -> tuple[str, bytes | None]:
    """The check of ``read_checked_record`` over ``data``, the bytes ``read_member`` read:
    ``(why it cannot be trusted, None)``, ``("", the member inflated)``, or ``("", None)`` when it
    is not a gzip member inflating to less than ``WHOLE_INFLATED_LIMIT`` (not checked here).
    A function of ``data``, ``offset`` and ``length`` alone."""
    if data[:2] != GZIP_MAGIC[:2]:
        return "", None
    decoder = _inflater()
    try:
        inflated = decoder.decompress(data, WHOLE_INFLATED_LIMIT)
    except _INFLATE_ERRORS as exc:
        return f"gzip member does not inflate ({_zlib_reason(exc)})", None
    if decoder.unconsumed_tail or len(inflated) >= WHOLE_INFLATED_LIMIT:
        return "", None  # inflates to more than the limit
    if not decoder.eof:
        return "the record's gzip member ends early (truncated)", None
    parser = RecordParser()
    try:
        parser.feed(inflated, offset)
    except ParseError as exc:
        return str(exc), None
    parser.end()
    if not parser.done:
        return "the record is incomplete", None
    problem = parser.done[0][2].finish(offset, length).problem
    return (problem, None) if problem else ("", inflated)


__all__ = [
    "Damage",
    "Record",
    "Scan",
    "WholePrefix",
    "bare_digest",
    "check_member",
    "check_record_at",
    "file_format",
    "is_archive_name",
    "open_prefix",
    "read_checked_record",
    "read_member",
    "read_payload",
    "scan",
    "scan_prefix",
    "sniff_format",
]

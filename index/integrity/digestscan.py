"""Every record of a WARC file, its digests checked, in one streaming pass: what ``strata verify``
reads, and what replay checks a record with before serving it.

``scan(path, hasher)`` yields a ``Record`` per record (its offset and length in the file as pywb's
index gives them: for a gzipped file, the gzip member holding it) and a ``Damage`` for each stretch it
could not read (a member that does not inflate or fails its CRC, a header that does not parse, a
block shorter than its ``Content-Length``, a file that ends inside a record), then goes on at the next
gzip member, so the records after a damaged one are still checked. Each byte of the file is read
once and, with a ``hasher``, hashed as it is read: the file's SHA-256 costs no second read.

Digests are checked as ``warcio check`` does (``WARC-Block-Digest`` over the block; for a response,
request or resource, ``WARC-Payload-Digest`` over the payload, de-chunked when the stored HTTP
headers say chunked and the bytes as stored do not match), but not for a revisit's payload digest,
which is its original's: a revisit is checked by resolving its original (``index.integrity.verify``). Memory
stays bounded: inflated output is taken in slices of ``OUT_SLICE`` and hashed as it comes; only a
chunked payload (up to ``DECHUNK_LIMIT``) is kept whole.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import types
import zlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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

    @property
    def damaged(self) -> bool:
        return bool(self.problem)


@dataclasses.dataclass(slots=True)
class Damage:
    offset: int  # where the unreadable stretch starts (a member, or a record)
    end: int  # where reading went on (the file's size if nowhere)
    reason: str
    uri: str = ""  # of the record it hit, when its WARC headers were still readable
    record_id: str = ""
    rec_type: str = ""


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
    )

    def __init__(self, start: int, member: int, headers: dict[str, str]):
        self.start, self.member, self.headers = start, member, headers
        self.rec_type = headers.get("warc-type", "")
        self.uri = headers.get("warc-target-uri", "")
        try:
            self.remaining = int(headers.get("content-length", ""))
        except ValueError:
            raise ParseError("Content-Length missing or not a number") from None
        if self.remaining < 0:
            raise ParseError("negative Content-Length")
        block = headers.get("warc-block-digest")
        self.block = _DigestCheck(block) if block else None
        payload = headers.get("warc-payload-digest")
        ctype = headers.get("content-type", "").lower()
        self.http_head = bytearray()
        self.http_status = ""
        self.chunked = False
        self.raw_payload: bytearray | None = None
        is_http = ctype.startswith("application/http")
        # An HTTP block is parsed for its status (the CDXJ check needs it) whatever its digests.
        self.http_done = not is_http or self.rec_type not in ("response", "request", "revisit")
        truncated = bool(headers.get("warc-truncated")) or "warc-segment-number" in headers
        self.payload = None
        if payload and not truncated and self.rec_type in ("response", "request", "resource"):
            self.payload = _DigestCheck(payload)
            if self.payload.hash is None:
                self.payload = None
        if self.payload is not None and self.http_done and is_http:  # an HTTP block of another type
            self.payload = None

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
            end = data.find(_BLANK, i, min(j, i + HEADER_LIMIT))
            if end >= 0:
                self._http_headers(data[i:end])
                self.http_done = True
                self._payload(memoryview(data)[end + 4 : j])
                return
        old = len(head)
        head += view
        end = head.find(_BLANK, max(0, old - 3))
        if end < 0:
            if len(head) > HEADER_LIMIT:
                self.http_done, self.payload = True, None
                self.http_head = bytearray()
            return
        self._http_headers(bytes(head[:end]))
        self.http_done = True
        self._payload(bytes(head[end + 4 :]))
        self.http_head = bytearray()

    def _http_headers(self, block: bytes) -> None:
        first, _, rest = block.partition(b"\r\n")
        parts = first.split(None, 2)
        if first.startswith(b"HTTP/") and len(parts) >= 2:
            self.http_status = parts[1].decode("latin-1")
        if b"hunked" in rest or b"HUNKED" in rest:  # rare: only then look at each header
            for line in rest.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"transfer-encoding" and b"chunked" in value.lower():
                    self.chunked = True
        if self.chunked and self.payload is not None:
            self.raw_payload = bytearray()

    def _payload(self, data) -> None:
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
        return Record(
            offset,
            length,
            self.rec_type,
            self.uri,
            h.get("warc-date", ""),
            h.get("warc-record-id", ""),
            h.get("warc-payload-digest", ""),
            h.get("warc-refers-to", ""),
            h.get("warc-refers-to-target-uri", ""),
            h.get("warc-refers-to-date", ""),
            self.http_status,
            problem,
        )

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


def _parse_warc_headers(block: bytes) -> dict[str, str]:
    if not block.startswith(b"WARC/"):
        raise ParseError("no WARC record starts here")
    text = block.decode("utf-8", "replace")
    if "\n " not in text and "\n\t" not in text and ":  " not in text:
        # what every writer seen writes ("Name: value", no folding): one split per line
        try:
            return {
                name.lower(): value.rstrip() for name, value in (line.split(": ", 1) for line in text.split("\r\n")[1:])
            }
        except ValueError:  # a line without ": ": the general loop below
            pass
    headers: dict[str, str] = {}
    last = None
    for line in block.decode("utf-8", "replace").split("\r\n")[1:]:
        if line[:1] in (" ", "\t") and last is not None:
            headers[last] += " " + line.strip()
            continue
        name, sep, value = line.partition(":")
        if sep:
            last = name.strip().lower()
            headers[last] = value.strip()
    return headers


class RecordParser:
    """Push parser over a WARC's decompressed bytes. ``feed(data, member)`` takes the next bytes and
    the file offset of the gzip member they came from; finished records wait in ``done`` as
    ``(record start member, _Pending)`` until their member's end is known."""

    HEAD, BLOCK, TRAILER = 0, 1, 2

    def __init__(self):
        self.state = self.HEAD
        self.head = bytearray()
        self.trailer = b""
        self.current: _Pending | None = None
        self.head_member = 0
        self.pos = 0  # decompressed position (= file position for a plain file)
        # (member, decompressed start, record, decompressed end)
        self.done: list[tuple[int, int, _Pending, int]] = []
        self.head_start = 0

    def reset(self) -> None:
        RecordParser.__init__(self)

    def in_record(self) -> bool:
        return self.state != self.HEAD or bool(self.head)

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
                        self._begin(block)
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
                        self._begin(block)
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
            else:
                need = 4 - len(self.trailer)
                self.trailer += data[i : i + need]
                i += min(need, n - i)
                if len(self.trailer) == 4:
                    if self.trailer != _BLANK:
                        raise ParseError("record does not end where its Content-Length says")
                    assert self.current is not None
                    self.done.append((self.head_member, self.head_start, self.current, self.pos + i))
                    self.current = None
                    self.trailer = b""
                    self.state = self.HEAD
        self.pos += n

    def _begin(self, block: bytes) -> None:
        headers = _parse_warc_headers(block)
        self.current = _Pending(self.head_start, self.head_member, headers)
        self.state = self.BLOCK if self.current.remaining else self.TRAILER

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
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="warcscan-hash") if hasher is not None else None
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


def scan(path: Path, hasher=None) -> Iterator[Record | Damage]:
    """Records and damage of one WARC file, in file order (see the module's docstring)."""
    src = _Source(Path(path), hasher)
    try:
        first = src.read()
        if first[:2] == GZIP_MAGIC[:2]:
            yield from _scan_gzip(src, first)
        else:
            yield from _scan_plain(src, first)
        src.drain()
    finally:
        src.close()


def _scan_plain(src: _Source, data: bytes) -> Iterator[Record | Damage]:
    parser = RecordParser()
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
    if parser.in_record():
        uri, rid, rtype = parser.describe_current()
        start = parser.current.start if parser.current else parser.head_start
        yield Damage(start, src.pos, "the file ends inside a record (truncated)", uri, rid, rtype)


def _plain_done(parser: RecordParser) -> Iterator[Record]:
    done, parser.done = parser.done, []
    for _, start, pending, end in done:
        yield pending.finish(start, end - start - len(_BLANK))  # as warcio and pywb count it: no trailer


def _scan_gzip(src: _Source, pending: bytes) -> Iterator[Record | Damage]:
    """Members one after another; a member that fails is reported and the next one looked for."""
    parser = RecordParser()
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
            chunk = data
            while True:
                out = decoder.decompress(chunk, OUT_SLICE)
                if out:
                    parser.feed(out, member_start)
                chunk = decoder.unconsumed_tail
                if not chunk:
                    break
        except _INFLATE_ERRORS as exc:
            return "damaged", kept_at, b"".join(kept), f"gzip member does not inflate ({_zlib_reason(exc)})"
        except ParseError as exc:
            return "damaged", kept_at, b"".join(kept), str(exc)
        if decoder.eof:
            used = fed - len(decoder.unused_data)
            yield from _records_of_member(parser, member_start, used)
            return "ok", used, decoder.unused_data, ""
        data = src.read()
        if not data:
            return "truncated", kept_at, b"", "the file ends inside a gzip member (truncated)"
        if kept_size >= RESYNC_LIMIT:
            kept, kept_at, kept_size = [], src.pos - len(data), 0
        kept.append(data)
        kept_size += len(data)


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


def _records_of_member(parser: RecordParser, member_start: int, length: int) -> Iterator[Record]:
    done, parser.done = parser.done, []
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


def _feed_member(fd: int, parser: RecordParser, first: bytes, offset: int, pos: int, length: int | None) -> str:
    """Inflate the gzip member at ``offset`` (``first`` already read) into ``parser``: why it cannot be
    read whole, or ""."""
    decoder = _inflater()
    left = None if length is None else length - len(first)
    data = first
    try:
        while True:
            chunk = data
            while chunk:
                out = decoder.decompress(chunk, OUT_SLICE)
                if out:
                    parser.feed(out, offset)
                chunk = decoder.unconsumed_tail
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
            if pos < end:
                return "the file ends inside the record (truncated)"
    finally:
        os.close(fd)
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
    if not parser.done:
        return "the record is incomplete", None
    problem = parser.done[0][2].finish(offset, length).problem
    return (problem, None) if problem else ("", inflated)

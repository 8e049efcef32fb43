"""``replay.recordload``: records read with header blocks taken from the buffer come out exactly as
pywb's own loader (``BlockArcWarcRecordLoader``) reads them, and any record it is not sure of goes
to warcio's code.

Each case is one record, written after a warcinfo record into a file of its own, gzipped member by
member (or not at all), then loaded by offset and length as the warcserver loads it. For each, the
test compares everything a record carries (WARC and HTTP headers, lengths, stream position, the
bytes left to read, or the exception raised) and checks which way it was read.
"""

from __future__ import annotations

import base64
import gzip
import random
from pathlib import Path

import pytest
from pywb.warcserver.resource.blockrecordloader import BlockArcWarcRecordLoader

import replay.recordload as recordload
from index.integrity.recordscan import read_checked_record
from replay.recordload import PayloadRecordLoader, RecordLoader

OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello"
BIG = base64.b64encode(random.Random(7).randbytes(60_000))  # incompressible: past the first buffer


def record(
    block: bytes,
    rec_type: str = "response",
    uri: str = "http://example.com/a",
    warc: bytes = b"WARC/1.0",
    extra: bytes = b"",
    length: int | None = -1,
) -> bytes:
    length = len(block) if length == -1 else length
    head = (
        warc
        + b"\r\nWARC-Type: "
        + rec_type.encode()
        + b"\r\nWARC-Target-URI: "
        + uri.encode()
        + b"\r\nWARC-Date: 2024-01-02T03:04:05Z\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>"
        + b"\r\n"
        + extra
    )
    if length is not None:
        head += b"Content-Length: %d\r\n" % length
    return head + b"\r\n" + block + b"\r\n\r\n"


# name: (record, gzipped, WARC headers read from the buffer, HTTP headers read from the buffer,
#        HTTP headers stepped over by PayloadRecordLoader)
CASES = {
    "plain": (record(OK), True, True, True, True),
    "status line only": (record(b"HTTP/1.1 204 No Content\r\n\r\n"), True, True, True, True),
    "continuation lines": (
        record(
            b"HTTP/1.1 200 OK\r\nX-Long: a\r\n b\r\n\tc\r\nContent-Length: 5\r\n\r\nhello",
            extra=b"WARC-Folded: x\r\n  y\r\n",
        ),
        True,
        True,
        True,
        True,
    ),
    "line without a colon": (record(b"HTTP/1.1 200 OK\r\nno colon here\r\nA: b\r\n\r\nhello"), True, True, True, True),
    "spaces around names and values": (
        record(b"HTTP/1.0 200 OK  \r\nA  \t: b \t \r\nC:d\r\n\r\nhello"),
        True,
        True,
        True,
        True,
    ),
    "CR inside a line": (record(b"HTTP/1.1 200 OK\r\nA: b\rc\r\nD: e\r\r\n\r\nhello"), True, True, True, True),
    "UTF-8 header value": (record(b"HTTP/1.1 200 OK\r\nX-Name: caf\xc3\xa9\r\n\r\nhello"), True, True, False, True),
    "ISO-8859-1 header value": (record(b"HTTP/1.1 200 OK\r\nX-Name: caf\xe9\r\n\r\nhello"), True, True, False, True),
    "LF line ends, CRLF CRLF in the body": (
        record(b"HTTP/1.1 200 OK\nA: b\n\nbody\r\n\r\nmore"),
        True,
        True,
        False,
        False,
    ),
    "LF line ends": (record(b"HTTP/1.1 200 OK\nA: b\n\nhello"), True, True, False, False),
    "a line of spaces ends the headers": (
        record(b"HTTP/1.1 200 OK\r\nA: b\r\n \t\r\nC: d\r\n\r\nhello"),
        True,
        True,
        False,
        False,
    ),
    "a line of a Unicode space": (
        record(b"HTTP/1.1 200 OK\r\nA: b\r\n\xc2\xa0\r\nC: d\r\n\r\nhello"),
        True,
        True,
        False,
        False,
    ),
    "lower-case status line": (record(b"http/1.1 200 OK\r\nA: b\r\n\r\nhello"), True, True, False, False),
    "status line warcio refuses": (record(b"HTTP/2 200\r\nA: b\r\n\r\nhello"), True, True, False, False),
    "headers longer than the record": (record(OK, length=30), True, True, False, False),
    "empty block": (record(b"", length=0), True, True, False, False),
    "no Content-Length": (record(OK, length=None), True, True, False, False),
    "HTTP headers past the first buffer": (
        record(b"HTTP/1.1 200 OK\r\nX-Big: " + BIG + b"\r\n\r\nhello"),
        True,
        True,
        False,
        False,
    ),
    "WARC headers past the first buffer": (record(OK, extra=b"WARC-Big: " + BIG + b"\r\n"), True, False, True, True),
    "lower-case WARC line": (record(OK, warc=b"warc/1.0"), True, False, True, True),
    "WARC/1.1": (record(OK, warc=b"WARC/1.1"), True, True, True, True),
    "URI in angle brackets": (record(OK, uri="<http://example.com/a>"), True, True, True, True),
    "not gzipped": (record(OK), False, False, False, False),
    "revisit with HTTP headers": (
        record(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\n", rec_type="revisit"),
        True,
        True,
        True,
        False,
    ),
    "revisit with an empty block": (record(b"", rec_type="revisit"), True, True, False, False),
    "request": (record(b"GET /a HTTP/1.1\r\nHost: example.com\r\n\r\n", rec_type="request"), True, True, False, False),
    "not an HTTP URI": (record(b"example.com. 300 IN A 10.0.0.1\r\n", uri="dns:example.com"), True, True, False, False),
}


def write(path: Path, member: bytes, gzipped: bool) -> tuple[int, int]:
    """The file: a warcinfo record, then ``member``; its offset and length."""
    info = record(b"software: test\r\n", rec_type="warcinfo", uri="")
    first, second = (gzip.compress(info), gzip.compress(member)) if gzipped else (info, member)
    path.write_bytes(first + second)
    return len(first), len(second)


def checked_member(tmp_path: Path, member: bytes) -> tuple[Path, int, int, bytes, bytes] | None:
    """``member`` written gzipped after a warcinfo record and read back through the replay's check
    (``index.integrity.recordscan.read_checked_record``): its file, offset, length, raw and inflated bytes;
    None when the check turns it down (then nothing is ever parsed from memory)."""
    path = tmp_path / "case.warc.gz"
    offset, length = write(path, member, True)
    reason, raw, inflated = read_checked_record(path, offset, length)
    if reason:
        return None
    assert raw is not None and inflated is not None
    return path, offset, length, raw, inflated


def state(load) -> tuple:
    """Everything a loaded record carries, its stream read to the end; or the exception raised."""
    try:
        r = load()
    except Exception as exc:  # the same failure is the same behaviour
        return ("raised", type(exc).__name__, str(exc))
    h = r.http_headers
    out = (
        r.format,
        r.rec_type,
        r.rec_headers.protocol,
        r.rec_headers.statusline,
        r.rec_headers.headers,
        r.rec_headers.total_len,
        None if h is None else (h.protocol, h.statusline, h.headers, h.total_len),
        r.content_type,
        r.length,
        r.payload_length,
        type(r.raw_stream).__name__,
        r.raw_stream.tell(),
        r.raw_stream.read(),
    )
    r.raw_stream.close()
    return out


def count_fast_paths(monkeypatch) -> dict[str, list[bool]]:
    """From now until the test ends: for each WARC and each HTTP header block, whether it was read
    from the buffer (True) or left to warcio (False); for each HTTP block ``PayloadRecordLoader``
    meets, whether it was stepped over."""
    seen: dict[str, list[bool]] = {"WARC": [], "HTTP": [], "skip": []}
    parse, skip = recordload.parse_buffered_headers, recordload.skip_http_header_block

    def counting_parse(parser, stream):
        headers = parse(parser, stream)
        seen["WARC" if parser.statuslist == BlockArcWarcRecordLoader.WARC_TYPES else "HTTP"].append(headers is not None)
        return headers

    def counting_skip(rec):
        done = skip(rec)
        seen["skip"].append(done)
        return done

    monkeypatch.setattr(recordload, "parse_buffered_headers", counting_parse)
    monkeypatch.setattr(recordload, "skip_http_header_block", counting_skip)
    return seen


@pytest.fixture
def taken(monkeypatch) -> dict[str, list[bool]]:
    return count_fast_paths(monkeypatch)


@pytest.mark.parametrize("name", list(CASES))
def test_a_record_reads_as_pywb_reads_it(tmp_path, taken, name):
    member, gzipped, warc_fast, http_fast, skipped = CASES[name]
    path = str(tmp_path / "case.warc.gz")
    offset, length = write(Path(path), member, gzipped)
    want = state(lambda: BlockArcWarcRecordLoader().load(path, offset, length))

    assert state(lambda: RecordLoader().load(path, offset, length)) == want
    assert any(taken["WARC"]) == warc_fast
    assert any(taken["HTTP"]) == http_fast

    for seen in taken.values():
        seen.clear()
    got = state(lambda: PayloadRecordLoader().load(path, offset, length))
    assert taken["skip"] and all(done == skipped for done in taken["skip"])
    if skipped:  # the same record, its HTTP headers unread
        assert want[6] is not None and got[6] is None
        assert got[:6] + got[7:] == want[:6] + want[7:]
    else:  # not stepped over: loaded again, parsed in full
        assert got == want


def test_the_cases_cover_both_ways():
    """Every branch has records that take it and records that do not."""
    for column in (2, 3, 4):
        assert {case[column] for case in CASES.values()} == {True, False}


@pytest.mark.parametrize("name", [name for name, case in CASES.items() if case[1]])
def test_a_record_inflated_in_memory_reads_as_pywb_reads_it_from_the_file(tmp_path, taken, name):
    """``load_member``: the gzip member read and inflated once (``index.integrity.recordscan.read_checked_record``)
    and parsed from memory gives what pywb's loader reads from the file. (A record the check turns
    down, such as one without a Content-Length, never gets there.)"""
    member, _, _, _, skipped = CASES[name]
    checked = checked_member(tmp_path, member)
    if checked is None:
        return
    path, offset, length, raw, inflated = checked
    want = state(lambda: BlockArcWarcRecordLoader().load(str(path), offset, length))

    assert state(lambda: RecordLoader().load_member(raw, inflated)) == want
    assert taken["WARC"]
    taken["skip"].clear()
    got = state(lambda: PayloadRecordLoader().load_member(raw, inflated))
    # stepped over wherever it is from the file, and also where the file's buffer ends too soon
    assert taken["skip"] == [True] if skipped else len(taken["skip"]) == 1
    if taken["skip"][0]:
        assert want[6] is not None and got[6] is None and got[:6] + got[7:] == want[:6] + want[7:]
    else:
        assert got == want

"""Reading WARC records for replay: warcio's record parser, with header blocks read from the buffer.

warcio reads a record's WARC headers and HTTP headers one line at a time (``BufferedReader.readline``
then ``StatusAndHeadersParser.parse``), ~5 us a line in pure Python. Here a header block that is
already in the decompressed buffer is found with one ``bytes.find`` of the blank line that ends it,
split into lines, and run through the same steps as ``StatusAndHeadersParser.parse``: same headers,
same ``StatusAndHeaders``, the stream left at the same byte. ``PayloadRecordLoader`` goes further for
a record whose HTTP headers nobody reads (a revisit's original, when the revisit has its own): it
steps over them without parsing.

Only what is certain to come out the same is taken this way: a gzipped record, a block entirely in
the buffer (and inside the record), ASCII, with a status line warcio accepts as written and no line
before the end that could read as blank. Anything else goes to warcio's own code, unchanged.
"""

from __future__ import annotations

import re
from functools import cache
from io import BytesIO

from pywb.utils.io import no_except_close
from pywb.warcserver.resource.blockrecordloader import BlockArcWarcRecordLoader
from warcio.bufferedreaders import BufferedReader, DecompressingBufferedReader
from warcio.limitreader import LimitReader
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser

_BLANK_LINE = b"\r\n\r\n"
# A line warcio might take for the blank line that ends a block: one made only of bytes that
# ``str.rstrip`` may remove once the line is decoded (ASCII whitespace and separators, and any
# non-ASCII byte, which could be part of a Unicode space).
_MAYBE_BLANK_LINE = re.compile(rb"\n[\t\x0b\x0c\r\x1c-\x20\x80-\xff]*\n")
# The status lines warcio's HTTP parser accepts (``ArcWarcRecordLoader.HTTP_TYPES``), as written.
_HTTP_STATUS_PREFIXES = (b"HTTP/1.0", b"HTTP/1.1")


@cache
def _status_prefixes(statuslist: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(prefix.encode() for prefix in statuslist)


class InflatedReader(BufferedReader):
    """A record's gzip member inflated in memory (``index.integrity.recordscan.read_checked_record``), read
    as warcio's ``DecompressingBufferedReader`` reads a member it takes in one read: all of it in
    its buffer."""

    buff: BytesIO | None  # None once read to the end, as warcio's readers have it

    def __init__(self, data: bytes):
        super().__init__(BytesIO(b""))
        self.buff = BytesIO(data)  # shares ``data``: getvalue() returns it, no copy
        self.buff_size = self.num_read = len(data)


def _buffered_block(stream, prefixes: tuple[bytes, ...]):
    """``(buffer, data, start, end)``: the header block at ``stream``'s read position is
    ``data[start:end]``, from a status line starting with one of ``prefixes`` to the CRLF CRLF
    ending it, each line but the last non-blank, all in the buffer (and inside the limit, for a
    ``LimitReader``). None if any of that is not so, or the stream is not gzip from warcio's
    ``DecompressingBufferedReader`` (or an ``InflatedReader``)."""
    if type(stream) is LimitReader:
        limit = stream.limit
        reader = stream.stream
    else:
        limit = None
        reader = stream
    if type(reader) is InflatedReader:
        pass
    elif type(reader) is not DecompressingBufferedReader or reader.decompressor is None:
        return None
    if reader.buff is None:
        # What the first readline() does: read and decompress the first block.
        reader._fillbuff()
        if reader.buff is None or reader.decompressor is None:  # nothing there, or not gzip
            return None
    buff = reader.buff
    start = buff.tell()
    data = buff.getvalue()  # the buffer's own bytes object, not a copy
    stop = len(data) if limit is None else min(len(data), start + limit)
    end = data.find(_BLANK_LINE, start, stop)
    if end < 0 or not data.startswith(prefixes, start) or _MAYBE_BLANK_LINE.search(data, start, end + 2):
        return None
    return buff, data, start, end + 4


def _consume(stream, buff, size: int) -> None:
    """Moves ``stream`` ``size`` bytes on, all of them in ``buff``: what readline() would have done."""
    buff.seek(buff.tell() + size)
    if type(stream) is LimitReader:
        stream.limit -= size


def parse_buffered_headers(parser: StatusAndHeadersParser, stream) -> StatusAndHeaders | None:
    """``parser.parse(stream)`` for a header block found whole in the buffer; None (the stream
    untouched) for any other, which ``parser.parse`` then reads as before."""
    if not parser.verify:
        return None
    found = _buffered_block(stream, _status_prefixes(tuple(parser.statuslist)))
    if found is None:
        return None
    buff, data, start, end = found
    block = data[start:end]
    if not block.isascii():  # warcio decodes line by line, UTF-8 or else ISO-8859-1
        return None
    text = block.decode("ascii")
    # What readline() returns, less the newline: the status line, the header lines, the blank
    # line ending the block (no line before it can read as blank), and "" after it.
    lines = text.split("\n")
    # From here on, StatusAndHeadersParser.parse over ``lines``.
    protocol_status = parser.split_prefix(lines[0].rstrip(), parser.statuslist)
    if not protocol_status:
        return None
    if b"\n " in block or b"\n\t" in block:
        headers = _folded_headers(lines)
    else:  # no continuation line: each line is a header on its own
        headers = [
            (parts[0].rstrip(" \t"), parts[1].lstrip())
            for parts in (line.rstrip().split(":", 1) for line in lines[1:-2])
            if len(parts) == 2
        ]
    statusline = protocol_status[1].strip() if len(protocol_status) > 1 else ""
    _consume(stream, buff, end - start)
    return StatusAndHeaders(statusline=statusline, headers=headers, protocol=protocol_status[0], total_len=len(text))


def _folded_headers(lines: list[str]) -> list[tuple[str, str]]:
    """The header loop of ``StatusAndHeadersParser.parse``, over the lines after the status line:
    continuation lines (starting with a space or a tab) are appended to the value before them."""
    headers = []
    i = 1
    line = lines[i].rstrip()
    while line:
        result = line.split(":", 1)
        if len(result) == 2:
            name = result[0].rstrip(" \t")
            value = result[1].lstrip()
        else:
            name = result[0]
            value = None
        i += 1
        next_line = lines[i].rstrip()
        while next_line and next_line.startswith((" ", "\t")):
            if value is not None:
                value += next_line
            i += 1
            next_line = lines[i].rstrip()
        if value is not None:
            headers.append((name, value))
        line = next_line
    return headers


def skip_http_header_block(record: ArcWarcRecord) -> bool:
    """Moves the stream of a response record loaded with ``no_record_parse`` past its HTTP header
    block, to where warcio's parse would leave it, and sets ``payload_length`` as warcio would;
    ``http_headers`` stays None. False, the stream untouched, unless it is a WARC response of an
    http(s) URI with a Content-Length, an ``HTTP/1.0``/``HTTP/1.1`` status line and its header block
    whole in the buffer."""
    stream = record.raw_stream
    if type(stream) is not LimitReader or record.rec_type != "response" or record.format != "warc":
        return False
    uri = record.rec_headers.get_header("WARC-Target-URI")
    if not uri or not uri.startswith(BlockArcWarcRecordLoader.HTTP_SCHEMES) or stream.tell() != 0:
        return False
    if not record.length:  # warcio does not parse an empty block
        return False
    found = _buffered_block(stream, _HTTP_STATUS_PREFIXES)
    if found is None:
        return False
    buff, _, start, end = found
    _consume(stream, buff, end - start)
    record.payload_length = record.length - (end - start)
    return True


class RecordLoader(BlockArcWarcRecordLoader):
    """pywb's record loader, header blocks read from the buffer when they can be
    (``parse_buffered_headers``). ``load_member`` parses a record already read into memory."""

    def load_member(self, raw: bytes, inflated: bytes, no_record_parse: bool = False) -> ArcWarcRecord:
        """What ``load`` returns for the record whose gzip member is ``raw`` (``inflated`` once
        inflated), read from memory: the same reader over the same bytes. A member warcio's first
        read takes whole (``block_size`` bytes) it inflates whole into its buffer, so the inflated
        bytes are that buffer; a longer one is inflated again block by block as from the file, so
        that a header line across a buffer's end reads as warcio reads it (cut short)."""
        if len(raw) <= self.block_size:
            stream = InflatedReader(inflated)
        else:
            stream = DecompressingBufferedReader(stream=BytesIO(raw), block_size=self.block_size)
        return self.parse_record_stream(stream, no_record_parse=no_record_parse)

    def _detect_type_load_headers(self, stream, statusline=None, known_format=None):
        if statusline is None and known_format is None:
            rec_headers = parse_buffered_headers(self.warc_parser, stream)
            if rec_headers is not None:
                return "warc", rec_headers
        return super()._detect_type_load_headers(stream, statusline, known_format)

    def load_http_headers(self, rec_type, uri, stream, length):
        # warcio's conditions for parsing a response (or revisit) block, in its order
        if length and rec_type in ("response", "revisit") and uri and uri.startswith(self.HTTP_SCHEMES):
            http_headers = parse_buffered_headers(self.http_parser, stream)
            if http_headers is not None:
                return http_headers
        return super().load_http_headers(rec_type, uri, stream, length)


class PayloadRecordLoader(RecordLoader):
    """Loads a record for its payload: WARC headers parsed, HTTP headers stepped over unparsed
    (``http_headers`` None, ``skip_http_header_block``). A record it cannot step over is loaded
    again and parsed in full."""

    def load(self, url, offset, length, no_record_parse=False):
        record = super().load(url, offset, length, no_record_parse=True)
        if no_record_parse or skip_http_header_block(record):
            return record
        no_except_close(record.raw_stream)
        return super().load(url, offset, length, no_record_parse=False)

    def load_member(self, raw: bytes, inflated: bytes, no_record_parse: bool = False) -> ArcWarcRecord:
        record = super().load_member(raw, inflated, no_record_parse=True)
        if no_record_parse or skip_http_header_block(record):
            return record
        return super().load_member(raw, inflated, no_record_parse=False)

"""The collection's CDXJ index, in exactly the lines pywb's own indexer writes (same digest encoding,
same SURT keys, same POST handling as ``wb-manager``): files read back go through that indexer
(``index_warc``); records being written get the same line from ``RecordIndexer``.

As each WARC is sealed its lines are merged into the sorted ``indexes/index.cdxj`` (streamed, then
atomically replaced), so ``wayback`` and Strata's replay see them at once.
"""

from __future__ import annotations

import contextlib
import heapq
import io
import json
import os
import re
import secrets
import typing
from collections.abc import Iterable, Iterator
from pathlib import Path

from warcio.timeutils import iso_date_to_timestamp

from index.integrity.recordscan import open_prefix
from index.surtkey import surt_key

# The options wb-manager uses for `wb-manager add` / `reindex`.
PYWB_INDEX_OPTIONS = dict(append_post=True, cdxj=True, sort=True)


def index_warc(path: Path, filename: str, limit: int | None = None) -> list[bytes]:
    """Sorted CDXJ lines for one WARC (or ARC) file, as pywb's indexer writes them; with ``limit``,
    for its first ``limit`` bytes only (the whole records before a damage, see ``index.integrity.recordscan``)."""
    from pywb.indexer.cdxindexer import write_cdx_index  # pywb's indexer does not patch gevent

    out = io.BytesIO()
    with open_prefix(path, limit) as infile:
        write_cdx_index(_Unclosable(out), infile, filename, **PYWB_INDEX_OPTIONS)
    return [line + b"\n" for line in out.getvalue().splitlines() if line.strip()]


class NeedsFileIndex(Exception):
    """A record whose line only pywb's file indexer can be trusted to make (the file is read back)."""


class RecordIndexer:
    """CDXJ lines for records as they are written, without reading the file back.

    The line is built as pywb's record parser and CDXJ writer build it from the record read back
    (``index_warc``): the same fields in the same order, the same SURT key (``index.surtkey``, that
    of the ``surt`` package pywb's canonicalizer calls), the same JSON, so the lines are the same
    bytes; the test suite compares them with pywb's file indexer. Built here, not through pywb's
    parser, because that parser costs 60 us a record and importing it a fifth of a second a run
    (pyamf, requests, werkzeug). What reading back could change is refused with ``NeedsFileIndex``, and that file is
    then indexed from disk: a request other than GET (pywb appends its body to the key), and header
    values or URLs that are not ASCII (warcio decodes them on reading).
    """

    def line(self, record, offset: int, length: int, filename: str) -> bytes | None:
        """The record's CDXJ line, or None for a record pywb does not index (warcinfo, request)."""
        url = record.rec_headers.get_header("WARC-Target-URI") or ""
        if record.rec_type == "request":
            if record.http_headers is None or record.http_headers.protocol != "GET":
                raise NeedsFileIndex(f"{record.http_headers.protocol if record.http_headers else '?'} request")
            return None
        http = record.http_headers
        if record.rec_type == "metadata" and url.isascii() and http is None:
            fields = {
                "metadata": None,
                "url": url,
                "mime": pywb_mime(record.rec_headers.get_header("Content-Type"), "unk"),
            }
            return self._line(record, fields, offset, length, filename)
        if record.rec_type == "resource" and url.isascii() and http is None:
            # a browser-captured page's screenshot, text or request list (strata.pageuris)
            fields = {"url": url, "mime": pywb_mime(record.rec_headers.get_header("Content-Type"), "unk")}
            if record.rec_headers.get_header("WARC-Payload-Digest") in (None, "", "-"):
                raise NeedsFileIndex("no payload digest")
            return self._line(record, fields, offset, length, filename)
        if record.rec_type not in ("response", "revisit") or not url.isascii():
            raise NeedsFileIndex(record.rec_type)
        if http is not None and not all(v.isascii() for _, v in http.headers):
            raise NeedsFileIndex("non-ASCII header")
        if http is not None and http.get_statuscode() == "-":
            return None
        if record.rec_type == "revisit":
            fields = {"url": url, "mime": "warc/revisit", "status": "-"}
        elif http is None:
            raise NeedsFileIndex("response without HTTP headers")
        else:
            fields = {
                "url": url,
                "mime": pywb_mime(http.get_header("Content-Type"), "unk"),
                "mime-detected": record.rec_headers.get_header("WARC-Identified-Payload-Type"),
                "status": _status(http),
            }
        if record.rec_type != "revisit" and record.rec_headers.get_header("WARC-Payload-Digest") in (None, "", "-"):
            raise NeedsFileIndex("no payload digest")
        return self._line(record, fields, offset, length, filename)

    def _line(self, record, fields: dict, offset: int, length: int, filename: str) -> bytes:
        """``urlkey timestamp {json}`` with pywb's field order: its entry starts with ``urlkey`` and
        ``metadata`` (so a response's WARC-Json-Metadata comes first), and empty or ``-`` values are
        left out."""
        headers = record.rec_headers
        url = fields["url"]
        try:
            urlkey = surt_key(url)
        except Exception:  # as pywb's canonicalize: a URN is its own key
            if not url.startswith("urn:"):
                raise NeedsFileIndex("URL surt cannot canonicalize") from None
            urlkey = url
        digest = headers.get_header("WARC-Payload-Digest") or "-"
        out = {"metadata": headers.get_header("WARC-Json-Metadata")} | fields
        out["digest"] = digest[len("sha1:") :] if digest.startswith("sha1:") else digest
        out["length"], out["offset"] = str(length), str(offset)
        out = {k: v for k, v in out.items() if v and v != "-"}
        out["filename"] = filename
        timestamp = iso_date_to_timestamp(headers.get_header("WARC-Date"))
        return f"{urlkey} {timestamp} {json.dumps(out)}\n".encode()


_MIME_END = re.compile("[; ]")


def pywb_mime(content_type: str | None, default: str) -> str:
    """pywb's ``extract_mime``: the type before any parameter; ``default`` without one."""
    return _MIME_END.split(content_type, 1)[0] if content_type else default


def _status(http) -> str:
    """pywb's ``extract_status``: the code of the status line; ``-`` for none, or a 204 'Error'."""
    code = http.get_statuscode()
    if not code or (code == "204" and "Error" in http.statusline):
        return "-"
    return code


class _Unclosable(io.BufferedIOBase):
    """pywb's writer closes its output; keep the BytesIO readable."""

    def __init__(self, inner: io.BytesIO):
        self.inner = inner

    def write(self, data):  # type: ignore[override]
        return self.inner.write(data)

    def close(self) -> None:
        pass


TEMP_PREFIX = ".index."  # temp files beside the index: ``.index.<random>.tmp`` (recovery removes leftovers)
TEMP_SUFFIX = ".tmp"


def _temp_beside(index_path: Path) -> tuple[int, str]:
    """A new temp file next to ``index_path``, open for writing. Created with mode 0666 less the
    umask, as ``open()`` creates files (``tempfile.mkstemp`` makes them 0600): once renamed into
    place it is as readable as the WARCs are, so a pywb running as another user can read it."""
    while True:
        tmp = str(index_path.parent / f"{TEMP_PREFIX}{secrets.token_hex(6)}{TEMP_SUFFIX}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue


@contextlib.contextmanager
def _written_beside(index_path: Path) -> Iterator[tuple[typing.BinaryIO, str]]:
    """A temp file beside ``index_path`` to write in, and its path: when the block ends it is
    flushed and synced, and if anything failed it is removed."""
    index_path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temp_beside(index_path)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out, tmp
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _replace_with(index_path: Path, tmp: str) -> None:
    try:
        os.replace(tmp, index_path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def merge_lines(index_path: Path, new_lines: Iterable[bytes]) -> None:
    """Merge sorted ``new_lines`` into the sorted index file, dropping exact duplicates (so that
    re-indexing a file after recovery is idempotent). Crash-safe: temp file, fsync, rename."""
    new_lines = sorted(new_lines)
    with _written_beside(index_path) as (out, tmp):
        existing = open(index_path, "rb") if index_path.exists() else io.BytesIO()
        with existing:
            last = None
            for line in heapq.merge(existing, iter(new_lines)):
                if line != last and line.strip():
                    out.write(line)
                    last = line
    _replace_with(index_path, tmp)


def remove_file_lines(index_path: Path, filename: str) -> None:
    """Drop every line pointing into ``filename`` (before re-indexing a repaired file)."""
    if not index_path.exists():
        return
    marker = b'"filename": ' + json.dumps(filename).encode()
    with _written_beside(index_path) as (out, tmp), open(index_path, "rb") as src:
        for line in src:
            if marker not in line:
                out.write(line)
    _replace_with(index_path, tmp)


def write_temp(index_path: Path, sorted_lines: Iterable[bytes]) -> str:
    """``sorted_lines`` (sorted, without duplicates) written and synced to a temp file beside
    ``index_path``, which the caller moves into place (``os.replace``) or removes: its path."""
    with _written_beside(index_path) as (out, tmp):
        for line in sorted_lines:
            out.write(line)
    return tmp


def write_index(index_path: Path, lines: Iterable[bytes]) -> None:
    """Replace the whole index (rebuild)."""
    if index_path.exists():
        index_path.unlink()
    merge_lines(index_path, lines)


def parse_line(line: bytes | str) -> dict:
    """``urlkey timestamp {json}`` -> dict with ``urlkey`` and ``timestamp`` added."""
    if isinstance(line, bytes):
        line = line.decode("utf-8")
    urlkey, timestamp, blob = line.rstrip("\n").split(" ", 2)
    fields = json.loads(blob)
    fields["urlkey"] = urlkey
    fields["timestamp"] = timestamp
    return fields


def iter_index(index_path: Path) -> Iterator[dict]:
    if not index_path.exists():
        return
    with open(index_path, "rb") as fh:
        for line in fh:
            if line.strip():
                yield parse_line(line)

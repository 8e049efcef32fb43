"""What a rebuild needs of one WARC or ARC file, from one read of it: its CDXJ lines, its run, and
one ``Fact`` per capture record.

A WARC file is read by the record scanner ``strata verify`` and replay check records with, up to
its first damage (``index.integrity.recordscan.WholePrefix``), which keeps, for each record, its WARC
headers, its HTTP header block and the length of its payload. From those come, without reading the
file again:

- the file's damage: the first record that does not read back whole or fails a digest; the file is
  used up to it (``good_end``), as before;
- its run, from its first ``warcinfo`` (``run-id``, ``job``, ``mode``, ``started``); the first
  ``Referer`` of each URL, from its request records;
- a ``Fact`` for every capture record: a ``response``, ``revisit`` or ``resource`` of an http(s)
  URI (what replay serves), and every Strata run report (``urn:strata:run:``);
- its CDXJ lines, built as pywb's indexer writes them (``index.cdxj.RecordIndexer``, the same bytes)
  for the records Strata and most tools write; any record that builder cannot vouch for (a POST, a
  header that is not ASCII or folded, a record type it does not know, WARC/0.17...) has the whole
  file indexed by pywb's own indexer instead; if that indexer cannot read the file, the first record
  it cannot read is the file's damage.

An ARC file is read the old way: its whole prefix as warcio reads it (``recordscan.scan_prefix``),
warcio, and pywb's indexer.
"""

from __future__ import annotations

import dataclasses
import io
import re
import uuid
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser

from index.capture import runhistory
from index.cdx import cdxj
from index.integrity import recordscan
from index.integrity.recordscan import Damage, Record

_HTTP_PARSER = StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1"], verify=False)  # as warcio's reader
CAPTURE_TYPES = ("response", "revisit", "resource")
_NON_DIGITS = re.compile(r"\D")


@dataclasses.dataclass(slots=True)
class Fact:
    """One capture record (or a run report) as the rebuild derives a capture from it."""

    date_key: str  # sorts in time order whatever the precision (``date_key``)
    offset: int
    length: int
    rec_type: str
    url: str
    warc_date: str
    record_id: str
    digest: str | None = None
    profile: str | None = None
    refers_to_uri: str | None = None
    refers_to_date: str | None = None
    refers_to: str | None = None
    status: int | None = None
    etag: str | None = None
    last_modified: str | None = None
    location: str | None = None
    mime: str = ""
    payload_length: int | None = None  # None for a revisit (its original's)
    truncated: bool = False
    report: bool = False  # a Strata run report: its run id is ``url``'s tail


@dataclasses.dataclass
class FileFacts:
    name: str
    size: int
    arc: bool = False
    run_id: str | None = None
    job: str | None = None
    mode: str | None = None
    started: str | None = None
    strata: bool = False  # its warcinfo names a Strata run
    facts: list[Fact] = dataclasses.field(default_factory=list)
    referers: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)  # url -> (date key, referer)
    lines: list[bytes] = dataclasses.field(default_factory=list)
    damage: Damage | None = None
    good_end: int | None = None  # None: the whole file
    records: int = 0  # whole records before any damage
    versions: set[str] = dataclasses.field(default_factory=set)  # "WARC/1.1", "ARC/1.0", ...
    notes: list[str] = dataclasses.field(default_factory=list)  # the first deviations every reader tolerates

    @property
    def readable(self) -> bool:
        return self.records > 0


def date_key(warc_date: str) -> str:
    """A WARC-Date as a string that sorts in time order whatever its precision (``...00Z`` and
    ``...00.5Z`` do not sort as strings): its digits, the fraction last."""
    return _NON_DIGITS.sub("", warc_date)


def warcinfo_fields(block: bytes) -> dict[str, str]:
    fields = {}
    for line in block.decode("utf-8", "replace").splitlines():
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip()] = value.strip()
    return fields


def is_web(url: str | None) -> bool:
    """http(s) captures only, as pywb's indexer: not Heritrix's dns: records, not ARC file headers."""
    return url is not None and url.split(":", 1)[0].lower() in ("http", "https")


def read_file(path: Path, name: str, hasher=None) -> FileFacts:
    """Everything the rebuild needs of one file (see the module's docstring); with ``hasher``, the
    bytes read are hashed as they are read (an ARC file's in a read of their own)."""
    out = FileFacts(name, path.stat().st_size)
    if recordscan.file_format(path) == "arc":
        out.arc = True
        _read_with_warcio(path, out)
        if hasher is not None:
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    hasher.update(chunk)
        return out
    indexer: _FactLines | None = _FactLines(name)
    starts: list[int] = []  # where each whole record begins (to find one pywb's indexer cannot read)
    prefix = recordscan.WholePrefix(path, name, hasher, facts=True)
    for item in prefix:
        out.records += 1
        starts.append(item.offset)
        out.versions.add(item.version)
        if item.note and len(out.notes) < 3:
            out.notes.append(f"@{item.offset}: {item.note}")
        http = _http(item.http_head) if item.http_head else None  # parsed once, for the fact and the line
        _take(out, item, http)
        if indexer is not None:
            try:
                indexer.add(item, http)
            except cdxj.NeedsFileIndex:
                indexer = None  # pywb's indexer reads the file below
    out.damage = prefix.scan.damage
    out.good_end = None if out.damage is None else out.damage.offset
    if out.records == 0:
        return out
    if indexer is not None:
        out.lines = sorted(indexer.lines)
    else:
        _pywb_lines(path, out, starts)
    return out


def _pywb_lines(path: Path, out: FileFacts, starts: list[int]) -> None:
    """The file's lines from pywb's indexer; when it cannot read the file (folded header lines in
    WARC/0.17, dates it cannot parse), the first record it cannot read is the file's damage: found
    by indexing ever longer prefixes of whole records (a few runs, in a file that is refused anyway)."""
    try:
        out.lines = cdxj.index_warc(path, out.name, out.good_end)
        return
    except Exception as exc:  # noqa: BLE001 (whatever pywb raises on a third-party file)
        failure = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    ends = [*starts[1:], out.good_end if out.good_end is not None else out.size]
    lo, hi = 0, len(starts) - 1  # the first record whose prefix fails is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            cdxj.index_warc(path, out.name, ends[mid])
        except Exception:  # noqa: BLE001 (as above)
            hi = mid
        else:
            lo = mid + 1
    offset = starts[lo]
    reason = f"pywb's indexer (which replay uses) cannot read this record: {failure}"
    reason = reason.encode("ascii", "backslashreplace").decode("ascii")[:200]
    out.damage = Damage(offset, out.size, reason, filename=out.name)
    out.good_end = offset
    out.records = lo
    out.facts = [f for f in out.facts if f.offset < offset]
    out.lines = cdxj.index_warc(path, out.name, offset) if offset else []


def _take(out: FileFacts, r: Record, http: StatusAndHeaders | None) -> None:
    headers = r.headers or {}
    if r.rec_type == "warcinfo":
        if out.run_id is None:
            fields = warcinfo_fields(r.http_head)
            out.run_id = fields.get("run-id") or out.name
            out.job = fields.get("job") or None
            out.mode = fields.get("mode")
            out.started = fields.get("started")
            out.strata = bool(fields.get("run-id"))
        return
    if r.rec_type == "request":
        if is_web(r.uri):
            value = http.get_header("Referer") if http is not None else None
            key = date_key(r.date)
            if value and (r.uri not in out.referers or key < out.referers[r.uri][0]):
                out.referers[r.uri] = (key, value)
        return
    if r.rec_type == "metadata" and r.uri.startswith(runhistory.RUN_URI_PREFIX):
        out.facts.append(
            Fact(date_key(r.date), r.offset, r.length, r.rec_type, r.uri, r.date, r.record_id, report=True)
        )
        return
    if r.rec_type not in CAPTURE_TYPES or not is_web(r.uri):
        return
    code = http.get_statuscode() if http is not None else ""
    status = int(code) if code and code.isdigit() and len(code) == 3 else None
    if r.rec_type == "resource":
        mime = headers.get("content-type", "")
    else:
        mime = (http.get_header("Content-Type") or "") if http is not None else ""
    digest = r.indexed_digest or None  # as pywb's indexer gives it
    out.facts.append(
        Fact(
            date_key(r.date),
            r.offset,
            r.length,
            r.rec_type,
            r.uri,
            r.date,
            r.record_id,
            digest=digest,
            profile=headers.get("warc-profile") if r.rec_type == "revisit" else None,
            refers_to_uri=r.refers_to_uri or None,
            refers_to_date=r.refers_to_date or None,
            refers_to=r.refers_to or None,
            status=status,
            etag=http.get_header("ETag") if http is not None else None,
            last_modified=http.get_header("Last-Modified") if http is not None else None,
            location=http.get_header("Location") if http is not None else None,
            mime=mime.split(";")[0].strip().lower(),
            payload_length=None if r.rec_type == "revisit" else r.payload_length,
            truncated=bool(headers.get("warc-truncated")) and r.rec_type != "revisit",
        )
    )


def _http(head: bytes) -> StatusAndHeaders | None:
    """An HTTP header block as warcio parses it (no status check, ISO-8859-1 for what is not UTF-8)."""
    try:
        return _HTTP_PARSER.parse(io.BytesIO(head))
    except (EOFError, ValueError):
        return None


class _RecordView:
    """A ``Record`` read with facts, seen as the warcio record ``index.cdxj.RecordIndexer`` reads."""

    __slots__ = ("rec_type", "rec_headers", "http_headers")

    def __init__(self, r: Record, http: StatusAndHeaders | None):
        self.rec_type = r.rec_type
        self.rec_headers = _Headers(r)
        self.http_headers = http


class _Headers:
    __slots__ = ("_headers", "_uri", "_sha1")

    def __init__(self, r: Record):
        self._headers = r.headers or {}
        self._uri = r.uri
        self._sha1 = r.payload_sha1

    def get_header(self, name: str, default=None):
        if name == "WARC-Target-URI":
            return self._uri
        if name == "WARC-Payload-Digest":  # none written: the SHA-1 pywb's indexer computes instead
            return self._headers.get("warc-payload-digest") or self._sha1 or default
        return self._headers.get(name.lower(), default)


class _FactLines:
    """A file's CDXJ lines from its records' facts, or ``NeedsFileIndex`` (see the module's docstring)."""

    def __init__(self, name: str):
        self.name = name
        self.lines: list[bytes] = []
        self.indexer = cdxj.RecordIndexer()

    def add(self, r: Record, http: StatusAndHeaders | None) -> None:
        headers = r.headers or {}
        if not r.plain_headers or r.version not in ("WARC/1.0", "WARC/1.1"):
            raise cdxj.NeedsFileIndex("WARC headers that are not ASCII, or folded, or of another version")
        kind = r.rec_type
        if kind in ("warcinfo", "metadata") and headers.get("content-type") == "application/warc-fields":
            return  # pywb leaves these out
        if kind == "request":
            if not is_web(r.uri) or not r.http_head.startswith(b"GET "):
                raise cdxj.NeedsFileIndex("a request other than a GET")
            return
        if kind == "metadata" and not r.uri.startswith(runhistory.RUN_URI_PREFIX):
            raise cdxj.NeedsFileIndex("metadata")
        if kind == "resource" and is_web(r.uri):
            # pywb reads a resource with the HTTP headers it makes up: its type is the record's
            view = _RecordView(r, None)
            mime = cdxj.pywb_mime(headers.get("content-type"), "unk")
            fields = {"url": r.uri, "mime": mime, "mime-detected": headers.get("warc-identified-payload-type")}
            self.lines.append(self.indexer._line(view, fields, r.offset, r.length, self.name))
            return
        if kind not in ("response", "revisit", "metadata") or (kind != "metadata" and not is_web(r.uri)):
            raise cdxj.NeedsFileIndex(kind)
        if kind != "metadata" and (not r.http_head or not r.http_head.isascii()):
            raise cdxj.NeedsFileIndex("no HTTP headers, or not ASCII")
        line = self.indexer.line(_RecordView(r, http), r.offset, r.length, self.name)
        if line is not None:
            self.lines.append(line)


def _read_with_warcio(path: Path, out: FileFacts) -> None:
    """An ARC file: its whole prefix as warcio reads it (``index.integrity.recordscan.scan_prefix``),
    read with warcio up to its damage, indexed by pywb's indexer."""
    checked = recordscan.scan_prefix(path, out.name)
    out.damage = checked.damage
    out.good_end = None if checked.whole else checked.good_end
    out.records, out.versions = checked.records, checked.versions
    if checked.records == 0:
        return
    with recordscan.open_prefix(path, out.good_end) as fh:
        iterator = ArchiveIterator(fh, arc2warc=True)  # an ARC record reads as a WARC response
        for record in iterator:
            headers = record.rec_headers
            url = headers.get_header("WARC-Target-URI")
            if record.rec_type == "warcinfo" and out.run_id is None:
                fields = warcinfo_fields(record.content_stream().read())
                out.run_id = fields.get("run-id") or out.name
                out.job, out.mode, out.started = fields.get("job") or None, fields.get("mode"), fields.get("started")
                out.strata = bool(fields.get("run-id"))
                continue
            if record.rec_type not in ("response", "resource") or not is_web(url):
                continue
            length = recordscan.read_payload(record)  # an ARC record's digest too
            iterator.read_to_end(record)
            http = record.http_headers
            code = http.get_statuscode() if http else ""
            out.facts.append(
                Fact(
                    date_key(headers.get_header("WARC-Date") or ""),
                    iterator.get_record_offset(),
                    iterator.get_record_length(),
                    record.rec_type,
                    url,
                    headers.get_header("WARC-Date"),
                    arc_record_id(out.name, iterator.get_record_offset()),
                    digest=headers.get_header("WARC-Payload-Digest"),
                    status=int(code) if code and code.isdigit() and len(code) == 3 else None,
                    location=http.get_header("Location") if http else None,
                    mime=((http.get_header("Content-Type") or "") if http else "").split(";")[0].strip().lower(),
                    payload_length=length,
                )
            )
    out.lines = cdxj.index_warc(path, out.name, out.good_end)


def arc_record_id(filename: str, offset: int) -> str:
    """ARC records have no record id; warcio invents a random one. This one is the same at every
    rebuild: a name-based UUID of the file and the record's offset."""
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'strata-arc:{filename}#{offset}')}>"

"""``export_wacz``: a WACZ 1.1.1 package of part of a collection, self-contained.

The records chosen (by capture date, URL prefix and run, each passed through ``index.access.exposure``)
are copied byte for byte into one new WARC, ``archive/data.warc.gz``, after a ``warcinfo`` record
saying where they come from. Every revisit brings its original (``index.export.wacz.records``): the
record its ``WARC-Refers-To`` names, found as pywb's replay finds it, copied too if it was not
chosen, so that pywb, ReplayWeb.page or any reader resolves each revisit inside the package. A
revisit whose original the collection does not hold (or the exposure filter hides) is left out and
counted. Records whose digests fail (``index.integrity.recordscan.check_record_at``) are left out and counted.

The package, as the WACZ 1.1.1 specification lays it out:

    archive/data.warc.gz          the records, each its own gzip member (stored, not deflated)
    indexes/index.cdx.gz          their CDXJ lines, sorted, in gzip blocks of ``BLOCK_LINES`` (ZipNum)
    indexes/index.idx             the first key of each block and where it lies
    pages/pages.jsonl             every HTML page captured (2xx, revisits of one included), one line
                                  each (a URL at a timestamp once), with its title and main text as
                                  full-text search holds them: for a page a browser captured, its
                                  rendered text and title (its ``urn:text:`` record at the page's
                                  timestamp, when the package holds it), not its HTML's
    datapackage.json              every file above with its size and SHA-256
    datapackage-digest.json       the SHA-256 of datapackage.json, signed when a key is given

Memory stays bounded: the index lines are sorted on disk (``index.cdx.extsort``), records are
copied one at a time, and ZIP entries are written as streams (ZIP64 when they pass 4 GiB). The
package is written beside the destination as ``<out>.part`` and renamed into place when complete.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urljoin

from warcio.warcwriter import WARCWriter

from index.access.exposure import capture_filter, show_all
from index.cdx.extsort import ExternalSort
from index.collection import Collection
from index.collection_meta import read_metadata
from index.export.wacz.records import Located, OriginalFinder, RecordReader, iter_located
from index.export.wacz.signing import Signer
from index.fulltext.pagetext import PageTexts
from index.fulltext.params import parse_when
from index.integrity.recordscan import check_record_at
from index.storage.state import open_readonly, run_files, runs
from strata.errors import ConfigError
from strata.pageuris import TEXT, parse_page_uri

__all__ = ["Selection", "export_wacz"]

WACZ_VERSION = "1.1.1"
WARC_NAME = "data.warc.gz"
BLOCK_LINES = 3000  # CDXJ lines per gzip block of index.cdx.gz (py-wacz's default)
HTML = ("text/html", "application/xhtml+xml")
COPY_CHUNK = 1 << 20


@dataclasses.dataclass(frozen=True)
class Selection:
    date_from: str | None = None  # as the user gave them: 2024, 2024-03-05, ISO 8601, 14 digits
    date_to: str | None = None
    url_prefix: str | None = None
    run: str | None = None
    level: str = "public"  # whose view of the collection (index.access.rules): public unless told otherwise


class _Hashing(io.RawIOBase):
    """A write-only stream that counts and hashes what goes through it into ``inner``."""

    def __init__(self, inner):
        self.inner = inner
        self.sha256 = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        self.inner.write(data)
        self.sha256.update(data)
        self.size += len(data)
        return len(data)


class _Package:
    """The open ZIP and the datapackage resources written into it so far."""

    def __init__(self, path: Path, created: datetime, zip64: bool = False):
        self.zip = zipfile.ZipFile(path, "w", allowZip64=True)
        self.zip64 = zip64
        self.date_time = created.timetuple()[:6]
        self.resources: list[dict] = []

    def entry(self, name: str, stored: bool):
        info = zipfile.ZipInfo(name, date_time=self.date_time)
        info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
        return info

    def stream(self, name: str, stored: bool = True, size: int | None = None) -> _Entry:
        """An entry written as a stream. Its local header has ZIP64 fields only when it may pass
        2 GiB (``size`` known and larger, or unknown in a package that needs them): ReplayWeb.page
        reads an entry's data where the central directory's lengths say, and Python's ZIP writer
        leaves ZIP64 fields out of the central directory of a small entry, so a small entry with
        them in its local header cannot be read there."""
        zip64 = self.zip64 if size is None else size >= zipfile.ZIP64_LIMIT
        return _Entry(self, name, self.zip.open(self.entry(name, stored), "w", force_zip64=zip64))

    def add_bytes(self, name: str, data: bytes, stored: bool = False, listed: bool = True) -> None:
        self.zip.writestr(self.entry(name, stored), data)
        if listed:
            self.resources.append(_resource(name, hashlib.sha256(data).hexdigest(), len(data)))


class _Entry:
    def __init__(self, package: _Package, name: str, raw):
        self.package, self.name, self.raw = package, name, raw
        self.out = _Hashing(raw)

    def __enter__(self) -> _Hashing:
        return self.out

    def __exit__(self, *exc) -> None:
        self.raw.close()
        self.package.resources.append(_resource(self.name, self.out.sha256.hexdigest(), self.out.size))


def _resource(path: str, sha256: str, size: int) -> dict:
    return {"name": os.path.basename(path).lower(), "path": path, "hash": "sha256:" + sha256, "bytes": size}


class _Figures(dict):
    KEYS = (
        "records",
        "responses",
        "revisits",
        "originals_added",
        "refers_to_unresolved",
        "revisits_without_original",
        "damaged_skipped",
        "arc_skipped",
        "withheld",
        "pages",
        "bytes_copied",
    )

    def __init__(self):
        super().__init__({k: 0 for k in self.KEYS})


def _check_selection(coll: Collection, sel: Selection) -> tuple[str | None, str | None, set[str] | None]:
    lo, hi = parse_when(sel.date_from), parse_when(sel.date_to, end=True)
    if lo and hi and lo > hi:
        raise ConfigError("--from is after --to")
    files = None
    if sel.run:
        conn = open_readonly(coll.db_path)
        if conn is None:
            raise ConfigError(
                f"collection {coll.name!r} has no harvest state to tell its runs apart; "
                f"rebuild it with: strata index rebuild {coll.name}"
            )
        try:
            found = run_files(conn, sel.run)
            known = [r["run_id"] for r in runs(conn)]
        finally:
            conn.close()
        if found is None:
            raise ConfigError(
                f"collection {coll.name!r} has no run {sel.run!r}; its runs: {', '.join(known) or 'none'}"
            )
        files = set(found)
    return lo, hi, files


def export_wacz(
    coll: Collection,
    out: Path,
    sel: Selection = Selection(),
    progress: Callable[[dict], None] | None = None,
    signer: Signer | None = None,
    replace: bool = False,
) -> dict:
    """Write the package to ``out``; return the figures (see ``_Figures``) with the file's size.
    ``signer``: sign the package (``index.export.wacz.signing``). An existing ``out`` is replaced
    only when it is a regular file and ``replace`` is given: the package is renamed over it, which
    would put a file in place of a device or a link's target."""
    started = time.monotonic()
    out = Path(out)
    if out.is_dir():
        raise ConfigError(f"{out} is a directory: give the package's file name, e.g. {out / (coll.name + '.wacz')}")
    if out.is_symlink() or (out.exists() and not out.is_file()):
        raise ConfigError(f"{out} exists and is not a regular file: give the package a new file name")
    if out.exists() and not replace:
        raise ConfigError(f"{out} exists: give another name, or --force to replace it")
    if not out.parent.is_dir():
        raise ConfigError(f"{out.parent} does not exist: create it first")
    lo, hi, run_warcs = _check_selection(coll, sel)
    created = datetime.now(UTC).replace(microsecond=0)
    figures = _Figures()
    part = out.with_name(out.name + ".part")
    try:
        try:
            _write(coll, part, sel, lo, hi, run_warcs, created, figures, progress, signer)
        except _NeedsZip64:  # the originals of revisits took it past 2 GiB: written again, with them
            figures = _Figures()
            _write(coll, part, sel, lo, hi, run_warcs, created, figures, progress, signer, zip64=True)
    except BaseException:
        part.unlink(missing_ok=True)  # never a half-written package under any name
        raise
    os.replace(part, out)
    seconds = time.monotonic() - started
    size = out.stat().st_size
    return {
        "file": str(out),
        "bytes": size,
        **figures,
        "seconds": round(seconds, 3),
        "mb_per_s": round(figures["bytes_copied"] / 1e6 / seconds, 1) if seconds else None,
    }


class _NeedsZip64(Exception):
    """An entry written without ZIP64 fields passed 2 GiB."""


def _write(
    coll: Collection, part: Path, sel: Selection, lo, hi, run_warcs, created, figures, progress, signer, zip64=None
) -> None:
    """Everything but the rename: the package written as ``part``. ``zip64``: whether its streamed
    entries have ZIP64 fields; by default only when the records chosen pass 1 GiB."""
    shown = capture_filter(coll.root, coll.name, "wacz", sel.level)
    with tempfile.TemporaryDirectory(dir=part.parent, prefix=".wacz-") as work:
        workdir = Path(work)
        reader = RecordReader(coll)
        conn = open_readonly(coll.db_path)
        try:
            chosen = ExternalSort(workdir)
            chosen_bytes = 0
            for loc in iter_located(coll):
                if _selected(loc, lo, hi, sel.url_prefix, run_warcs) and (
                    shown is show_all or shown(loc.fields.get("url", ""), loc.fields["timestamp"])
                ):
                    chosen.add(loc.encode())
                    chosen_bytes += max(loc.length, 0)
            if chosen.count == 0:
                raise ConfigError(f"nothing in {coll.name!r} matches the selection: no package written")
            package = _Package(part, created, chosen_bytes > 2**30 if zip64 is None else zip64)
            try:
                texts = PageTexts(coll)
                copier = _Copier(reader, OriginalFinder(coll, reader, conn), shown, workdir, figures, progress, texts)
                with package.stream(f"archive/{WARC_NAME}") as warc:
                    copier.write_warcinfo(warc, coll, sel, created)
                    copier.copy_chosen(warc, (Located.decode(d) for d in chosen))
                    copier.copy_originals(warc)
                _write_index(package, copier.index_lines)
                _write_pages(package, copier.pages_path)
                _write_datapackage(package, coll, sel, created, signer)
            except RuntimeError as exc:
                if "zip64" in str(exc).lower():
                    raise _NeedsZip64 from exc
                raise
            finally:
                texts.close()
                package.zip.close()
                chosen.close()
        finally:
            reader.close()
            if conn is not None:
                conn.close()
    with open(part, "rb+") as fh:
        os.fsync(fh.fileno())


def _selected(loc: Located, lo: str | None, hi: str | None, prefix: str | None, files: set[str] | None) -> bool:
    ts = loc.fields["timestamp"]
    if (lo and ts < lo) or (hi and ts > hi):
        return False
    if prefix and not str(loc.fields.get("url", "")).startswith(prefix):
        return False
    return files is None or loc.filename in files


class _Copier:
    """Copies records into the package's WARC and keeps what the index and page list need."""

    def __init__(
        self, reader: RecordReader, finder: OriginalFinder, shown, workdir: Path, figures, progress, texts: PageTexts
    ):
        self.reader, self.finder, self.shown, self.texts = reader, finder, shown, texts
        self.figures = figures
        self.progress = progress
        self.index_lines = ExternalSort(workdir)
        self.originals = ExternalSort(workdir)
        self.copied_keys = open(workdir / "copied.keys", "w+b")  # closed in copy_originals
        self.workdir = workdir
        self.pages_path = workdir / "pages.jsonl"
        self.pages = open(self.pages_path, "wb")  # closed in copy_originals
        self.listed: set[str] = set()  # the page ids written: a URL at a timestamp is one page
        # A browser capture's rendered title and text by (page URL, 14-digit timestamp): offsets into a
        # file of their own, put in the page's line once every record is copied (``_finish_pages``).
        self.rendered_path = workdir / "rendered.jsonl"
        self.rendered = open(self.rendered_path, "w+b")  # closed in _finish_pages
        self.rendered_at: dict[tuple[str, str], tuple[int, int]] = {}
        self.last_report = 0.0

    def write_warcinfo(self, warc, coll: Collection, sel: Selection, created: datetime) -> None:
        buf = io.BytesIO()
        writer = WARCWriter(buf, gzip=True)
        info = {
            "software": "Strata (strata export wacz)",
            "format": "WARC File Format 1.1",
            "isPartOf": coll.name,
            "description": "Records copied unmodified from the collection's WARC files, originals of revisits included",
            "selection": json.dumps({k: v for k, v in dataclasses.asdict(sel).items() if v}),
        }
        record = writer.create_warcinfo_record(WARC_NAME, info)
        record.rec_headers.replace_header("WARC-Date", created.strftime("%Y-%m-%dT%H:%M:%SZ"))
        writer.write_record(record)
        warc.write(buf.getvalue())

    def _withheld(self, loc: Located) -> bool:
        """What the reader's level may not see named, beyond the capture's own URL: a record that is
        no capture (a run's report lists every URL the run met) and a redirect to a hidden URL."""
        if self.shown is show_all:
            return False
        url = str(loc.fields.get("url", ""))
        if not url.startswith(("http:", "https:")):
            return True
        if str(loc.fields.get("status", "")).startswith("3"):
            target = self.reader.location(loc)
            if target and not self.shown(urljoin(url, target), loc.fields["timestamp"]):
                return True
        return False

    def copy_chosen(self, warc, chosen: Iterator[Located]) -> None:
        for loc in chosen:
            if loc.filename.endswith((".arc", ".arc.gz")):
                self.figures["arc_skipped"] += 1
                continue
            if self._withheld(loc):
                self.figures["withheld"] += 1
                continue
            original = None
            if loc.fields.get("mime") == "warc/revisit":
                original = self._original_of(loc)
                if original is None:
                    continue
            page = (original.fields.get("mime"), original.fields.get("status")) if original else None
            if self._copy(warc, loc, page):
                self.copied_keys.write(loc.sort_key + b"\n")
                if original is not None:
                    self.originals.add(original.encode())

    def _original_of(self, loc: Located) -> Located | None:
        found, exact = self.finder.find(loc, self.reader.headers(loc))
        if found is not None and not (
            self.shown is show_all or self.shown(found.fields.get("url", ""), found.fields["timestamp"])
        ):
            found = None
        if found is None:
            self.figures["revisits_without_original"] += 1
            return None
        if not exact:
            self.figures["refers_to_unresolved"] += 1
        return found

    def copy_originals(self, warc) -> None:
        """The originals not chosen themselves: both lists sorted by (file, offset), walked together."""
        self.copied_keys.seek(0)
        copied = (line.rstrip(b"\n") for line in self.copied_keys)
        current = next(copied, None)
        for data in self.originals:
            loc = Located.decode(data)
            while current is not None and current < loc.sort_key:
                current = next(copied, None)
            if current == loc.sort_key:
                continue
            if self._copy(warc, loc, None, original=True):
                self.figures["originals_added"] += 1
        self.copied_keys.close()
        self.pages.close()
        self._finish_pages()
        self.originals.close()
        self._report(final=True)

    def _copy(self, warc, loc: Located, page: tuple | None, original: bool = False) -> bool:
        """Copy one record; ``page``: a revisit's original's (MIME type, status), which say whether
        the revisit is a page."""
        why = check_record_at(self.reader.path(loc.filename), loc.offset, loc.length)
        if why:
            self.figures["damaged_skipped"] += 1
            return False
        member = self.reader.member(loc)
        offset = warc.size
        warc.write(member)
        fields = {k: v for k, v in loc.fields.items() if k not in ("urlkey", "timestamp")}
        fields.update(offset=str(offset), length=str(len(member)), filename=WARC_NAME)
        self.index_lines.add(f"{loc.fields['urlkey']} {loc.fields['timestamp']} {json.dumps(fields)}\n".encode())
        figures = self.figures
        figures["records"] += 1
        figures["bytes_copied"] += len(member)
        is_revisit = fields.get("mime") == "warc/revisit"
        figures["revisits" if is_revisit else "responses"] += 0 if original else 1
        mime, status = (page or (None, None)) if is_revisit else (fields.get("mime"), fields.get("status"))
        own = str(fields.get("status", ""))
        if is_revisit and own[:1].isdigit() and own != "304":  # an identical-payload revisit's own answer
            status = own
        if not original and mime in HTML and str(status or "").startswith("2"):
            self._page(loc)
        elif not original and _page_of_text(str(fields.get("url", ""))):
            self._rendered_text(loc)
        self._report()
        return True

    def _rendered_text(self, loc: Located) -> None:
        """A ``urn:text:`` record: its page's rendered title and text, as full text holds them."""
        page = _page_of_text(str(loc.fields.get("url", "")))
        found = self.texts.get(page, loc.fields.get("digest")) if page else None
        if page is None or found is None:
            return
        title, text = found
        line = json.dumps({"title": title, "text": text}, ensure_ascii=False).encode("utf-8")
        self.rendered_at[(page, loc.fields["timestamp"])] = (self.rendered.tell(), len(line))
        self.rendered.write(line)

    def _finish_pages(self) -> None:
        """Each page's line with its rendered title and text where the package holds them."""
        if self.rendered_at:
            merged = self.workdir / "pages.merged.jsonl"
            with open(self.pages_path, "rb") as src, open(merged, "wb") as out:
                for line in src:
                    page = json.loads(line)
                    at = self.rendered_at.get((page["url"], _ts14(page["ts"])))
                    if at is not None:
                        self.rendered.seek(at[0])
                        shown = json.loads(self.rendered.read(at[1]))
                        page.update({k: v for k, v in shown.items() if v})
                        line = json.dumps(page, ensure_ascii=False).encode("utf-8") + b"\n"
                    out.write(line)
            self.pages_path = merged
        self.rendered.close()

    def _page(self, loc: Located) -> None:
        url, ts = loc.fields.get("url", ""), loc.fields["timestamp"]
        iso = f"{ts[:4]}-{ts[4:6]}-{ts[6:8]}T{ts[8:10]}:{ts[10:12]}:{ts[12:14]}Z"
        page = {"id": hashlib.sha1(f"{ts} {url}".encode()).hexdigest()[:24], "url": url, "ts": iso}
        if page["id"] in self.listed:  # captured twice in one second (a shared run's expired lease)
            return
        self.listed.add(page["id"])
        found = self.texts.get(url, loc.fields.get("digest"))
        if found is not None:
            title, text = found
            page.update({"title": title} if title else {})
            page.update({"text": text} if text else {})
        self.pages.write(json.dumps(page, ensure_ascii=False).encode("utf-8") + b"\n")
        self.figures["pages"] += 1

    def _report(self, final: bool = False) -> None:
        now = time.monotonic()
        if self.progress is None or (not final and now - self.last_report < 0.5):
            return
        self.last_report = now
        self.progress({**self.figures, "final": final})


def _page_of_text(uri: str) -> str | None:
    """The page of a ``urn:text:<page>`` record's URI (``strata.pageuris``), else None."""
    parsed = parse_page_uri(uri)
    return parsed[1] if parsed and parsed[0] == TEXT else None


def _ts14(iso: str) -> str:
    return "".join(ch for ch in iso if ch.isdigit())[:14]


def _write_index(package: _Package, lines: ExternalSort) -> None:
    """ZipNum: gzip blocks of sorted CDXJ lines, and an index of their first keys (as py-wacz writes)."""
    idx = [b'!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}\n']
    try:
        with package.stream("indexes/index.cdx.gz") as cdx:
            block: list[bytes] = []
            for line in lines:
                block.append(line)
                if len(block) == BLOCK_LINES:
                    idx.append(_flush_block(cdx, block))
                    block = []
            if block:
                idx.append(_flush_block(cdx, block))
    finally:
        lines.close()
    package.add_bytes("indexes/index.idx", b"".join(idx))


def _flush_block(cdx: _Hashing, block: list[bytes]) -> bytes:
    comp = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    data = comp.compress(b"".join(block)) + comp.flush()
    prefix = block[0].split(b" {", 1)[0]
    where = json.dumps({"offset": cdx.size, "length": len(data), "filename": "index.cdx.gz"}).encode()
    cdx.write(data)
    return prefix + b" " + where + b"\n"


def _write_pages(package: _Package, pages_path: Path) -> None:
    head = json.dumps({"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}).encode() + b"\n"
    with package.stream("pages/pages.jsonl", stored=False, size=len(head) + pages_path.stat().st_size) as out:
        out.write(head)
        with open(pages_path, "rb") as src:
            while chunk := src.read(COPY_CHUNK):
                out.write(chunk)


def _write_datapackage(
    package: _Package, coll: Collection, sel: Selection, created: datetime, signer: Signer | None
) -> None:
    stamp = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    chosen = {k: v for k, v in dataclasses.asdict(sel).items() if v and not (k == "level" and v == "public")}
    what = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in chosen.items())
    meta = read_metadata(coll)
    source = f"Exported from the Strata collection {coll.name!r}; revisits come with their originals."
    descriptor: dict = {
        "profile": "data-package",
        "resources": package.resources,
        "title": (meta["title"] or coll.name) + (f" ({what})" if what else ""),
        "description": f"{meta['description']}\n\n{source}" if meta["description"] else source,
        "created": stamp,
        "modified": stamp,
        "wacz_version": WACZ_VERSION,
        "software": "Strata (strata export wacz)",
    }
    # the collection's own description (index.collection_meta), in the Data Package's terms where
    # it has them (contributors, keywords), and as they are named in Strata besides
    people = [(meta["curator"], "maintainer"), (meta["organisation"], "publisher")]
    if any(name for name, _ in people):
        descriptor["contributors"] = [{"title": name, "role": role} for name, role in people if name]
    if meta["subjects"]:
        descriptor["keywords"] = list(meta["subjects"])
    for key in ("curator", "organisation", "rights", "language"):
        if meta[key]:
            descriptor[key] = meta[key]
    data = json.dumps(descriptor, indent=2).encode("utf-8")
    package.add_bytes("datapackage.json", data, listed=False)
    digest: dict = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(data).hexdigest()}
    if signer is not None:
        digest["signedData"] = signer.signed_data(digest["hash"], stamp)
    package.add_bytes("datapackage-digest.json", json.dumps(digest, indent=2).encode(), listed=False)

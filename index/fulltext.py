"""The collection's full-text index: Whoosh, one document per distinct payload of a URL.

A document is keyed ``(url, payload digest)`` and holds the payload's text and metadata; the
timestamps at which that payload was captured (the response that stored it and every later
revisit, identical payload or ``304 Not Modified``) are rows of ``index.captures`` beside it,
keyed by the document's number. A date-range query therefore finds an unchanged page at every
harvest in the range, and a harvest that finds a page unchanged adds a row, not a document.

The text is indexed by ``index.postings`` (Whoosh segments whose posting lists are written and
read as arrays) in one field, ``content``: the words and CJK bigrams of the title (weight 3),
meta description and keywords (1.5) and body (1), no positions. The four texts are kept in one
column, ``parts`` (UTF-8, uncompressed: phrases are checked on the bytes of the candidates ranked;
compressing it cost indexing 5% and each check a decompression), for snippets and phrases.

Two ways in, one writer at a time (``fulltext.lock`` beside the index, then Whoosh's own lock):

- ``index_run(collection, run_id)``, at the end of each harvest run: reads the run's captures from
  the harvest state, parses only payloads the index does not hold under that URL (a payload
  already indexed under another URL is copied from its document), appends their documents, and
  adds every capture's row. Its cost follows the new payloads, not the unchanged ones. It also
  catches up runs the index has not seen (a crash before indexing) and is idempotent: a run
  whose captures are in is recorded in ``captures.runs``, committed with them.
- ``rebuild(collection, progress)``, from the WARC files alone: a first pass reads record headers
  (which keys exist, all their timestamps, where each payload is stored), a second reads and parses
  each payload once, into a new directory that replaces the old one by rename. A crash leaves the
  old index in place.

Whoosh commits by renaming a new table of contents over the old one, so a killed process leaves
the previous commit readable; the captures are committed after it (``index.captures`` says how
a crash between the two is caught up). After a power loss segment files may be torn:
``open_index`` checks what it opens, and ``index_run`` rebuilds from the WARCs when the index is
missing, of an older format, or fails to open or to update.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from whoosh import columns, fields

from harvester.urls import url_host
from index import warcscan
from index.captures import CaptureStore
from index.collection import Collection
from index.mapfile import MappedStorage
from index.payload import read_record
from index.postings import BulkWriter, CharTerms, Content, read_postings
from index.state import HarvestState
from index.text import extract, mime_group
from strata.errors import ArchiveError, CollectionBusy

__all__ = ["FORMAT", "IndexUnusable", "create", "documents", "index_run", "open_index", "rebuild", "schema"]

FORMAT = 3                      # bump when the schema or the analysis changes: older indexes are rebuilt
FORMAT_FILE = "strata-fulltext.json"
CAPTURES_FILE = "captures.sqlite"
PART_BOOSTS = (("title", 3.0), ("description", 1.5), ("keywords", 1.5), ("text", 1.0))
POOL_BYTES = 120 * 2**20        # postings held in memory before a segment is written (BulkWriter.pooled_bytes)
LOCK_WAIT = 600.0               # seconds index_run waits for another writer (a rebuild) to finish

ProgressFn = Callable[[dict], None]


class IndexUnusable(ArchiveError):
    """The index is missing, of an older format, or fails to open."""


def schema() -> fields.Schema:
    return fields.Schema(
        key=fields.ID(unique=True, stored=True),          # "<url> <digest>"
        url=fields.ID(stored=True, sortable=True),
        digest=fields.ID(stored=True),
        host=fields.ID(stored=True, sortable=True),
        domains=fields.KEYWORD(lowercase=True),            # the host and each parent domain
        mime=fields.ID(stored=True, sortable=True),
        mtype=fields.ID(stored=True, sortable=True),       # index.text.mime_group
        lang=fields.STORED(),
        status=fields.STORED(),
        size=fields.STORED(),
        parts=fields.COLUMN(columns.VarBytesColumn()),     # pack_texts(title, description, keywords, text)
        content=Content(chars="chars"),
        chars=CharTerms(),                                 # every CJK character, from content
    )


def domains(host: str) -> list[str]:
    """``www.example.org`` -> ``www.example.org example.org org`` (IP addresses stay whole)."""
    host = (host or "").lower()
    if not host or host.replace(".", "").isdigit() or ":" in host:
        return [host] if host else []
    parts = host.split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


# -- documents -------------------------------------------------------------------------------------

@dataclass
class Payload:
    """What a document says about the payload itself (the same for every URL that holds it)."""

    mime: str = ""
    status: int = 200
    size: int = 0
    title: str = ""
    description: str = ""
    keywords: str = ""
    text: str = ""
    lang: str = ""

    @classmethod
    def from_record(cls, http_headers, raw: bytes) -> Payload:
        content_type = http_headers.get_header("Content-Type") if http_headers else None
        mime = (content_type or "").split(";")[0].strip().lower() or "unknown"
        status = int(http_headers.get_statuscode() or 0) if http_headers else 0
        out = extract(raw, content_type, http_headers.get_header("Content-Encoding") if http_headers else None,
                      http_headers.get_header("Content-Language") if http_headers else None)
        return cls(mime=mime, status=status, size=len(raw), title=out.title, description=out.description,
                   keywords=out.keywords, text=out.text, lang=out.language)

    @classmethod
    def from_stored(cls, stored: dict, parts: bytes | None) -> Payload:
        title, description, keywords, text = unpack_texts(parts)
        return cls(mime=stored.get("mime") or "", status=stored.get("status") or 0, size=stored.get("size") or 0,
                   title=title, description=description, keywords=keywords, text=text,
                   lang=stored.get("lang") or "")


def _document(url: str, digest: str, payload: Payload) -> dict:
    host = url_host(url) or (urlsplit(url).hostname or "")
    texts = {"title": payload.title, "description": payload.description, "keywords": payload.keywords,
             "text": payload.text}
    return {
        "key": f"{url} {digest}", "url": url, "digest": digest, "host": host,
        "domains": " ".join(domains(host)), "mime": payload.mime, "mtype": mime_group(payload.mime),
        "lang": payload.lang, "status": payload.status, "size": payload.size,
        "parts": pack_texts(texts[name] for name, _ in PART_BOOSTS),
        "content": tuple((texts[name] or "", boost) for name, boost in PART_BOOSTS),
    }


def pack_texts(texts) -> bytes:
    """The ``parts`` column: the texts in UTF-8, separated by NUL (dropped from the texts)."""
    return "\x00".join((t or "").replace("\x00", "") for t in texts).encode("utf-8")


def unpack_texts(data: bytes | None) -> tuple[str, str, str, str]:
    if not data:
        return "", "", "", ""
    title, description, keywords, text = data.decode("utf-8").split("\x00")
    return title, description, keywords, text


def indexable(url: str, status: int | None) -> bool:
    """Successful payloads only (no redirects, errors or robots.txt)."""
    if status is not None and not 200 <= status < 300:
        return False
    return urlsplit(url).path != "/robots.txt"


# -- opening, locking ------------------------------------------------------------------------------

def open_index(collection: Collection, check: bool = False, populate: bool = False):
    """The collection's Whoosh index, or None when it has none. ``check`` also reads from every
    segment; ``populate`` maps all its pages (for searching: ``index.mapfile``). Raises
    ``IndexUnusable`` when it exists but cannot be used."""
    path = collection.fulltext_dir
    if not path.is_dir() or not any(path.glob("_MAIN_*.toc")):
        return None
    try:
        meta = json.loads((path / FORMAT_FILE).read_text())
    except (OSError, ValueError):
        meta = {}
    if meta.get("format") != FORMAT:
        raise IndexUnusable(_unusable(collection, f"format {meta.get('format')!r}, expected {FORMAT}"))
    if not (path / CAPTURES_FILE).is_file():
        raise IndexUnusable(_unusable(collection, f"{CAPTURES_FILE} is missing"))
    try:
        ix = MappedStorage(path, populate=populate).open_index()
        ix.build_id = meta.get("build", "")
        if check:
            _check(ix)
    except IndexUnusable:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to read means: rebuild
        raise IndexUnusable(_unusable(collection, f"{type(exc).__name__}: {exc}")) from exc
    return ix


def build_id(collection: Collection) -> str:
    try:
        return json.loads((collection.fulltext_dir / FORMAT_FILE).read_text()).get("build", "")
    except (OSError, ValueError):
        return ""


def _unusable(collection: Collection, why: str) -> str:
    return (f"the full-text index of {collection.name!r} cannot be used ({why}); "
            f"rebuild it from the WARC files with: strata index rebuild {collection.name}")


def _check(ix) -> None:
    """Read a little from every segment: the last stored document and its texts, the first
    posting list of two fields. (Not every term: index_run checks before each update, and its
    cost must not grow with the index. SQLite checks its own pages as it reads them.)"""
    with ix.searcher() as searcher:
        for reader, _ in searcher.reader().leaf_readers():
            count = reader.doc_count_all()
            if not count:
                continue
            reader.stored_fields(count - 1)
            reader.column_reader("parts")[count - 1]
            for fieldname in ("key", "content"):
                for btext, info in reader.iter_field(fieldname):
                    postings = read_postings(reader, fieldname, btext, info)
                    if not len(postings) or postings.packed[-1] >> 32 >= count:
                        raise ValueError(f"damaged posting list for {fieldname}:{btext!r}")
                    break
    with CaptureStore(ix.storage.folder) as store:
        store.doc_count()


@contextlib.contextmanager
def write_lock(collection: Collection, wait: float = LOCK_WAIT) -> Iterator[None]:
    """One writer of the full-text index at a time, across processes."""
    collection.state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(collection.state_dir / "fulltext.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise CollectionBusy(
                        f"another process is writing the full-text index of {collection.name!r}; "
                        "try again when it has finished"
                    ) from None
                time.sleep(0.1)
        _clean_leftovers(collection)
        yield
    finally:
        os.close(fd)


def _clean_leftovers(collection: Collection) -> None:
    for path in collection.state_dir.glob("fulltext.*-*"):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _fsync_tree(path: Path) -> None:
    for entry in os.scandir(path):
        if entry.is_file():
            fd = os.open(entry.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def indexed_runs(ix) -> set[str]:
    """Harvest runs whose captures the index holds."""
    with CaptureStore(ix.storage.folder) as store:
        return store.runs()


def documents(collection: Collection) -> dict[str, dict]:
    """Every document of the index: key -> captures, texts and metadata (tests, comparisons)."""
    ix = open_index(collection, check=True)
    if ix is None:
        return {}
    with CaptureStore(collection.fulltext_dir) as store:
        captures = store.all_captures()
    out = {}
    with ix.searcher() as searcher:
        parts = searcher.reader().column_reader("parts")
        for docnum, stored in searcher.iter_docs():
            title, description, keywords, text = unpack_texts(parts[docnum])
            out[stored["key"]] = {"captures": captures.get(stored["key"], []), "title": title,
                                  "description": description, "keywords": keywords, "text": text,
                                  "mime": stored.get("mime"), "size": stored.get("size"), "lang": stored.get("lang")}
    return out


# -- after a harvest run ---------------------------------------------------------------------------

@dataclass
class Figures:
    runs: list[str] = field(default_factory=list)
    parsed: int = 0          # payloads read from WARCs and parsed
    copied: int = 0          # documents whose payload was already indexed under another URL
    added: int = 0           # documents added
    updated: int = 0         # documents that got new capture timestamps
    unchanged: int = 0
    captures: int = 0        # capture rows added
    orphans: int = 0         # revisits whose original payload could not be found
    rebuilt: bool = False
    reason: str = ""
    documents: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def index_run(collection: Collection, run_id: str | None = None, progress: ProgressFn | None = None) -> dict:
    """Add a harvest run (and any earlier run not indexed yet) to the full-text index.

    Call it after the run's WARC files are sealed. Rebuilds from the WARCs when the index is missing
    or unusable. Returns figures (``parsed``, ``added``, ``updated``, ``rebuilt`` ...)."""
    started = time.monotonic()
    with write_lock(collection):
        try:
            ix = open_index(collection, check=True)
        except IndexUnusable as exc:
            ix, reason = None, exc.message
        else:
            reason = "no full-text index yet"
        if ix is not None:
            try:
                figures = _index_runs(collection, ix, run_id)
                figures.seconds = round(time.monotonic() - started, 3)
                return figures.as_dict()
            except (OSError, EOFError, ValueError, KeyError, IndexError, sqlite3.DatabaseError, IndexUnusable) as exc:
                reason = f"update failed ({type(exc).__name__}: {exc})"
        figures = _rebuild_locked(collection, progress)
        figures.reason = reason
        figures.seconds = round(time.monotonic() - started, 3)
        return figures.as_dict()


def _pending_runs(collection: Collection, store: CaptureStore, run_id: str | None) -> list[str]:
    done = store.runs()
    with HarvestState(collection.db_path) as state:
        runs = [r["run_id"] for r in state.runs() if r["status"] != "running" or r["run_id"] == run_id]
    if run_id and run_id not in runs:
        runs.append(run_id)
    return [r for r in runs if r not in done]


def _catch_up_rows(ix, store: CaptureStore) -> None:
    """Documents committed to Whoosh whose rows were not (a crash between the two commits)."""
    have, total = store.doc_count(), ix.doc_count_all()
    if have > total:
        raise IndexUnusable(f"the capture store knows {have} documents, the index {total}")
    if have < total:
        with ix.searcher() as searcher:
            store.add([(n, searcher.stored_fields(n)["key"]) for n in range(have, total)], [], [])


def _index_runs(collection: Collection, ix, run_id: str | None) -> Figures:
    figures = Figures()
    with CaptureStore(collection.fulltext_dir) as store:
        _catch_up_rows(ix, store)
        pending = _pending_runs(collection, store, run_id)
        if not pending:
            return figures
        figures.runs = pending
        with HarvestState(collection.db_path) as state:
            groups = _run_groups(state, pending)
            known = store.docnums(f"{url} {digest}" for url, digest in groups)
            new = [(key, group) for key, group in groups.items() if f"{key[0]} {key[1]}" not in known]
            rows, captures = _write_new(collection, ix, state, new, figures)
        for (url, digest), group in groups.items():
            docnum = known.get(f"{url} {digest}")
            if docnum is not None:
                captures.extend((docnum, ts) for ts in group["ts"])
        old = {docnum: set(store.captures_of(docnum)) for docnum in known.values()}
        for (url, digest), group in groups.items():
            docnum = known.get(f"{url} {digest}")
            if docnum is not None:
                if group["ts"] <= old[docnum]:
                    figures.unchanged += 1
                else:
                    figures.updated += 1
        figures.captures = store.add(rows, captures, pending)
        figures.documents = store.doc_count()
    return figures


def _run_groups(state: HarvestState, runs: list[str]) -> dict[tuple[str, str], dict]:
    """(url, digest) -> capture timestamps and one response holding the payload, over ``runs``."""
    groups: dict[tuple[str, str], dict] = {}
    for rid in runs:
        for cap in state.captures(run_id=rid):
            if not cap["digest"]:
                continue
            status = cap["status"] if cap["record_type"] == "response" or cap["status"] not in (None, 304) else None
            if not indexable(cap["url"], status):
                continue
            group = groups.setdefault((cap["url"], cap["digest"]), {"ts": set(), "response": None, "refers": None})
            group["ts"].add(cap["timestamp"])
            if cap["record_type"] == "response" and group["response"] is None:
                group["response"] = (cap["warc"], cap["offset"])
            elif cap["refers_to_uri"] and group["refers"] is None:
                group["refers"] = (cap["refers_to_uri"], cap["refers_to_date"])
    return groups


def _write_new(collection: Collection, ix, state: HarvestState, new: list, figures: Figures) -> tuple[list, list]:
    """Parse and append the documents of ``new`` ((url, digest), group) pairs. Returns their rows
    and captures for the store. Segments are written as the pool fills, so memory stays bounded."""
    rows: list[tuple[int, str]] = []
    captures: list[tuple[int, str]] = []
    if not new:
        return rows, captures
    base = ix.doc_count_all()
    cache = _PayloadCache()
    # responses first, so that a revisit of another URL's new payload finds it in the cache
    new.sort(key=lambda kv: kv[1]["response"] is None)
    writer = BulkWriter(ix, expected=len(new))
    try:
        with ix.searcher() as searcher:
            for (url, digest), group in new:
                payload = _payload_for(collection, state, searcher, digest, group, cache, figures)
                if payload is None:
                    figures.orphans += 1
                    continue
                if not indexable(url, payload.status):
                    continue
                docnum = base + len(rows)
                writer.add_document(**_document(url, digest, payload))
                rows.append((docnum, f"{url} {digest}"))
                captures.extend((docnum, ts) for ts in group["ts"])
                if writer.pooled_bytes() > POOL_BYTES:
                    writer.commit()
                    writer = BulkWriter(ix, expected=len(new) - len(rows))
        writer.commit()
    except BaseException:
        if not writer.is_closed:
            writer.cancel()
        raise
    _fsync_tree(collection.fulltext_dir)
    if ix.doc_count_all() != base + len(rows):      # BulkWriter keeps numbers: this would be a bug
        raise IndexUnusable(f"expected {base + len(rows)} documents after the update, found {ix.doc_count_all()}")
    figures.added = len(rows)
    return rows, captures


def _payload_for(collection: Collection, state: HarvestState, searcher, digest: str, group: dict,
                 cache: _PayloadCache, figures: Figures) -> Payload | None:
    payload = cache.get(digest)
    if payload is not _MISSING:
        figures.copied += 1
        return payload
    location = group["response"]
    if location is None:
        docnum = searcher.document_number(digest=digest)
        if docnum is not None:
            figures.copied += 1
            payload = Payload.from_stored(searcher.stored_fields(docnum), searcher.reader().column_reader("parts")[docnum])
            cache.put(digest, payload)
            return payload
        location = _original_location(state, digest, group["refers"])
    if location is None:
        return None
    payload = _read_payload(collection, *location)
    if payload is not None:
        figures.parsed += 1
    cache.put(digest, payload)
    return payload


def _original_location(state: HarvestState, digest: str, refers: tuple[str, str] | None) -> tuple[str, int] | None:
    rows = state.conn.execute(
        "SELECT warc, offset, url FROM captures WHERE digest=? AND record_type='response' ORDER BY timestamp, id",
        (digest,),
    ).fetchall()
    if refers:
        rows = sorted(rows, key=lambda r: r["url"] != refers[0])
    return (rows[0]["warc"], rows[0]["offset"]) if rows else None


def _read_payload(collection: Collection, warc: str, offset: int) -> Payload | None:
    path = collection.archive_dir / warc
    if not path.exists() and (collection.archive_dir / (warc + ".open")).exists():
        path = collection.archive_dir / (warc + ".open")
    try:
        _, http_headers, raw = read_record(path, offset)
    except (OSError, ValueError, EOFError):
        return None
    return Payload.from_record(http_headers, raw)


# -- rebuild from the WARC files -------------------------------------------------------------------

def rebuild(collection: Collection, progress: ProgressFn | None = None, wait: float = 10.0) -> dict:
    """Rebuild the collection's full-text index from its WARC files alone. Returns figures."""
    started = time.monotonic()
    with write_lock(collection, wait=wait):
        figures = _rebuild_locked(collection, progress)
    figures.seconds = round(time.monotonic() - started, 3)
    return figures.as_dict()


def _scan(collection: Collection, progress: ProgressFn | None) -> tuple[dict, dict, list[str]]:
    """First pass, headers only: keys with timestamps, where payloads are, which runs wrote them."""
    groups: dict[tuple[str, str], dict] = {}
    originals: dict[str, tuple[str, int]] = {}     # digest -> first response holding it
    runs: list[str] = []
    files = collection.warc_files()
    for number, name in enumerate(files, 1):
        try:
            # a damaged file is read up to its damage (index.warcscan); an ARC record reads as a WARC one
            scan = warcscan.scan_file(collection.archive_dir / name, name)
            if scan.damage and progress:
                progress({"phase": "scan", "warning": str(scan.damage)})
            with warcscan.open_prefix(collection.archive_dir / name, None if scan.whole else scan.good_end) as fh:
                records = ArchiveIterator(fh, arc2warc=True)
                for record in records:
                    rtype = record.rec_type
                    if rtype == "warcinfo":
                        run = _warcinfo_run(record.content_stream().read(65536))
                        if run and run not in runs:
                            runs.append(run)
                        continue
                    if rtype not in ("response", "revisit"):
                        continue
                    headers = record.rec_headers
                    url = headers.get_header("WARC-Target-URI") or ""
                    if rtype == "response" and not headers.get_header("WARC-Payload-Digest"):
                        warcscan.read_payload(record)
                    digest = headers.get_header("WARC-Payload-Digest")
                    if not url or not digest:
                        continue
                    status = int(record.http_headers.get_statuscode() or 0) if record.http_headers else None
                    if status == 304:
                        status = None
                    if not indexable(url, status):
                        continue
                    stamp = _ts14(headers.get_header("WARC-Date") or "")
                    group = groups.setdefault((url, digest), {"ts": set(), "response": None})
                    group["ts"].add(stamp)
                    if rtype == "response":
                        location = (name, records.get_record_offset())
                        if group["response"] is None:
                            group["response"] = location
                        originals.setdefault(digest, location)
        except (OSError, EOFError, ValueError) as exc:
            # a torn file (crash): what was read before the tear is indexed; `strata recover` seals it
            if progress:
                progress({"phase": "scan", "warning": f"{name}: {type(exc).__name__}: {exc}"})
        if progress:
            progress({"phase": "scan", "files_done": number, "files": len(files), "documents": len(groups)})
    return groups, originals, runs


def _warcinfo_run(block: bytes) -> str | None:
    for line in block.decode("utf-8", "replace").splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() == "run-id":
            return value.strip() or None
    return None


def _ts14(warc_date: str) -> str:
    digits = "".join(ch for ch in warc_date if ch.isdigit())[:14]
    return digits.ljust(14, "0")


def _rebuild_locked(collection: Collection, progress: ProgressFn | None) -> Figures:
    figures = Figures(rebuilt=True)
    groups, originals, runs = _scan(collection, progress)
    _build(collection, _warc_documents(collection, groups, originals, figures, progress), runs, figures, progress)
    return figures


def _warc_documents(collection: Collection, groups: dict, originals: dict, figures: Figures,
                    progress: ProgressFn | None) -> Iterator[tuple[str, str, Payload, set[str]]]:
    """(url, digest, payload, capture timestamps) for every indexable key, payloads read in WARC order."""
    cache = _PayloadCache()
    ordered = sorted(groups.items(), key=lambda kv: kv[1]["response"] or originals.get(kv[0][1]) or ("", 0))
    total, last = len(ordered), 0.0
    for done, ((url, digest), group) in enumerate(ordered, 1):
        if progress and (done == total or time.monotonic() - last > 0.5):
            last = time.monotonic()
            progress({"phase": "index", "done": done, "total": total})
        location = group["response"] or originals.get(digest)
        if location is None:
            figures.orphans += 1
            continue
        payload = cache.get(digest)
        if payload is not _MISSING:
            figures.copied += 1
        else:
            payload = _read_payload(collection, *location)
            figures.parsed += 1
            cache.put(digest, payload)
        if payload is not None and indexable(url, payload.status):
            yield url, digest, payload, group["ts"]


def create(collection: Collection, documents: Iterable[tuple[str, str, Payload, Iterable[str]]],
           runs: Iterable[str] = ()) -> dict:
    """Replace the collection's index by one holding ``documents`` ((url, digest, payload,
    capture timestamps); benchmarks and tests). Returns figures."""
    figures = Figures(rebuilt=True)
    with write_lock(collection, wait=10.0):
        _build(collection, documents, list(runs), figures, None)
    return figures.as_dict()


def _build(collection: Collection, documents, runs: list[str], figures: Figures, progress: ProgressFn | None) -> None:
    """Write ``documents`` into a new index directory, then put it in place of the old one."""
    build = secrets.token_hex(8)
    tmp = collection.state_dir / f"fulltext.tmp-{build}"
    tmp.mkdir(parents=True)
    try:
        ix = MappedStorage(tmp).create_index(schema())
        rows: list[tuple[int, str]] = []
        captures: list[tuple[int, str]] = []
        writer = BulkWriter(ix, merge=None)
        try:
            for url, digest, payload, stamps in documents:
                docnum = len(rows)
                writer.add_document(**_document(url, digest, payload))
                rows.append((docnum, f"{url} {digest}"))
                captures.extend((docnum, ts) for ts in stamps)
                if writer.pooled_bytes() > POOL_BYTES:
                    writer.commit()
                    writer = BulkWriter(ix, merge=None)
            if progress:
                progress({"phase": "commit", "documents": len(rows)})
            writer.commit()
            writer = BulkWriter(ix, merge="all")      # one segment: each document copied once more
            writer.commit()
        except BaseException:
            if not writer.is_closed:
                writer.cancel()
            raise
        if ix.doc_count_all() != len(rows):
            raise IndexUnusable(f"wrote {len(rows)} documents, the index holds {ix.doc_count_all()}")
        with CaptureStore(tmp) as store:
            store.add(rows, captures, runs)
        (tmp / FORMAT_FILE).write_text(json.dumps({"format": FORMAT, "build": build}))
        _fsync_tree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    figures.documents = figures.added = len(rows)
    figures.captures = len(captures)
    figures.runs = runs
    _swap(collection, tmp)


_MISSING = object()


class _PayloadCache:
    """The last 256 payloads parsed, by digest: copies of one payload under several URLs are
    usually written together (the rebuild goes through the WARCs in order)."""

    def __init__(self, size: int = 256):
        self.size = size
        self.items: dict[str, Payload | None] = {}

    def get(self, digest: str):
        return self.items.get(digest, _MISSING)

    def put(self, digest: str, payload: Payload | None) -> None:
        self.items[digest] = payload
        if len(self.items) > self.size:
            del self.items[next(iter(self.items))]


def _swap(collection: Collection, new: Path) -> None:
    """Replace the index directory by ``new``: two renames; a crash between them leaves no index,
    which the next ``index_run`` rebuilds."""
    current = collection.fulltext_dir
    old = collection.state_dir / f"fulltext.old-{secrets.token_hex(4)}"
    if current.exists():
        os.rename(current, old)
    os.rename(new, current)
    fd = os.open(collection.state_dir, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    shutil.rmtree(old, ignore_errors=True)

"""The collection's full-text index: Whoosh, one document per distinct payload of a URL.

A document is keyed ``(url, payload digest)`` and holds the payload's text and metadata and
**every** timestamp at which that payload was captured: the response that stored it, and each
later revisit (identical payload or ``304 Not Modified``). A date-range query therefore finds an
unchanged page at every harvest in the range, not only on the day it was first stored.

Two ways in, one writer at a time (``fulltext.lock`` beside the index, then Whoosh's own lock):

- ``index_run(collection, run_id)``, at the end of each harvest run: reads the run's captures from
  the harvest state, parses only payloads the index does not hold yet (a revisit of a payload
  already indexed under another URL copies its fields), and adds the run's timestamps to the
  documents that exist. It also catches up earlier runs the index has not seen (a crash before
  indexing) and is idempotent: indexing a run twice changes nothing. Each indexed run leaves a
  marker document, committed with its documents.
- ``rebuild(collection, progress)``, from the WARC files alone: a first pass reads record headers
  (which keys exist, all their timestamps, where each payload is stored), a second reads and parses
  each payload once, into a new directory that replaces the old one by rename. A crash leaves the
  old index in place.

Whoosh commits by renaming a new table of contents over the old one, so a killed process leaves
the previous commit readable; after a power loss segment files may be torn. ``open_index`` checks
what it opens, and ``index_run`` rebuilds from the WARCs when the index is missing, of an older
format, or fails to open or to update.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from whoosh import fields, index
from whoosh.columns import VarBytesColumn

from harvester.urls import url_host
from index.cjk import CJKBigramAnalyzer
from index.collection import Collection
from index.payload import read_record
from index.state import HarvestState
from index.text import extract, mime_group
from strata.errors import ArchiveError, CollectionBusy

__all__ = ["FORMAT", "IndexUnusable", "index_run", "open_index", "rebuild", "schema"]

FORMAT = 2                      # bump when the schema or the analysis changes: older indexes are rebuilt
FORMAT_FILE = "strata-fulltext.json"
TEXT_FIELDS = ("title", "description", "keywords", "text")
WRITER_LIMIT_MB = 128
LOCK_WAIT = 600.0               # seconds index_run waits for another writer (a rebuild) to finish

ProgressFn = Callable[[dict], None]


class IndexUnusable(ArchiveError):
    """The index is missing, of an older format, or fails to open."""


class NumericList(fields.NUMERIC):
    """A NUMERIC field with several values per document (every capture timestamp).

    Whoosh's NUMERIC yields its tiered terms once per value, so two values that share a tier (two
    captures in the same month) put the document twice in one posting list; an intersection with
    it then fails (``assert a_id != b_id`` in ``IntersectionMatcher``). Each term once per document.
    """

    def index(self, num, **kwargs):
        unique = {}
        for term, freq, weight, value in super().index(num, **kwargs):
            unique.setdefault(term, (term, freq, weight, value))
        return list(unique.values())


def schema() -> fields.Schema:
    analyzer = CJKBigramAnalyzer()
    return fields.Schema(
        key=fields.ID(unique=True, stored=True),          # "<url> <digest>", or "run:<run id>" for markers
        kind=fields.ID(),                                  # "doc" | "run"
        url=fields.ID(stored=True, sortable=True),
        digest=fields.ID(stored=True),
        host=fields.ID(stored=True, sortable=True),
        domains=fields.KEYWORD(lowercase=True),            # the host and each parent domain
        mime=fields.ID(stored=True),
        mtype=fields.ID(stored=True, sortable=True),       # index.text.mime_group
        lang=fields.ID(stored=True),
        status=fields.NUMERIC(stored=True),
        size=fields.NUMERIC(bits=64, stored=True),
        ts=NumericList(bits=64),                           # every capture timestamp, for range filters
        captures=fields.COLUMN(VarBytesColumn()),          # the same, b"ts ts ts", read per hit
        title=fields.TEXT(analyzer=analyzer, stored=True, field_boost=4.0),
        description=fields.TEXT(analyzer=analyzer, stored=True, field_boost=2.0),
        keywords=fields.TEXT(analyzer=analyzer, stored=True, field_boost=2.0),
        text=fields.TEXT(analyzer=analyzer, stored=True),
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
    def from_stored(cls, doc: dict) -> Payload:
        return cls(**{k: doc.get(k) or cls.__dataclass_fields__[k].default for k in cls.__dataclass_fields__})


def _document(url: str, digest: str, payload: Payload, captures: set[str]) -> dict:
    host = url_host(url) or (urlsplit(url).hostname or "")
    stamps = sorted(captures)
    return {
        "key": f"{url} {digest}", "kind": "doc", "url": url, "digest": digest, "host": host,
        "domains": " ".join(domains(host)), "mime": payload.mime, "mtype": mime_group(payload.mime),
        "lang": payload.lang, "status": payload.status, "size": payload.size,
        "ts": [int(t) for t in stamps], "captures": " ".join(stamps).encode(),
        "title": payload.title, "description": payload.description, "keywords": payload.keywords,
        "text": payload.text,
    }


def indexable(url: str, status: int | None) -> bool:
    """Successful payloads only (no redirects, errors or robots.txt)."""
    if status is not None and not 200 <= status < 300:
        return False
    return urlsplit(url).path != "/robots.txt"


# -- opening, locking ------------------------------------------------------------------------------

def open_index(collection: Collection, check: bool = False):
    """The collection's Whoosh index, or None when it has none. ``check`` also reads from every
    segment. Raises ``IndexUnusable`` when it exists but cannot be used."""
    path = collection.fulltext_dir
    if not path.is_dir() or not any(path.glob("_MAIN_*.toc")):
        return None
    try:
        meta = json.loads((path / FORMAT_FILE).read_text())
    except (OSError, ValueError):
        meta = {}
    if meta.get("format") != FORMAT:
        raise IndexUnusable(_unusable(collection, f"format {meta.get('format')!r}, expected {FORMAT}"))
    try:
        ix = index.open_dir(str(path))
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
    """Read a little from every segment: the last stored document, a column, one posting list."""
    with ix.searcher() as searcher:
        for reader, _ in searcher.reader().leaf_readers():
            count = reader.doc_count_all()
            if not count:
                continue
            reader.stored_fields(count - 1)
            reader.column_reader("captures")[count - 1]
            for fieldname in ("key", "text"):
                for term in reader.lexicon(fieldname):
                    list(reader.postings(fieldname, term).all_ids())
                    break


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
    with ix.searcher() as searcher:
        return {doc["key"][4:] for doc in searcher.documents(kind="run")}


# -- after a harvest run ---------------------------------------------------------------------------

@dataclass
class Figures:
    runs: list[str] = field(default_factory=list)
    parsed: int = 0          # payloads read from WARCs and parsed
    copied: int = 0          # documents whose payload was already indexed under another URL
    updated: int = 0         # documents that got new capture timestamps
    unchanged: int = 0
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
    or unusable. Returns figures (``parsed``, ``updated``, ``rebuilt`` ...)."""
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
            except (OSError, EOFError, ValueError, KeyError, IndexError) as exc:
                reason = f"update failed ({type(exc).__name__}: {exc})"
        figures = _rebuild_locked(collection, progress)
        figures.reason = reason
        figures.seconds = round(time.monotonic() - started, 3)
        return figures.as_dict()


def _pending_runs(collection: Collection, ix, run_id: str | None) -> list[str]:
    done = indexed_runs(ix)
    with HarvestState(collection.db_path) as state:
        runs = [r["run_id"] for r in state.runs() if r["status"] != "running" or r["run_id"] == run_id]
    if run_id and run_id not in runs:
        runs.append(run_id)
    return [r for r in runs if r not in done]


def _index_runs(collection: Collection, ix, run_id: str | None) -> Figures:
    figures = Figures()
    pending = _pending_runs(collection, ix, run_id)
    if not pending:
        return figures
    # (url, digest) -> capture timestamps and one response holding the payload, for every run
    groups: dict[tuple[str, str], dict] = {}
    with HarvestState(collection.db_path) as state:
        for rid in pending:
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
        figures.runs = pending
        cache: dict[str, Payload | None] = {}
        docs: list[dict] = []
        with ix.searcher() as searcher:
            # responses first, so that a revisit of another URL's new payload finds it in the cache
            for (url, digest), group in sorted(groups.items(), key=lambda kv: kv[1]["response"] is None):
                existing = searcher.document(key=f"{url} {digest}")
                if existing is not None:
                    old = set(_captures_of(searcher, url, digest))
                    if group["ts"] <= old:
                        figures.unchanged += 1
                        continue
                    payload = Payload.from_stored(existing)
                    docs.append(_document(url, digest, payload, old | group["ts"]))
                    figures.updated += 1
                    continue
                payload = _payload_for(collection, state, searcher, digest, group, cache, figures)
                if payload is None:
                    figures.orphans += 1
                    continue
                if not indexable(url, payload.status):
                    continue
                docs.append(_document(url, digest, payload, group["ts"]))
    writer = ix.writer(limitmb=WRITER_LIMIT_MB)
    try:
        for doc in docs:
            writer.update_document(**doc)
        for rid in pending:
            writer.update_document(key=f"run:{rid}", kind="run")
        writer.commit()
    except BaseException:
        writer.cancel()
        raise
    _fsync_tree(collection.fulltext_dir)
    with ix.searcher() as searcher:
        figures.documents = searcher.doc_count() - len(indexed_runs(ix))
    return figures


def _captures_of(searcher, url: str, digest: str) -> list[str]:
    docnum = searcher.document_number(key=f"{url} {digest}")
    raw = searcher.reader().column_reader("captures")[docnum]
    return raw.decode().split() if raw else []


def _payload_for(collection: Collection, state: HarvestState, searcher, digest: str, group: dict,
                 cache: dict, figures: Figures) -> Payload | None:
    if digest in cache:
        figures.copied += 1
        return cache[digest]
    location = group["response"]
    if location is None:
        same = searcher.document(digest=digest)
        if same is not None:
            figures.copied += 1
            cache[digest] = Payload.from_stored(same)
            return cache[digest]
        location = _original_location(state, digest, group["refers"])
    if location is None:
        return None
    payload = _read_payload(collection, *location)
    if payload is not None:
        figures.parsed += 1
    cache[digest] = payload
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
            with open(collection.archive_dir / name, "rb") as fh:
                records = ArchiveIterator(fh)
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
    build = secrets.token_hex(8)
    tmp = collection.state_dir / f"fulltext.tmp-{build}"
    tmp.mkdir(parents=True)
    ix = index.create_in(str(tmp), schema())
    writer = ix.writer(limitmb=WRITER_LIMIT_MB)
    cache: dict[str, Payload | None] = {}
    cache_order: list[str] = []
    try:
        ordered = sorted(groups.items(), key=lambda kv: kv[1]["response"] or originals.get(kv[0][1]) or ("", 0))
        total, last = len(ordered), 0.0
        for done, ((url, digest), group) in enumerate(ordered, 1):
            location = group["response"] or originals.get(digest)
            if location is None:
                figures.orphans += 1
                continue
            if digest in cache:
                payload = cache[digest]
                figures.copied += 1
            else:
                payload = _read_payload(collection, *location)
                figures.parsed += 1
                cache[digest] = payload
                cache_order.append(digest)
                if len(cache_order) > 256:
                    cache.pop(cache_order.pop(0), None)
            if payload is None or not indexable(url, payload.status):
                continue
            writer.add_document(**_document(url, digest, payload, group["ts"]))
            figures.documents += 1
            if progress and (done == total or time.monotonic() - last > 0.5):
                last = time.monotonic()
                progress({"phase": "index", "done": done, "total": total})
        for run in runs:
            writer.add_document(key=f"run:{run}", kind="run")
        if progress:
            progress({"phase": "commit", "documents": figures.documents})
        writer.commit()
    except BaseException:
        writer.cancel()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (tmp / FORMAT_FILE).write_text(json.dumps({"format": FORMAT, "build": build}))
    _fsync_tree(tmp)
    figures.runs = runs
    _swap(collection, tmp)
    return figures


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

"""The full-text index rebuilt from the WARC files alone, into a new directory swapped in by rename."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from array import array
from collections.abc import Iterable, Iterator
from itertools import repeat
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from index.collection import Collection
from index.fulltext import rendered
from index.fulltext.captures import CaptureStore, write_table
from index.fulltext.documents import (
    FORMAT,
    FORMAT_FILE,
    POOL_BYTES,
    IndexUnusable,
    Payload,
    ProgressFn,
    indexable,
    make_document,
    schema,
)
from index.fulltext.mapfile import MappedStorage
from index.fulltext.payloads import MISSING, Figures, PayloadCache, read_payload
from index.fulltext.postings import BulkWriter
from index.fulltext.store import fsync_tree, write_lock
from index.integrity import recordscan
from strata.times import ts14_of


def rebuild(collection: Collection, progress: ProgressFn | None = None, wait: float = 10.0) -> dict:
    """Rebuild the collection's full-text index from its WARC files alone. Returns figures."""
    started = time.monotonic()
    with write_lock(collection, wait=wait):
        figures = rebuild_locked(collection, progress)
    figures.seconds = round(time.monotonic() - started, 3)
    return figures.as_dict()


def _scan(collection: Collection, progress: ProgressFn | None) -> tuple[dict, dict, list[str]]:
    """First pass, headers only: keys with timestamps, where payloads are, which runs wrote them."""
    groups: dict[tuple[str, str], dict] = {}
    originals: dict[str, tuple[str, int]] = {}  # digest -> first response holding it
    runs: list[str] = []
    files = collection.warc_files()
    for number, name in enumerate(files, 1):
        try:
            # a damaged file is read up to its damage (index.integrity.recordscan); an ARC record reads as a WARC one
            scan = recordscan.scan_prefix(collection.archive_dir / name, name)
            if scan.damage and progress:
                progress({"phase": "scan", "warning": str(scan.damage)})
            with recordscan.open_prefix(collection.archive_dir / name, None if scan.whole else scan.good_end) as fh:
                records = ArchiveIterator(fh, arc2warc=True)
                for record in records:
                    if record.rec_type == "warcinfo":
                        run = _warcinfo_run(record.content_stream().read(65536))
                        if run and run not in runs:
                            runs.append(run)
                    elif record.rec_type in ("response", "revisit", "resource"):
                        _scan_capture(record, name, records, groups, originals)
        except (OSError, EOFError, ValueError) as exc:
            # a torn file (crash): what was read before the tear is indexed; `strata recover` seals it
            if progress:
                progress({"phase": "scan", "warning": f"{name}: {type(exc).__name__}: {exc}"})
        if progress:
            progress({"phase": "scan", "files_done": number, "files": len(files), "documents": len(groups)})
    return groups, originals, runs


def _scan_capture(record, name: str, records: ArchiveIterator, groups: dict, originals: dict) -> None:
    """A response or revisit: its timestamp joins its (url, digest) key; a response is where that
    payload can be read. A page's rendered text (``urn:text:``, a resource or a revisit of one,
    ``index.fulltext.rendered``) counts as a payload of the page's URL."""
    headers = record.rec_headers
    url = headers.get_header("WARC-Target-URI") or ""
    page = rendered.page_of(url)
    if record.rec_type == "resource" and page is None:
        return
    url = page or url
    if record.rec_type == "response" and not headers.get_header("WARC-Payload-Digest"):
        recordscan.read_payload(record)
    digest = headers.get_header("WARC-Payload-Digest")
    if not url or not digest:
        return
    status = int(record.http_headers.get_statuscode() or 0) if record.http_headers else None
    if status == 304:
        status = None
    if not indexable(url, status):
        return
    group = groups.setdefault((url, digest), {"ts": set(), "response": None})
    group["ts"].add(ts14_of(headers.get_header("WARC-Date") or ""))
    if record.rec_type in ("response", "resource"):
        location = (name, records.get_record_offset())
        if group["response"] is None:
            group["response"] = location
        originals.setdefault(digest, location)


def _warcinfo_run(block: bytes) -> str | None:
    for line in block.decode("utf-8", "replace").splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() == "run-id":
            return value.strip() or None
    return None


def rebuild_locked(collection: Collection, progress: ProgressFn | None) -> Figures:
    figures = Figures(rebuilt=True)
    groups, originals, runs = _scan(collection, progress)
    _build(collection, _warc_documents(collection, groups, originals, figures, progress), runs, figures, progress)
    return figures


def _warc_documents(
    collection: Collection, groups: dict, originals: dict, figures: Figures, progress: ProgressFn | None
) -> Iterator[tuple[str, str, Payload, set[str]]]:
    """(url, digest, payload, capture timestamps) for every indexable key, payloads read in WARC order."""
    cache = PayloadCache()
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
        if payload is not MISSING:
            figures.copied += 1
        else:
            payload = read_payload(collection, *location)
            figures.parsed += 1
            cache.put(digest, payload)
        if payload is not None and indexable(url, payload.status):
            yield url, digest, payload, group["ts"]


def create(
    collection: Collection, documents: Iterable[tuple[str, str, Payload, Iterable[str]]], runs: Iterable[str] = ()
) -> dict:
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
        keys: list[str] = []
        # the captures as two arrays (12 bytes each; 2.6 million at a million documents)
        capture_docs, capture_stamps = array("I"), array("q")
        # one segment, its pool spilled to sorted runs when full (index.fulltext.runs)
        writer = BulkWriter(ix, merge=None)
        spilled = collection.state_dir / f"fulltext.runs-{build}"
        spilled.mkdir()
        try:
            for url, digest, payload, stamps in documents:
                docnum = len(keys)
                writer.add_document(**make_document(url, digest, payload))
                keys.append(f"{url} {digest}")
                capture_stamps.extend(map(int, stamps))
                capture_docs.extend(repeat(docnum, len(capture_stamps) - len(capture_docs)))
                if writer.pooled_bytes() > POOL_BYTES:
                    writer.spill(spilled)
            if progress:
                progress({"phase": "commit", "documents": len(keys)})
            writer.commit()
        except BaseException:
            if not writer.is_closed:
                writer.cancel()
            raise
        finally:
            shutil.rmtree(spilled, ignore_errors=True)
        if ix.doc_count_all() != len(keys):
            raise IndexUnusable(f"wrote {len(keys)} documents, the index holds {ix.doc_count_all()}")
        documents_written = len(keys)
        with CaptureStore(tmp) as store:
            store.add(enumerate(keys), zip(capture_docs, capture_stamps, strict=True), runs)
            del keys[:]  # in the store now: not held beside the table's sorting (110 MB at a million)
            write_table(store, (capture_docs, capture_stamps))
        (tmp / FORMAT_FILE).write_text(json.dumps({"format": FORMAT, "build": build}))
        fsync_tree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    figures.documents = figures.added = documents_written
    figures.captures = len(capture_docs)
    figures.runs = runs
    _swap(collection, tmp)


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

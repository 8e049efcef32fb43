"""Opening the full-text index (checked, memory-mapped), its single-writer lock, and what it holds."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from index.collection import Collection
from index.fulltext.captures import CaptureStore
from index.fulltext.documents import (
    CAPTURES_FILE,
    FORMAT,
    FORMAT_FILE,
    LOCK_WAIT,
    IndexUnusable,
    unpack_texts,
)
from index.fulltext.mapfile import MappedStorage
from index.fulltext.postings import read_postings
from strata.errors import CollectionBusy


def open_index(collection: Collection, check: bool = False, populate: bool = False):
    """The collection's Whoosh index, or None when it has none. ``check`` also reads from every
    segment; ``populate`` maps all its pages (for searching: ``index.fulltext.mapfile``). Raises
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
    return (
        f"the full-text index of {collection.name!r} cannot be used ({why}); "
        f"rebuild it from the WARC files with: strata index rebuild {collection.name}"
    )


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
                    if postings is None or not len(postings) or postings.ids[-1] >= count:
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
                        f"another process is writing the full-text index of {collection.name!r} (a rebuild, or "
                        "a harvest's indexer finishing its run in the background: `strata runs` says when search "
                        "has it); try again when it has finished"
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


def fsync_tree(path: Path) -> None:
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
            title, description, keywords, text, boilerplate = unpack_texts(parts[docnum])
            out[stored["key"]] = {
                "captures": captures.get(stored["key"], []),
                "title": title,
                "description": description,
                "keywords": keywords,
                "text": text,
                "boilerplate": boilerplate,
                "mime": stored.get("mime"),
                "size": stored.get("size"),
                "lang": stored.get("lang"),
                "author": stored.get("author"),
                "publisher": stored.get("publisher"),
                "published": stored.get("published"),
            }
    return out

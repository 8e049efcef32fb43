"""The captures of a collection: where its CDXJ lines are read from, for every surface that looks
captures up (replay and its timemaps, the CDX API, the banner, diff and ``/web/`` lists).

A collection's index is every ``*.cdxj`` file in ``<coll>/indexes/`` (as pywb reads the directory),
each an ``IndexPart``. On a root that uses Redis (``index.storage.backend``) the part for ``index.cdxj``, the
file Strata writes, is read from the collection's sorted set in Redis instead (``index.cdx.redis_cdx``:
the same lines, shared by every replay server at once), and from the file only when that set does
not exist or Redis cannot be reached. Other index files (``wb-manager``'s, placed by hand) are
never in Redis and are read from disk on either backend. Lines come out without their newline.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterator
from pathlib import Path

from index.cdx.redis_cdx import RedisCdx, shared_cdx
from index.collection import Collection
from index.storage.backend import backend_of

INDEX_SUFFIXES = (".cdxj",)


def index_files(collection: Collection) -> list[Path]:
    """The collection's index files, sorted by name."""
    if not collection.indexes_dir.is_dir():
        return []
    return sorted(p for p in collection.indexes_dir.iterdir() if p.name.endswith(INDEX_SUFFIXES) and p.is_file())


def root_cdx(root: Path) -> RedisCdx | None:
    """The Redis CDX reader of the root, or None on a root that uses SQLite."""
    backend = backend_of(root)
    return shared_cdx(backend.redis_url) if backend.kind == "redis" else None


@dataclasses.dataclass(frozen=True)
class IndexPart:
    """One part of a collection's index: a file, or (``redis`` set) the collection's Redis set with
    that file as its fallback."""

    path: Path
    coll: str
    redis: RedisCdx | None = None

    @classmethod
    def redis_set(cls, collection: Collection, redis: RedisCdx) -> IndexPart:
        """The part read from Redis: the lines of ``index.cdxj``, from the collection's set."""
        return cls(collection.cdxj_path, collection.name, redis)

    def lines(self, key: bytes, end_key: bytes) -> Iterator[bytes]:
        """The lines ``key <= line < end_key``, in order."""
        if self.redis is not None:
            found = self.redis.lines(self.coll, key, end_key)
            if found is not None:
                return iter(found)
        return _file_range(self.path, key, end_key)


def _file_range(path: Path, key: bytes, end_key: bytes) -> Iterator[bytes]:
    from pywb.utils.binsearch import iter_range  # pywb's utils patch nothing

    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return
    with fh:
        for line in iter_range(fh, key, end_key):
            yield line.rstrip(b"\r\n")


def index_parts(collection: Collection, redis: RedisCdx | None = None) -> list[IndexPart]:
    """Every part of the collection's index; ``index.cdxj`` read through ``redis`` when given."""
    parts = [IndexPart(p, collection.name) for p in index_files(collection) if p != collection.cdxj_path]
    if redis is not None:
        parts.append(IndexPart.redis_set(collection, redis))
    elif collection.cdxj_path.is_file():
        parts.append(IndexPart(collection.cdxj_path, collection.name))
    return sorted(parts, key=lambda part: part.path.name)


def capture_lines(collection: Collection, key: bytes, end_key: bytes) -> Iterator[bytes]:
    """THE lookup of a collection's captures: the lines ``key <= line < end_key`` of all its index
    parts (Redis or files, as its root says), merged in order."""
    parts = index_parts(collection, root_cdx(collection.root))
    return heapq.merge(*(part.lines(key, end_key) for part in parts))

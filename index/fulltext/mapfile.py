"""A Whoosh ``FileStorage`` that maps segment files into memory without copying them.

Whoosh 3 maps a compound segment file (``*.seg``) and hands out each part as a ``BufferFile``,
which wraps its slice of the map in a ``BytesIO``: a copy. Every reader opened copied the whole
postings and term files, 380 MB for 100,000 pages (``tracemalloc``), which made the first search
after each harvest take a second and the process's peak memory several times the index's
working set. Here ``CompoundStorage`` is given a file whose ``subset`` is a view of one shared
map, read in place.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from functools import partial
from io import SEEK_CUR, SEEK_END, SEEK_SET
from typing import BinaryIO, cast

import numpy as np
from whoosh.filedb.filestore import FileStorage
from whoosh.filedb.structfile import BufferFile, StructFile

__all__ = ["MappedStorage", "mapped_bytes"]


class MappedStorage(FileStorage):
    """``FileStorage`` whose compound segment files are read through one map each, in place.

    ``populate`` maps every page when a segment is opened (``MAP_POPULATE``). Searches used it (a
    page touched for the first time costs a fault), but then the process's RSS is the index's size
    (850 MB at 100,000 documents, 8 GB at a million) and the first query after start waits for the
    whole index to be read from disk (2 s at 100,000 documents with a cold page cache). Left off, a
    process holds the pages it has read; ``mapped_bytes`` says how many, and ``release_pages``
    drops them (``index.fulltext.whooshindex`` does so past ``MAPPED_LIMIT``)."""

    def __init__(self, path, readonly: bool = False, populate: bool = False):
        # without mmap, CompoundStorage asks the file for subset(): _MappedFile answers with views
        super().__init__(str(path), supports_mmap=False, readonly=readonly)
        self.populate = populate
        self._mapped: list[_MappedFile] = []

    def open_file(self, name, **kwargs):
        f = super().open_file(name, **kwargs)
        if name.endswith(".seg"):
            mapped = _MappedFile(f.file, name, self.populate)
            self._mapped.append(mapped)
            return mapped
        return f

    def release_pages(self) -> None:
        """Drop the pages read so far from this process's mappings (``MADV_DONTNEED``): they stay in
        the page cache, and a later read maps them again. For a reader that goes through the whole
        index once (an export), so that its RSS stays at what it holds, not what it has read."""
        for mapped in self._mapped:
            mapped.release_pages()


def mapped_bytes() -> int:
    """This process's resident pages that are backed by files (its maps of the index among them):
    the third field of ``/proc/self/statm``; 0 where there is none."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[2]) * mmap.PAGESIZE
    except (OSError, ValueError, IndexError):
        return 0


class _MappedFile(StructFile):
    """A compound file: read as usual for its directory, and mapped for its parts."""

    def __init__(self, fileobj, name: str, populate: bool = False):
        super().__init__(fileobj, name=name)
        flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if populate else 0)
        self._map = mmap.mmap(fileobj.fileno(), 0, flags=flags, prot=mmap.PROT_READ)

    def release_pages(self) -> None:
        if not self._map.closed and hasattr(mmap, "MADV_DONTNEED"):
            self._map.madvise(mmap.MADV_DONTNEED)

    def subset(self, position: int, length: int, name: str | None = None) -> BufferFile:
        view = memoryview(self._map)[position : position + length]
        return _ViewFile(view, name or self._name, partial(_will_need, self._map, position))

    def close(self) -> None:
        try:
            self._map.close()
        except BufferError:  # a part is still open somewhere: the map goes with the last view
            pass
        super().close()


def _will_need(mapped: mmap.mmap, base: int, positions: np.ndarray, lengths: np.ndarray) -> None:
    """Ask the kernel to read these ranges of the map ahead (``MADV_WILLNEED``), all at once:
    reads of scattered pages then overlap on the disk instead of waiting one by one (600
    documents' texts in a million, page cache empty: 1,058 ms read in turn, 8 ms advised).
    Ranges on the same or adjacent pages are advised as one."""
    if mapped.closed or not hasattr(mmap, "MADV_WILLNEED") or not len(positions):
        return
    page = mmap.PAGESIZE
    # as 64-bit numbers: a column's offsets may be 32-bit, and its segment file past 4 GB
    positions = np.asarray(positions, dtype=np.int64) + base
    lengths = np.maximum(np.asarray(lengths, dtype=np.int64), 1)
    first = positions // page
    last = (positions + lengths - 1) // page
    order = np.argsort(first, kind="stable")
    first, last = first[order], np.maximum.accumulate(last[order])
    breaks = np.flatnonzero(first[1:] > last[:-1] + 1) + 1  # a gap of a page or more
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks - 1, [len(first) - 1]))
    limit = len(mapped)
    for lo, hi in zip(first[starts].tolist(), last[ends].tolist(), strict=True):
        if lo * page >= limit:
            break
        mapped.madvise(mmap.MADV_WILLNEED, lo * page, min(limit, (hi + 1) * page) - lo * page)


class _ViewFile(BufferFile):
    """``BufferFile`` over a view of the map, with a file position that does not copy it.
    ``advise(positions, lengths)``: read these ranges of it ahead (``_will_need``)."""

    def __init__(self, buf: memoryview, name: str | None, advise: Callable[[np.ndarray, np.ndarray], None]):
        self._buf = buf
        self._name = name
        self.file = cast(BinaryIO, _ViewIO(buf))  # the part of a binary file StructFile uses
        self.onclose = None
        self.is_real = False
        self.is_closed = False
        self.advise = advise


class _ViewIO:
    """The part of ``BytesIO`` that ``StructFile`` and ``pickle.load`` use, over a memoryview."""

    def __init__(self, buf: memoryview):
        self._buf = buf
        self._pos = 0

    def read(self, size: int = -1) -> bytes:
        end = len(self._buf) if size is None or size < 0 else min(len(self._buf), self._pos + size)
        data = bytes(self._buf[self._pos : end])
        self._pos = end
        return data

    def readline(self, size: int = -1) -> bytes:
        end = len(self._buf) if size is None or size < 0 else min(len(self._buf), self._pos + size)
        at = self._pos
        while at < end:
            found = bytes(self._buf[at : min(end, at + 256)]).find(b"\n")
            if found >= 0:
                return self.read(at + found + 1 - self._pos)
            at += 256
        return self.read(end - self._pos)

    def readinto(self, target) -> int:
        data = self.read(len(target))
        target[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = SEEK_SET) -> int:
        base = {SEEK_SET: 0, SEEK_CUR: self._pos, SEEK_END: len(self._buf)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        pass

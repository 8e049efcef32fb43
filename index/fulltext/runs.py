"""Sorted runs of postings: a bulk build's full pool written to a temporary file, read back term
by term when the build's one segment is written.

A bulk build (``index.fulltext.rebuild``) puts every document into one segment, but holds only
``POOL_BYTES`` of postings in memory. It used to write each full pool as a Whoosh segment and
merge them all at the end, which wrote every document's stored fields and columns twice and built
a term dictionary per pool only to read it back (a third of a 300,000-document build, py-spy).
Now a full pool is written here instead, each field's terms in order, and the segment's postings
are the runs' merged (``index.fulltext.postings.BulkWriter``).

A run is one file of records, field after field, each field's terms in order:

    postings: uint32 | name length: uint32 | name (UTF-8) | ids: postings x uint32
    | impacts: postings x uint8 | counts: postings x uint16

in this machine's byte order (a run lives only as long as the build that wrote it). Where each
field begins is kept by the ``Run`` object, not in the file.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

__all__ = ["Run", "write_run"]

_RECORD = struct.Struct("=II")
_BUFFER = 1 << 18  # bytes read ahead per run (a final merge reads every run at once)


class Run:
    """A run file and where each of its fields begins: ``fields[name] = (offset, terms)``."""

    def __init__(self, path: Path, fields: dict[str, tuple[int, int]]):
        self.path, self.fields = path, fields

    def terms(self, name: str) -> Iterator[tuple[bytes, memoryview, memoryview, memoryview]]:
        """(term, ids, impacts, counts) of field ``name``, in term order: the arrays' bytes."""
        if name not in self.fields:
            return
        offset, count = self.fields[name]
        step = _RECORD.size
        with open(self.path, "rb", buffering=_BUFFER) as f:
            f.seek(offset)
            read, unpack = f.read, _RECORD.unpack
            for _ in range(count):
                k, n = unpack(read(step))
                data = memoryview(read(n + 7 * k))
                if len(data) != n + 7 * k:
                    raise ValueError(f"{self.path.name}: a run cut short")
                yield bytes(data[:n]), data[n : n + 4 * k], data[n + 4 * k : n + 5 * k], data[n + 5 * k :]

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def write_run(
    path: Path, fields: Iterable[tuple[str, list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
) -> Run:
    """Write ``fields`` ((name, terms in order, bounds, ids, impacts, counts): the postings of
    ``terms[t]`` at ``bounds[t]:bounds[t + 1]`` of the three arrays) to a new run at ``path``."""
    toc: dict[str, tuple[int, int]] = {}
    with open(path, "xb", buffering=1 << 20) as f:
        write = f.write
        offset = 0
        for name, terms, bounds, ids, impacts, counts in fields:
            toc[name] = (offset, len(terms))
            iv, pv, cv = (a.data.cast("B") for a in (ids, impacts, counts))
            at = bounds.tolist()
            pack, join = _RECORD.pack, b"".join
            for t, term in enumerate(terms):
                a, b = at[t], at[t + 1]
                btext = term.encode("utf-8")
                write(join((pack(b - a, len(btext)), btext, iv[4 * a : 4 * b], pv[a:b], cv[2 * a : 2 * b])))
            offset = f.tell()
    return Run(path, toc)

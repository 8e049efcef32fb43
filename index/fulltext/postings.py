"""Strata's posting lists inside Whoosh segments, written and read a whole list at a time.

Whoosh 3 stores a term's postings in blocks of 128, each a zlib-compressed pickle, and moves every
posting through Python objects on the way in (a sorting pool) and out (a matcher). A CJK bigram
analysis gives about 1,100 postings per page, ten times Whoosh's default analyzer, so that path
indexed 31 pages/s, and a query over a term found in 96,000 documents spent 80 ms decoding it
before scoring one (``bench/search_bench.py``).

Here a term's posting list is three arrays, each written and read by one C call:

    b"SPL3" | n: uint32 | c: uint32 | docnums: n x uint32 | impacts: n x uint8 | counts
    counts: c bytes of zlib over n x uint16, or (c = 0) the n x uint16 themselves (little-endian)

- ``docnum``: the segment's document number, ascending;
- ``impact``: the posting's BM25 term-frequency factor, quantised to 1..255 when the document is
  indexed (its length normalised against a fixed ``REFERENCE_LENGTH``, so it never changes); a
  query's score is the sum of ``idf x impact`` over its terms (``index.fulltext.matching``);
- ``count``: occurrences in the document, boosts included (Whoosh's weight).

The pool keeps each posting's term number and ``impact << 16 | count`` in flat arrays (appended in
C, no Python step per posting); when written, numpy sorts them into term order and the three
arrays (``_FieldPool.sorted``); a bulk build spills full pools to sorted runs on disk
(``index.fulltext.runs``) and merges them into one segment. A search reads the document
numbers and impacts in place and never the counts (Whoosh's weights, used by merges and Whoosh's
own matchers), which are mostly 1 and compressed: 5.6 bytes a posting where the packed form took
8, which made the postings three quarters of the index (``bench/search_bench.py --synthetic``).

No positions: phrases are checked against the stored text of the few candidates ranked
(``index.fulltext.cjk.phrase_in``). Positions cost more to build than everything else per token.

It stays a Whoosh index: segments, stored fields, columns, term dictionary and table of contents
are Whoosh 3's own; ``StrataCodec`` (recorded in each segment) gives Whoosh's queries a
``ListMatcher`` over these arrays, so ``searcher.search(wq.Term(...))`` still works; and
``BulkWriter`` is a ``SegmentWriter``, with its lock and its commit by renaming a new TOC.

``BulkWriter`` keeps document numbers stable: documents are only ever appended (a document is one
immutable payload of a URL), and a commit merges only a tail of small segments, their documents
first. ``index.fulltext.captures`` keys capture dates by these numbers.
"""

from __future__ import annotations

import heapq
import math
import re
import secrets
import struct
import sys
import zlib
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from itertools import count, groupby, repeat
from operator import itemgetter, lshift, or_
from pathlib import Path

import numpy as np
from whoosh import analysis, columns, fields, formats
from whoosh.codec.whoosh3 import W3Codec, W3TermInfo
from whoosh.filedb.filestore import FileStorage
from whoosh.filedb.filetables import OrderedHashWriter
from whoosh.filedb.filetables import _lengths as _LENGTHS
from whoosh.matching import ListMatcher
from whoosh.reading import SegmentReader, TermNotFound
from whoosh.system import pack_ushort
from whoosh.util.numeric import length_to_byte
from whoosh.writing import SegmentWriter

from index.fulltext.cjk import CJKBigramAnalyzer, content_weights, is_cjk
from index.fulltext.runs import Run, write_run

__all__ = ["BulkWriter", "CharTerms", "Content", "Postings", "StrataCodec", "read_postings"]

MAGIC = b"SPL3"
_HEAD = struct.Struct("<II")  # postings, bytes of the compressed counts (0: stored as they are)
_COMPRESS_COUNTS = 32  # postings from which the counts are compressed
_LITTLE = sys.byteorder == "little"

K1, B = 1.2, 0.75
REFERENCE_LENGTH = 1000  # tokens: the "average document length" impacts are normalised to
MAX_COUNT = 65535  # occurrences of a term in a document that are counted
TERMS_CHUNK = 1 << 20  # bytes of a merged segment's term dictionary read at a time
MAX_MERGE_DOCS = 200_000  # a segment this large is never merged again by BulkWriter's tail policy

# a term's statistics as Whoosh 3 stores them (W3TermInfo.to_bytes), then the list's offset and length
_TERMINFO = struct.Struct(W3TermInfo._struct.format + "qi")
assert W3TermInfo._struct.format in ("!BfIBBfII", b"!BfIBBfII"), "Whoosh 3's term info layout changed"
_MINLEN, _MAXLEN = length_to_byte(1), length_to_byte(0x7FFFFFFF)  # field lengths are not tracked per term


# -- the field type --------------------------------------------------------------------------------


class Content(fields.FieldType):
    """The searchable text of a document, given as ``((text, boost), ...)`` parts (title, meta
    description, keywords, body): the terms of ``CJKBigramAnalyzer`` with weights
    (``index.fulltext.cjk.content_weights``), indexed by ``BulkWriter``. Not stored, no positions.

    ``chars`` names a ``CharTerms`` field that ``BulkWriter`` fills from this one."""

    def __init__(self, chars: str | None = None):
        # whoosh's annotation asks for an Analyzer; a Tokenizer is a one-stage one (whoosh's own fields pass them)
        super().__init__(formats.Frequency(field_boost=1.0), CJKBigramAnalyzer(), scorable=True)  # type: ignore[arg-type]
        self.chars = chars

    def index(self, value, **kwargs):
        # Whoosh's own writers come here (Strata's do not): the same terms, counts in whole units
        weights, _ = content_weights(_parts(value))
        for term, w2 in weights.items():
            count = max(1, w2 // 2)
            yield term.encode("utf-8"), count, float(count), formats.pack_uint(count)


class CharTerms(fields.FieldType):
    """Every CJK character of a ``Content`` field, wherever it is, with its occurrences: a
    one-character query is one term. ``BulkWriter`` derives it when it writes a segment: the
    documents of ``X`` are those of the terms ``X`` (the character ending a run) and ``XY`` (the
    bigrams it starts), and its occurrences theirs added up. Computed per term list, that costs a
    tenth of counting characters document by document (measured on issue 2's site)."""

    def __init__(self):
        # whoosh's annotation asks for an Analyzer; a Tokenizer is a one-stage one (whoosh's own fields pass them)
        super().__init__(formats.Frequency(field_boost=1.0), CJKBigramAnalyzer())  # type: ignore[arg-type]

    def index(self, value, **kwargs):
        raise ValueError("a CharTerms field is filled by index.fulltext.postings.BulkWriter from its Content field")


_ID = analysis.IDAnalyzer()
_KEYWORDS = analysis.KeywordAnalyzer(lowercase=True)
_SPACE_SEPARATED = re.compile(r"[^ \t\r\n]+")  # whoosh.analysis.SpaceSeparatedTokenizer


def _simple_terms(field: fields.FieldType, value) -> dict[str, int] | None:
    """The terms of an ``ID`` or lowercase ``KEYWORD`` field with Whoosh's default analyzer,
    without its ``Token`` objects (15 µs a field); None for any other field."""
    if not isinstance(value, str):
        return None
    if type(field) is fields.ID and field.analyzer == _ID:
        return {value: 1}
    if type(field) is fields.KEYWORD and field.analyzer == _KEYWORDS:
        return Counter(_SPACE_SEPARATED.findall(value.lower()))
    return None


def _parts(value) -> list[tuple[str, float]]:
    return [(value, 1.0)] if isinstance(value, str) else [(t or "", float(b)) for t, b in value]


# -- encoding --------------------------------------------------------------------------------------


def _tobytes(a: array) -> bytes:
    if not _LITTLE:
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def _frombytes(typecode: str, data) -> array:
    a = array(typecode)
    a.frombytes(data)
    if not _LITTLE:
        a.byteswap()
    return a


def _native(typecode: str, data: bytes | memoryview) -> array:
    """An array of numpy's bytes (in this machine's order)."""
    a = array(typecode)
    a.frombytes(data)
    return a


def _rebase_ids(ids: array, base: int) -> array:
    """``ids`` plus ``base``, each: one addition of two integers as long as the list (its bytes,
    and ``base`` repeated), in C. Document numbers stay below 2**32, so no carry crosses from one
    to the next. A ``map`` over the postings took 40 ns each, a seventh of a bulk build's merge."""
    n = len(ids)
    total = int.from_bytes(_tobytes(ids), "little") + int.from_bytes(base.to_bytes(4, "little") * n, "little")
    return _frombytes("I", total.to_bytes(4 * n, "little"))


def encode(p: Postings) -> bytes:
    n = len(p)
    zcounts = p._zcounts
    if zcounts is None and n >= _COMPRESS_COUNTS:
        zcounts = zlib.compress(_tobytes(p.counts), 1)
        if len(zcounts) >= 2 * n:
            zcounts = None
    counts = zcounts if zcounts is not None else _tobytes(p.counts)
    return b"".join((MAGIC, _HEAD.pack(n, len(zcounts or b"")), _tobytes(p.ids), p.impacts, counts))


def decode(data) -> Postings:
    if bytes(data[:4]) != MAGIC:
        raise ValueError("not a Strata posting list")
    n, clen = _HEAD.unpack_from(data, 4)
    at = 4 + _HEAD.size
    ids = _frombytes("I", data[at : at + 4 * n])
    at += 4 * n
    impacts = bytes(data[at : at + n])
    at += n
    if clen:
        zcounts: bytes | None = bytes(data[at : at + clen])
        counts, complete = None, len(zcounts or b"") == clen
    else:
        zcounts, counts = None, _frombytes("H", data[at : at + 2 * n])
        complete = len(counts) == n
    if len(ids) != n or len(impacts) != n or not complete:
        raise ValueError("a Strata posting list cut short")
    return Postings(ids=ids, impacts=impacts, counts=counts, zcounts=zcounts)


def pack(ids: Iterable[int], impacts: Iterable[int], counts: Iterable[int]) -> array:
    return array("Q", map(or_, map(lshift, ids, repeat(32)), map(or_, map(lshift, impacts, repeat(16)), counts)))


class Postings:
    """One term's postings (in one segment, or several joined): document numbers (``ids``, an
    array), impacts (bytes, one a posting) and counts (an array, decompressed when first asked
    for: searches never do). Made from the pool's packed postings (``docnum << 32 | impact << 16
    | count``), or from the three parts as stored; ``packed`` gives the first form in any case."""

    __slots__ = ("_packed", "_ids", "_impacts", "_counts", "_zcounts", "_parts")

    def __init__(
        self,
        packed: array | None = None,
        ids: array | None = None,
        impacts: bytes | None = None,
        counts: array | None = None,
        zcounts: bytes | None = None,
        parts: list[Postings] | None = None,
    ):
        self._packed, self._ids, self._impacts = packed, ids, impacts
        self._counts, self._zcounts, self._parts = counts, zcounts, parts

    def __len__(self) -> int:
        return len(self._packed) if self._packed is not None else len(self.ids)

    @property
    def ids(self) -> array:
        if self._ids is None:
            assert self._packed is not None
            self._ids = _frombytes("I", _tobytes(self._packed))[1::2]
        return self._ids

    @property
    def impacts(self) -> bytes:
        if self._impacts is None:
            assert self._packed is not None
            self._impacts = _tobytes(self._packed)[2::8]
        return self._impacts

    @property
    def counts(self) -> array:
        if self._counts is None:
            if self._packed is not None:
                self._counts = _frombytes("H", _tobytes(self._packed))[0::4]
            elif self._parts is not None:
                self._counts = array("H")
                for part in self._parts:
                    self._counts.extend(part.counts)
            else:
                assert self._zcounts is not None
                self._counts = _frombytes("H", zlib.decompress(self._zcounts))
        return self._counts

    @property
    def packed(self) -> array:
        if self._packed is None:
            self._packed = pack(self.ids, self.impacts, self.counts)
        return self._packed

    def rebased(self, base: int) -> Postings:
        if not base:
            return self
        counts = self.counts if self._packed is not None else self._counts
        return Postings(
            ids=_rebase_ids(self.ids, base),
            impacts=self.impacts,
            counts=counts,
            zcounts=self._zcounts,
            parts=self._parts,
        )

    @classmethod
    def join(cls, parts: list[Postings]) -> Postings:
        """Lists over consecutive ranges of documents, in order, as one."""
        if len(parts) == 1:
            return parts[0]
        ids = array("I")
        for p in parts:
            ids.extend(p.ids)
        return cls(ids=ids, impacts=b"".join(p.impacts for p in parts), parts=parts)


def _extent(terminfo) -> tuple[int, int]:
    offset, length = terminfo.extent()
    return offset, length[0] if isinstance(length, tuple) else length  # Whoosh reads it back as a tuple


def read_postings(leaf_reader, fieldname: str, btext: bytes, terminfo=None) -> Postings | None:
    """A term's postings in one segment (a ``SegmentReader``), or None when it lacks the term."""
    terms = leaf_reader._terms
    if terminfo is None:
        try:
            terminfo = terms.term_info(fieldname, btext)
        except TermNotFound:
            return None
    if not terminfo.is_inlined():
        offset, length = _extent(terminfo)
        data = terms._postfile.get(offset, length)
        if bytes(data[:4]) == MAGIC:
            return decode(data)
    # a list in Whoosh's own format (not written by BulkWriter): read it posting by posting
    ids, counts = [], []
    m = leaf_reader.postings(fieldname, btext)
    while m.is_active():
        ids.append(m.id())
        counts.append(min(MAX_COUNT, max(1, int(m.weight()))))
        m.next()
    return Postings(pack(ids, repeat(255), counts))


class StrataCodec(W3Codec):
    """Whoosh 3's codec, reading the posting lists ``BulkWriter`` writes."""

    def postings_reader(self, dbfile, terminfo, format_, term=None, scorer=None):
        if not terminfo.is_inlined():
            offset, length = _extent(terminfo)
            if dbfile.get(offset, 4) == MAGIC:
                p = decode(dbfile.get(offset, length))
                counts = p.counts
                values = [formats.pack_uint(c) for c in counts] if format_.supports("frequency") else None
                return ListMatcher(
                    p.ids, array("f", counts), values, format_, scorer=scorer, term=term, terminfo=terminfo
                )
        return super().postings_reader(dbfile, terminfo, format_, term=term, scorer=scorer)


# -- impacts ---------------------------------------------------------------------------------------

_LENGTH_STEPS = 8  # length classes per doubling (a 9% step in document length)
_MAX_W2 = 511  # weights, in half units, above this count as this
_ROW = _MAX_W2 + 1


def length_class(length: int) -> int:
    return int(math.log2(1 + length) * _LENGTH_STEPS)


def impact_row(cls: int) -> list[int]:
    """Quantised BM25 tf factors, 1..255, for weights 0, 0.5, 1.0 ... in a document of length
    class ``cls`` (index: the weight in half units)."""
    length = 2 ** ((cls + 0.5) / _LENGTH_STEPS) - 1
    norm = K1 * (1 - B + B * length / REFERENCE_LENGTH)
    return [max(1, min(255, round(255 * (w / 2) / (w / 2 + norm)))) for w in range(_ROW)]


class _Impacts:
    """``impact << 16 | count`` for every weight (in half units), per length class in use: a
    document's postings get both by one ``map`` over its weights."""

    def __init__(self):
        self.rows: dict[int, list[int]] = {}

    def row_of_class(self, cls: int) -> list[int]:
        row = self.rows.get(cls)
        if row is None:
            row = self.rows[cls] = [
                impact << 16 | min(MAX_COUNT, (w2 + 1) // 2) for w2, impact in enumerate(impact_row(cls))
            ]
        return row

    def of(self, cls: int, w2s) -> Iterator[int]:
        """``impact << 16 | count`` for weights ``w2s`` (a sized collection) in a document of
        length class ``cls``."""
        row = self.row_of_class(cls)
        if w2s and max(w2s) > _MAX_W2:
            w2s = map(min, w2s, repeat(_MAX_W2))
        return map(row.__getitem__, w2s)

    def lows(self, classes: np.ndarray, w2s: np.ndarray) -> np.ndarray:
        """``impact << 16 | count`` of each weight ``w2s[i]`` (at most ``_MAX_W2``) in a document of
        length class ``classes[i]``, as uint32."""
        used = np.unique(classes)
        table = np.array([self.row_of_class(int(c)) for c in used], dtype=np.uint32)
        return table[np.searchsorted(used, classes), w2s]


# -- writing ---------------------------------------------------------------------------------------


class _Sorted:
    """Postings in term order: ``names`` (sorted), and the postings of ``names[t]`` at
    ``bounds[t]:bounds[t + 1]`` of ``ids`` (uint32, ascending per term), ``impacts`` (uint8) and
    ``counts`` (uint16)."""

    __slots__ = ("names", "bounds", "ids", "impacts", "counts")

    def __init__(self, names: list[str], bounds: np.ndarray, ids: np.ndarray, impacts: np.ndarray, counts: np.ndarray):
        self.names, self.bounds, self.ids, self.impacts, self.counts = names, bounds, ids, impacts, counts

    def __len__(self) -> int:
        return len(self.ids)

    def sorted_postings(self) -> Iterator[tuple[bytes, Postings]]:
        ids, impacts, counts = (a.data.cast("B") for a in (self.ids, self.impacts, self.counts))
        bounds = self.bounds.tolist()
        for t, name in enumerate(self.names):
            a, b = bounds[t], bounds[t + 1]
            p = Postings(
                ids=_native("I", ids[4 * a : 4 * b]),
                impacts=bytes(impacts[a:b]),
                counts=_native("H", counts[2 * a : 2 * b]),
            )
            yield name.encode("utf-8"), p


_CHUNK_BITS = 19
_SORT_CHUNK = 1 << _CHUNK_BITS  # postings sorted at a time (its working arrays: about 60 bytes a posting)


class _FieldPool:
    """A field's postings for the new documents, in the order they came: each posting's term (a
    number: its first-seen order in ``terms``) and ``impact << 16 | count``, and each document's
    number, length class and end (in the postings). One look-up and two array appends a posting,
    all in C; the postings are put in term order once, by one sort (``sorted``). An array per term,
    appended to posting by posting, took a quarter of a bulk build (py-spy, 300,000 documents)."""

    def __init__(self):
        self.terms: dict[str, int] = defaultdict(count().__next__)
        self.tids = array("I")
        self.lows = array("I")
        self.docs = array("I")
        self.classes = array("B")
        self.ends = array("q")
        self.size = 0
        self._sorted: _Sorted | None = None

    def __len__(self) -> int:
        return self.size

    def add(self, docnum: int, terms: list[str], lows: Iterable[int], cls: int = 0) -> None:
        """``terms`` (distinct) with their ``impact << 16 | count``, in the same order; ``cls``:
        the document's length class (for its ``CharTerms``)."""
        if self._sorted is not None:
            raise ValueError("this pool has been sorted")
        tids = self.tids
        tids.extend(map(self.terms.__getitem__, terms))
        self.lows.extend(lows)
        self.docs.append(docnum)
        self.classes.append(cls)
        self.ends.append(len(tids))
        self.size = len(tids)

    def sorted(self) -> _Sorted:
        """The postings in term order, then document order. The pool's own arrays are let go as
        they are used (its memory is at its highest here): no document can be added after this."""
        if self._sorted is not None:
            return self._sorted
        terms = self.terms
        names = sorted(terms)
        n, m = len(names), len(self.tids)
        if m >= 1 << 32:
            raise ValueError("a pool of postings is limited to 2**32 postings")
        rank = np.empty(n, dtype=np.int64)
        rank[np.fromiter(map(terms.__getitem__, names), dtype=np.int64, count=n)] = np.arange(n)
        self.terms = {}
        tids, lows = np.frombuffer(self.tids, dtype=np.uint32), np.frombuffer(self.lows, dtype=np.uint32)
        docs, ends = np.frombuffer(self.docs, dtype=np.uint32), np.frombuffer(self.ends, dtype=np.int64)
        bounds = np.zeros(n + 1, dtype=np.int64)
        for at in range(0, m, _SORT_CHUNK):
            bounds[1:] += np.bincount(rank[tids[at : at + _SORT_CHUNK]], minlength=n)
        np.cumsum(bounds, out=bounds)
        # each posting put in its place (the next free one of its term's range), a chunk at a time:
        # the chunk sorted by (rank, posting number) as one 64-bit key (numpy's sort is several
        # times its argsort), so the working arrays are the chunk's, not the pool's
        ids, impacts, counts = np.empty(m, np.uint32), np.empty(m, np.uint8), np.empty(m, np.uint16)
        free = bounds[:-1].copy()
        begins = np.concatenate(([0], ends[:-1]))
        for at in range(0, m, _SORT_CHUNK):
            key = rank[tids[at : at + _SORT_CHUNK]]
            size = len(key)
            key <<= _CHUNK_BITS
            key |= np.arange(size)
            key.sort()
            ranks, posting = key >> _CHUNK_BITS, key & (_SORT_CHUNK - 1)
            posting += at
            del key
            first = np.flatnonzero(np.concatenate(([True], ranks[1:] != ranks[:-1])))
            runs = np.diff(np.append(first, size))
            place = free[ranks] + (np.arange(size) - np.repeat(first, runs))
            free[ranks[first]] += runs
            # the chunk's postings' documents: those whose postings overlap it, each repeated
            lo, hi = np.searchsorted(ends, [at, at + size - 1], side="right")
            spans = np.minimum(ends[lo : hi + 1], at + size) - np.maximum(begins[lo : hi + 1], at)
            ids[place] = np.repeat(docs[lo : hi + 1], spans)[posting - at]
            low = lows[posting]
            impacts[place] = low >> 16
            counts[place] = low & 0xFFFF
        del tids, lows
        self.tids, self.lows = array("I"), array("I")
        self._sorted = _Sorted(names, bounds, ids, impacts, counts)
        return self._sorted

    def sorted_postings(self) -> Iterator[tuple[bytes, Postings]]:
        return self.sorted().sorted_postings()


class _CharPool:
    """The ``CharTerms`` postings of a ``Content`` pool's documents (see ``CharTerms``), made when
    they are written: a CJK character's documents are those of the terms it starts, its
    occurrences theirs added up, its impact of that sum in the document's length class."""

    def __init__(self, content: _FieldPool, impacts: _Impacts):
        self.content, self.impacts = content, impacts

    def __len__(self) -> int:
        return len(self.content)

    def sorted_postings(self) -> Iterator[tuple[bytes, Postings]]:
        return self.sorted().sorted_postings()

    def sorted(self) -> _Sorted:
        """The terms starting with a character are together in term order, so its postings are
        one range of the sorted ones. They are taken a run of characters at a time (about
        ``_SORT_CHUNK`` postings), and one sort puts a run's in (character, document) order, the
        counts carried in the key's low bits."""
        s = self.content.sorted()
        chars: list[str] = []
        starts: list[int] = []
        for t, name in enumerate(s.names):
            if not chars or name[0] != chars[-1]:
                chars.append(name[0])
                starts.append(t)
        kept = [i for i, char in enumerate(chars) if is_cjk(char)]
        of_char = np.full(len(chars), -1, dtype=np.int64)
        of_char[kept] = np.arange(len(kept))
        pstarts = s.bounds[starts + [len(s.names)]].tolist()  # each character's first posting, and the end
        content_docs = np.frombuffer(self.content.docs, dtype=np.uint32)
        content_classes = np.frombuffer(self.content.classes, dtype=np.uint8)
        ids, impacts, counts = [], [], []
        per_char = np.zeros(len(kept), dtype=np.int64)
        g = 0
        while g < len(chars):
            h = g + 1
            while h < len(chars) and h - g < 0xFFFF and pstarts[h + 1] - pstarts[g] <= _SORT_CHUNK:
                h += 1
            a, b = pstarts[g], pstarts[h]
            char = np.repeat(of_char[g:h], np.diff(pstarts[g : h + 1]))
            mask = char >= 0
            if mask.any():
                first = int(char[mask][0])
                key = (char[mask] - first).astype(np.uint64) << np.uint64(48)
                key |= s.ids[a:b][mask].astype(np.uint64) << np.uint64(16)
                key |= s.counts[a:b][mask]
                key.sort()
                pair = key >> np.uint64(16)
                at = np.flatnonzero(np.concatenate(([True], pair[1:] != pair[:-1])))
                sums = np.add.reduceat((key & np.uint64(0xFFFF)).astype(np.int64), at)
                pair = pair[at]
                docs = (pair & np.uint64(0xFFFFFFFF)).astype(np.uint32)
                classes = content_classes[np.searchsorted(content_docs, docs)]
                lows = self.impacts.lows(classes, np.minimum(sums * 2, _MAX_W2))
                ids.append(docs)
                impacts.append((lows >> 16).astype(np.uint8))
                counts.append((lows & 0xFFFF).astype(np.uint16))
                per_char[first:] += np.bincount((pair >> np.uint64(32)).astype(np.int64), minlength=len(kept) - first)
            g = h
        bounds = np.zeros(len(kept) + 1, dtype=np.int64)
        np.cumsum(per_char, out=bounds[1:])
        joined = (
            np.concatenate(parts) if parts else np.zeros(0, t)
            for parts, t in ((ids, np.uint32), (impacts, np.uint8), (counts, np.uint16))
        )
        return _Sorted([chars[i] for i in kept], bounds, *joined)


class BulkWriter(SegmentWriter):
    """A Whoosh ``SegmentWriter`` that analyses ``Content`` fields with ``content_weights``,
    pools postings per term in arrays of packed postings and writes each array as it is.

    ``merge``: ``"tail"`` merges into the new segment, walking back from the last segment, each
    segment no larger than the documents gathered so far (``expected``, the documents about to be
    added, to begin with): a binary counter, so there are O(log n) segments and a document is
    copied O(log n) times; ``"all"`` merges every segment (after a bulk build); ``None`` none.
    Merged documents come first in the new segment: every document keeps its number."""

    # The pools replace SegmentWriter's PostingPool: its uses of it are in methods overridden here
    # (add_document, add_reader, _flush_segment) but for _close_segment's cleanup(), which _Pools has.
    pool: _Pools  # type: ignore[assignment]

    def __init__(self, ix, expected: int = 0, merge: str | None = "tail", **kwargs):
        super().__init__(ix, codec=StrataCodec(), **kwargs)
        self.pool = _Pools()
        self._sources: list[tuple[SegmentReader, int]] = []
        self._runs: list[Run] = []
        self._kept = list(self.segments)
        if merge == "all":
            self._merge(self.segments if len(self.segments) > 1 else [])
        elif merge == "tail":
            self._merge(self._tail(expected))
        elif merge is not None:
            raise ValueError(f"merge must be 'tail', 'all' or None, not {merge!r}")

    def pooled_bytes(self) -> int:
        """An estimate of the pool's memory at its largest, when it is sorted to be written: 16
        bytes a posting (8 held, 7 of the sorted arrays, and the sort's working arrays), 120 a term
        (its string and dictionary slot). Measured at 40,000 documents of issue 2's site: RSS at
        most 240 MB, against 200 MB before (an array a term, 12 bytes a posting, no sort)."""
        fields = self.pool.fields.values()
        # (CharTerms pools, made when the segment is flushed, are never here)
        return 16 * sum(map(len, fields)) + 120 * sum(len(f.terms) for f in fields if isinstance(f, _FieldPool))

    # documents

    def add_document(self, **values):
        self._check_state()
        schema, docnum, pdw, pool = self.schema, self.docnum, self.perdocwriter, self.pool
        pdw.start_doc(docnum)
        for name in sorted(values):
            value = values[name]
            if value is None or name.startswith("_"):
                continue
            field = schema[name]
            length = 0
            if isinstance(field, Content):
                weights, length = content_weights(_parts(value))
                cls = length_class(length)
                pool.field(name).add(docnum, list(weights), pool.impacts.of(cls, weights.values()), cls)
                value = None
            elif field.indexed:
                terms = _simple_terms(field, value)
                if terms is None:
                    terms = Counter()
                    for btext, freq, _, _ in field.index(value):
                        terms[btext.decode("utf-8")] += freq
                pool.field(name).add(
                    docnum, list(terms), map(or_, repeat(255 << 16), map(min, terms.values(), repeat(MAX_COUNT)))
                )
                if field.scorable:
                    length = sum(terms.values())
            pdw.add_field(name, field, value if field.stored else None, length)
            if field.column_type and value is not None:
                pdw.add_column_value(name, field.column_type, field.to_column_value(value))
        pdw.finish_doc()
        self._added = True
        self.docnum += 1

    def add_reader(self, reader):
        raise NotImplementedError("BulkWriter merges segments itself (see _merge)")

    def write_per_doc(self, fieldnames, reader):
        """``SegmentWriter.write_per_doc`` for a segment without deletions or vectors (``_merge``
        checks), each field's length and column reader found once: Whoosh's asked the file system
        whether a field's length column exists, for every field of every document (a stat each,
        6% of a bulk build)."""
        schema, pdw = self.schema, self.perdocwriter
        perdoc = reader._perdoc
        fields = []
        for name in sorted(fieldnames):
            field = schema[name]
            column = None
            if field.column_type and reader.has_column(name):
                column = reader.column_reader(name, field.column_type)
                if isinstance(column, columns.TranslatingColumnReader):
                    column = column.raw_column()
            fields.append((name, field, perdoc.doc_field_length_reader(name), column))
        for docnum, stored in reader.iter_docs():
            pdw.start_doc(self.docnum)
            for name, field, length_of, column in fields:
                pdw.add_field(name, field, stored.get(name), length_of(docnum))
                if column is not None:
                    pdw.add_column_value(name, field.column_type, column[docnum])
            pdw.finish_doc()
            self.docnum += 1
        return None

    # merging

    def _tail(self, expected: int) -> list:
        gathered, tail = max(1, expected), []
        for segment in reversed(self.segments):
            size = segment.doc_count_all()
            if size > gathered or size > MAX_MERGE_DOCS:
                break
            tail.append(segment)
            gathered += size
        return tail[::-1] if len(tail) > 1 or (tail and expected) else []

    def _merge(self, segments: list) -> None:
        if not segments:
            return
        self._kept = self.segments[: len(self.segments) - len(segments)]
        names = set(self.schema.names())
        # read without mmap: a merge reads every page once, and mapped pages count in the process's RSS
        storage = (
            FileStorage(self.storage.folder, supports_mmap=False)
            if isinstance(self.storage, FileStorage)
            else self.storage
        )
        for segment in segments:
            if segment.has_deletions():
                raise ValueError("BulkWriter cannot merge a segment with deleted documents")
            reader = SegmentReader(storage, self.schema, segment)
            if any(reader.has_vector(0, name) for name in names if self.schema[name].vector):
                raise ValueError("BulkWriter cannot merge a segment with term vectors")
            base = self.docnum
            self.write_per_doc(names, reader)
            self._sources.append((reader, base))
        self._added = True

    # SegmentWriter.commit's own signature, which whoosh's IndexWriter annotation (**kwargs) does not allow
    def commit(self, mergetype=None, optimize=None, merge=None):  # type: ignore[override]
        kept = self._kept
        super().commit(mergetype=lambda writer, segments: list(kept))

    def spill(self, folder: Path) -> None:
        """Write the pool's postings to a new run in ``folder`` and empty the pool, without ending
        the segment (``index.fulltext.runs``): a bulk build's way of holding a bounded pool. The
        runs are merged into the segment when it is written, and removed with it."""
        pools = self._chars_pooled()
        path = folder / f"run-{secrets.token_hex(4)}-{len(self._runs):05d}"

        def sorted_fields():
            for name in sorted(pools):
                s = pools[name].sorted()
                yield name, s.names, s.bounds, s.ids, s.impacts, s.counts
                del pools[name]  # its memory goes before the next field's sort

        self._runs.append(write_run(path, sorted_fields()))
        self.pool = _Pools()

    def _chars_pooled(self) -> dict[str, _FieldPool | _CharPool]:
        """The pool's fields, with each ``Content`` field's ``CharTerms`` (made from it)."""
        pools = self.pool.fields
        for name, field in self.schema.items():
            if isinstance(field, Content) and field.chars and name in pools:
                pools[field.chars] = _CharPool(self.pool.field(name), self.pool.impacts)
        return pools

    def _close_segment(self):
        super()._close_segment()
        for run in self._runs:
            run.remove()
        self._runs = []
        for reader, _ in self._sources:
            reader.close()
        self._sources = []

    # writing the segment's postings

    def _flush_segment(self):
        self.perdocwriter.close()
        fw = self.fieldwriter
        names = {n for n, pool in self._chars_pooled().items() if len(pool)}
        for run in self._runs:
            names.update(run.fields)
        for reader, _ in self._sources:
            names.update(n for n in reader.indexed_field_names() if n in self.schema)
        terms = _TermIndex(fw._tindex)
        for name in sorted(names):
            fw.start_field(name, self.schema[name])
            postfile, add_term, prefix = fw._postfile, terms.add, pack_ushort(fw._fieldid)
            write, offset = postfile.file.write, postfile.tell()
            for btext, p in self._merged_terms(name):
                data = encode(p)
                counts, ids = p.counts, p.ids
                if len(counts) == 1:  # a third of all bigrams
                    weight = maxweight = counts[0]
                else:
                    weight, maxweight = sum(counts), max(counts)
                info = _TERMINFO.pack(
                    0, weight, len(counts), _MINLEN, _MAXLEN, maxweight, ids[0], ids[-1], offset, len(data)
                )
                write(data)
                add_term(prefix + btext, info)
                offset += len(data)
            fw.finish_field()
            self.pool.fields.pop(name, None)  # written: its memory goes before the next field's sort
        terms.finish()
        fw.close()

    def _merged_terms(self, name: str) -> Iterator[tuple[bytes, Postings]]:
        """(term, postings): the merged segments', then the spilled runs', then the pool's, in
        term order (their documents are in that order)."""
        pool = self.pool.fields.get(name)
        new = pool.sorted_postings() if pool is not None else iter(())
        streams: list[Iterable] = []
        for order, (reader, base) in enumerate(self._sources):
            if name in reader.indexed_field_names():
                streams.append(_source_terms(reader, base, order, name))
        for order, run in enumerate(self._runs, len(self._sources)):
            if name in run.fields:
                streams.append(_run_terms(run, order, name))
        if not streams:
            yield from new
            return
        streams.append((btext, len(self._sources) + len(self._runs), p) for btext, p in new)
        for btext, group in groupby(heapq.merge(*streams, key=itemgetter(0, 1)), key=itemgetter(0)):
            parts = []
            for _, _, source in group:
                if isinstance(source, Postings):
                    parts.append(source)
                else:
                    reader, base, value = source
                    parts.append(_source_postings(reader, name, btext, value).rebased(base))
            yield btext, Postings.join(parts)


def _run_terms(run: Run, order: int, name: str) -> Iterator[tuple[bytes, int, Postings]]:
    for btext, ids, impacts, counts in run.terms(name):
        yield btext, order, Postings(ids=_native("I", ids), impacts=bytes(impacts), counts=_native("H", counts))


def _source_terms(reader, base: int, order: int, name: str) -> Iterator[tuple]:
    """(term, order, (reader, base, term info bytes)) of a merged segment's field, in term order:
    its term dictionary's records read ``TERMS_CHUNK`` bytes at a time and split here. Whoosh's
    ``iter_field`` made three seeks and reads per term, and they were half of a bulk build's merge.
    (Read whole, the dictionaries of the 71 segments a million documents make were all in memory
    at once during the final merge: 1.35 GB.)"""
    terms = reader._terms
    fieldid = terms._fieldmap.get(name)
    if fieldid is None:
        return
    tindex = terms._tindex
    prefix = pack_ushort(fieldid)
    pos = tindex.closest_key_pos(prefix)
    if pos is None:
        return
    get, stop = tindex.dbfile.get, tindex.endofdata
    step, unpack = _LENGTHS.size, _LENGTHS.unpack_from
    data, at = b"", 0
    while True:
        if len(data) - at < step or len(data) - at < step + sum(unpack(data, at)):
            if pos >= stop:
                return
            more = bytes(get(pos, min(TERMS_CHUNK, stop - pos)))
            pos += len(more)
            data, at = data[at:] + more, 0
            continue
        keylen, datalen = unpack(data, at)
        key_at = at + step
        if data[key_at : key_at + 2] != prefix:
            return
        value_at = key_at + keylen
        at = value_at + datalen
        yield data[key_at + 2 : value_at], order, (reader, base, data[value_at:at])


def _source_postings(reader, name: str, btext: bytes, value: bytes) -> Postings:
    """A merged segment's postings of a term, from its term info bytes."""
    if len(value) == _TERMINFO.size and not value[0]:  # not inlined: a list BulkWriter wrote
        *_, offset, length = _TERMINFO.unpack(value)
        data = reader._terms._postfile.get(offset, length)
        if bytes(data[:4]) == MAGIC:
            return decode(data)
    postings = read_postings(reader, name, btext, W3TermInfo.from_bytes(value))
    assert postings is not None  # None only when looking the term up finds none
    return postings


class _TermIndex:
    """Whoosh's ``OrderedHashWriter.add`` (the term dictionary) for keys that arrive in order:
    the same records, hashes and key positions, without a method call and ``tell()`` per step."""

    def __init__(self, tindex):
        if type(tindex) is not OrderedHashWriter:
            raise TypeError(f"unexpected term index writer {type(tindex).__name__}")
        self.tindex = tindex
        self.write = tindex.dbfile.file.write
        self.pos = tindex.dbfile.tell()
        self.positions: list[int] = []
        self.hashfn, self.buckets = tindex.hashfn, tindex.buckets
        self.lastkey = tindex.lastkey

    def add(self, key: bytes, value: bytes) -> None:
        if key <= self.lastkey:
            raise ValueError(f"terms out of order: {self.lastkey!r} .. {key!r}")
        pos = self.pos
        self.positions.append(pos)
        self.write(_LENGTHS.pack(len(key), len(value)) + key + value)
        h = self.hashfn(key)
        self.buckets[h & 255].append((h, pos))
        self.pos = pos + _LENGTHS.size + len(key) + len(value)
        self.lastkey = key

    def finish(self) -> None:
        self.tindex.index.extend(self.positions)
        self.tindex.lastkey = self.lastkey


class _Pools:
    def __init__(self):
        self.fields: dict[str, _FieldPool | _CharPool] = {}
        self.impacts = _Impacts()

    def field(self, name: str) -> _FieldPool:
        pool = self.fields.get(name)
        if pool is None:
            pool = self.fields[name] = _FieldPool()
        assert isinstance(pool, _FieldPool)  # CharTerms pools are made only when a segment is flushed
        return pool

    def cleanup(self) -> None:
        self.fields.clear()

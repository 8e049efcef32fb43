"""Evaluating a parsed query (``index.fulltext.params``) over one collection's posting lists.

Whoosh's matchers step through postings one Python call at a time: a term found in 96,000 of
100,000 documents took 330 ms to score. Here a term's postings are read whole
(``index.fulltext.postings``: document numbers and impacts as arrays) and combined with C-level set and
``map`` operations; only the documents that are ranked are looked at one by one.

- A word is its term; its score in a document is ``idf x impact`` (BM25 with lengths normalised
  at indexing time). AND intersects, OR unites (scores add), NOT subtracts.
- Two fields hold the terms: ``content`` (title, meta and the main text) and ``boiler`` (menus,
  headers, footers, lists of links: ``index.fulltext.text``). A search in scope ``all`` (the
  default) counts both, a term's boilerplate score weighing ``BOILER_WEIGHT``; scope ``main``
  only the first, so a menu word finds only the pages that speak of it.
- A prefix (``arch*``) is the union of the ``MAX_EXPANSIONS`` most frequent terms that begin with
  it, or with its stem (the stem of a word is how it is indexed: ``archive*`` finds ``archiv``).
- A one-character Chinese or Japanese word matches the character wherever it is (its term in
  the ``chars`` field).
- A phrase (or a word that analyses to several terms, such as a Chinese word of three characters
  or more) matches documents holding all its terms, then each candidate is checked against its
  stored text (``index.fulltext.cjk.phrase_in``). Checks are made lazily, best candidates first
  (``rank``), so a common phrase costs about the page of documents ranked, not every candidate;
  its count is then estimated from the share of checked candidates that passed.

``IndexView`` is the collection's index opened at one generation, with its capture table; one per
thread (``index.fulltext.query`` keeps them).
"""

from __future__ import annotations

import bisect
import heapq
import math
import os
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any

import numpy as np
from whoosh.codec.whoosh3 import STORED_COLUMN
from whoosh.columns import MultiColumnReader

from index.collection import Collection
from index.fulltext.captures import FILENAME, CaptureStore, CaptureTable
from index.fulltext.cjk import chained_word, is_cjk, phrase_in, stem
from index.fulltext.documents import unpack_texts
from index.fulltext.metadata import date_key
from index.fulltext.postings import Postings, read_postings
from index.fulltext.store import build_id, open_index

__all__ = ["Allowed", "IndexView", "Matches", "Ranked", "TimeUp", "evaluate", "intersect", "matching_docs", "rank"]

FIELD = "content"
CHARS = "chars"
BOILER = "boiler"
BOILER_CHARS = "bchars"
BOILER_WEIGHT = 0.3  # of a term's score when it is found in boilerplate only
MAX_EXPANSIONS = 64  # terms a prefix stands for (the most frequent)
MAX_PREFIX_SCAN = 20_000  # terms read from the term dictionary for one prefix
SCOPES = ("all", "main")
STORED = "_stored"  # the column of Whoosh's stored fields, for ``IndexView.prefetch``
CACHE_POSTINGS = 4_000_000  # postings kept decoded per view (8 bytes each)


class TimeUp(Exception):
    """The search's time bound was reached."""


class IndexView:
    """A collection's full-text index at one generation, opened for searching; threads share it
    (its files are read by slicing maps; its caches are filled under a lock)."""

    def __init__(self, coll: Collection, populate: bool = False):
        ix = open_index(coll, populate=populate)
        if ix is None:
            raise FileNotFoundError(coll.fulltext_dir)
        self.coll = coll
        self.ix = ix
        self.build = ix.build_id
        self.generation = ix.latest_generation()
        self.store_stamp = _stamp(coll.fulltext_dir / FILENAME)
        self.searcher = ix.searcher()
        reader = self.searcher.reader()
        self.reader = reader
        self.count = reader.doc_count_all()
        # an index without a document (a collection of resources or revisits only) is Whoosh's empty
        # reader, which has no terms or columns to read: nothing is looked up in it
        self.leaves = [] if not self.count else list(reader.leaf_readers()) if not reader.is_atomic() else [(reader, 0)]
        self._store = CaptureStore(coll.fulltext_dir, readonly=True)
        self._captures: CaptureTable | None = None
        self._postings: OrderedDict[str, Postings | None] = OrderedDict()
        self._cached = 0
        self._lock = threading.Lock()
        columns = ("url", "host", "mtype", "parts")
        self.columns: dict = (
            {name: reader.column_reader(name) for name in columns} if self.count else {name: () for name in columns}
        )
        self._spans: dict[str, list[tuple[int, tuple]]] = {}
        self._published: list[tuple[str, int]] | None = None

    def is_current(self) -> bool:
        try:
            # the captures are committed after the Whoosh segment: both must be unchanged
            return (
                build_id(self.coll) == self.build
                and self.ix.latest_generation() == self.generation
                and _stamp(self.coll.fulltext_dir / FILENAME) == self.store_stamp
            )
        except OSError:
            return False

    def close(self) -> None:
        self.searcher.close()
        self._store.close()

    def docnums(self, keys) -> dict[str, int]:
        """Document key (``<url> <digest>``) -> document number, for the keys the index holds."""
        return self._store.docnums(keys)

    def release_pages(self) -> None:
        """Unmap the index pages read so far (``index.fulltext.mapfile``); for a private view that
        reads every document once. A shared view keeps its pages: searches would fault them again."""
        self.ix.storage.release_pages()

    @property
    def captures(self) -> CaptureTable:
        with self._lock:
            if self._captures is None:
                self._captures = CaptureTable(self._store, self._lock)
            return self._captures

    def postings(self, term: str, field: str = FIELD) -> Postings | None:
        key = f"{field}\x00{term}"
        with self._lock:
            if key in self._postings:
                self._postings.move_to_end(key)
                return self._postings[key]
        btext = term.encode("utf-8")
        parts = [
            p.rebased(base) for reader, base in self.leaves if (p := read_postings(reader, field, btext)) is not None
        ]
        found = Postings.join(parts) if parts else None
        with self._lock:
            if key not in self._postings:
                self._postings[key] = found
                self._cached += len(found) if found else 0
            while self._cached > CACHE_POSTINGS and len(self._postings) > 1:
                _, old = self._postings.popitem(last=False)
                self._cached -= len(old) if old else 0
        return found

    def idf(self, df: int) -> float:
        return math.log(1 + (self.count - df + 0.5) / (df + 0.5))

    def texts(self, docnum: int) -> tuple[str, str, str, str, str]:
        """(title, description, keywords, main text, boilerplate)."""
        return unpack_texts(self.columns["parts"][docnum])

    def prefetch(self, column: str, docnums: Iterable[int]) -> None:
        """Have the kernel read these documents' values of a column ahead, together (a phrase's
        candidates' texts, a page of hits' URLs): from a cold disk, scattered reads then overlap."""
        spans = self._spans.get(column)
        if spans is None:
            spans = self._spans[column] = _column_spans(self._column_parts(column))
        if not spans:
            return
        docs = np.fromiter(docnums, dtype=np.int64)
        for number, (base, (offsets, lengths, start, advise)) in enumerate(spans):
            end = spans[number + 1][0] if number + 1 < len(spans) else self.count
            local = docs[(docs >= base) & (docs < end)] - base
            if len(local):
                advise(start + offsets[local], lengths[local])

    def _column_parts(self, column: str) -> list[tuple[int, object]]:
        """(first document, column reader) per segment; ``STORED`` is the stored fields' column."""
        if column == STORED:
            return [(base, leaf._perdoc._cached_reader(STORED, STORED_COLUMN)) for leaf, base in self.leaves]
        reader = self.columns[column]
        if isinstance(reader, MultiColumnReader):
            return list(zip(reader._doc_offsets, reader._readers, strict=True))
        return [(0, reader)]

    def raw_texts(self, docnum: int, main_only: bool = False) -> bytes:
        """The document's texts in UTF-8, NUL between them (``index.fulltext.pack_texts``);
        ``main_only``: without the boilerplate (the last of them)."""
        raw = self.columns["parts"][docnum] or b""
        return raw[: raw.rfind(b"\x00")] if main_only else raw

    def expand(self, prefix: str, field: str = FIELD) -> list[tuple[int, str]]:
        """(documents, term) of the most frequent terms of ``field`` that begin with ``prefix``."""
        frequency: dict[str, int] = {}
        btext = prefix.encode("utf-8")
        for reader, _ in self.leaves:
            for number, (term, info) in enumerate(reader.iter_prefix(field, btext)):
                if number >= MAX_PREFIX_SCAN:
                    break
                text = term.decode("utf-8")
                frequency[text] = frequency.get(text, 0) + info.doc_frequency()
        return heapq.nlargest(MAX_EXPANSIONS, ((n, t) for t, n in frequency.items()))

    def published_between(self, lo: str | None, hi: str | None) -> set[int]:
        """Documents whose published date (``index.fulltext.metadata.date_key``) is in [lo, hi]."""
        with self._lock:
            if self._published is None:
                column = self.reader.column_reader("published")
                self._published = sorted(
                    (key, docnum) for docnum in range(self.count) if (key := date_key(column[docnum] or ""))
                )
            dated = self._published
        start = bisect.bisect_left(dated, (lo or "", -1))
        stop = bisect.bisect_right(dated, (hi or "99999999", self.count))
        return {docnum for _, docnum in dated[start:stop]}

    def filter_docs(self, field: str, value: str) -> set[int]:
        p = self.postings(value, field)
        return set(p.ids) if p is not None else set()


def _column_spans(parts: list[tuple[int, object]]) -> list[tuple[int, tuple]]:
    """Per segment (first document, its column reader), (first document, (offsets, lengths,
    start, advise)) of a column stored as Whoosh's ``VarBytesColumn`` (or one wrapping it) in a
    mapped file (``index.fulltext.mapfile``); empty when any segment's is otherwise (nothing is
    read ahead then)."""
    spans = []
    for base, reader in parts:
        raw: Any = reader
        while not hasattr(raw, "_offsets") and (inner := getattr(raw, "_reader", getattr(raw, "_child", None))):
            raw = inner
        advise = getattr(getattr(raw, "_dbfile", None), "advise", None)
        if advise is None or not hasattr(raw, "_offsets"):
            return []
        spans.append((base, (_viewed(raw._offsets), _viewed(raw._lengths), raw._basepos, advise)))
    return spans


def _viewed(numbers) -> np.ndarray:
    """An ``array`` of numbers as a numpy array over the same memory (no copy)."""
    if isinstance(numbers, array):
        return np.frombuffer(numbers, dtype=np.dtype(numbers.typecode)) if len(numbers) else np.zeros(0, np.int64)
    return np.asarray(numbers)


def _stamp(path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


# -- evaluation ------------------------------------------------------------------------------------
#
# Document numbers are sorted arrays; scores are float64 arrays beside them. Combining lists is
# numpy's work: an intersection, a union or a filter is a few passes over arrays in C, with a
# dense array of the collection's size where lists are long (8 MB at a million documents).

_NO_IDS = np.zeros(0, dtype=np.int64)
_NO_VALUES = np.zeros(0, dtype=np.float64)
_SPARSE = 16  # an AND looks its n documents up in a list of m by binary search once m >= 16 n


def _np_ids(ids) -> np.ndarray:
    """Document numbers as a numpy array (an ``array('I')`` is viewed, not copied)."""
    if isinstance(ids, np.ndarray):
        return ids
    return np.frombuffer(ids, dtype=np.uint32) if len(ids) else _NO_IDS


def _as_array(ids) -> array:
    """Document numbers as an ``array('I')``, for a binary search per document."""
    if isinstance(ids, array):
        return ids
    found = array("I")
    found.frombytes(np.asarray(ids, dtype=np.uint32).tobytes())
    return found


class Matches:
    """Candidate documents and their scores. ``check`` (when set) decides, per candidate, whether
    it really matches; without it every candidate does.

    ``prefetch`` (when set) has the documents' texts read ahead, a batch of candidates at a time,
    before ``check`` reads them one by one.

    Two forms: one posting list (``impacts`` set: its ``ids`` an ``array('I')``, its scores
    ``impact x idf``, made only when needed), or a combination (``values``: the scores, a float64
    array beside ``ids``, a sorted numpy array). Ties rank as they always have: a single list by
    document order, a combination the higher document number first."""

    __slots__ = ("ids", "impacts", "idf", "values", "check", "prefetch", "_array")

    def __init__(self, ids=None, values=None, check=None, impacts: bytes | None = None, idf: float = 1.0):
        self.ids = ids if ids is not None else _NO_IDS
        self.values = values if values is not None or impacts is not None else _NO_VALUES
        self.impacts, self.idf, self.check = impacts, idf, check
        # reads ahead what ``check`` will read of these documents (their texts): Prefetch | None
        self.prefetch: Callable[[list[int]], None] | None = None
        self._array: array | None = None

    @classmethod
    def of_list(cls, ids: array, impacts: bytes, idf: float) -> Matches:
        return cls(ids, None, None, impacts, idf)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(document numbers, scores) as numpy arrays, in document order."""
        if self.impacts is None:
            return self.ids, self.values
        return _np_ids(self.ids), np.frombuffer(self.impacts, dtype=np.uint8) * self.idf

    def top(self) -> int:
        """One more than the highest document number."""
        return int(self.ids[-1]) + 1 if len(self.ids) else 0

    def __len__(self) -> int:
        return len(self.ids)

    def docs(self) -> array:
        if self._array is None:
            self._array = _as_array(self.ids)
        return self._array

    def score_of(self, docnum: int) -> float | None:
        """The candidate's score, or None when it is not a candidate."""
        ids = self.docs()
        i = bisect.bisect_left(ids, docnum)
        if i >= len(ids) or ids[i] != docnum:
            return None
        return self.impacts[i] * self.idf if self.impacts is not None else float(self.values[i])

    def best_first(self, allowed: bytes | None) -> Iterator[tuple[float, int]]:
        """(score, docnum) of the candidates in ``allowed`` (a mask), best first, made as they are read."""
        if self.impacts is not None:
            return _by_impact(self.ids, self.impacts, self.idf, allowed)
        ids, values = self.ids, self.values
        if allowed is not None:
            keep = _mask_of(allowed)[ids]
            ids, values = ids[keep], values[keep]
        return _ordered(ids, values)


def _mask_of(allowed: bytes) -> np.ndarray:
    return np.frombuffer(allowed, dtype=np.bool_)


class _Context:
    def __init__(self, view: IndexView, deadline: float, scope: str = "all"):
        self.view = view
        self.deadline = deadline
        self.main_only = scope == "main"
        self.texts: dict[int, tuple] = {}

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise TimeUp

    def texts_of(self, docnum: int) -> tuple:
        texts = self.texts.get(docnum)
        if texts is None:
            texts = self.view.texts(docnum)
            texts = self.texts[docnum] = texts[:4] if self.main_only else texts
        return texts


def evaluate(view: IndexView, tree, deadline: float = math.inf, scope: str = "all") -> Matches:
    """The candidates of a parse tree (``index.fulltext.params._analyse``) in this index; ``None`` (no
    query) matches every document with score 0. ``scope``: ``all`` or ``main`` (no boilerplate)."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, not {scope!r}")
    ctx = _Context(view, deadline, scope)
    if tree is None:
        return _everything(view)
    return _eval(ctx, tree)


def _everything(view: IndexView) -> Matches:
    return Matches(np.arange(view.count, dtype=np.int64), np.zeros(view.count))


def _eval(ctx: _Context, node) -> Matches:
    ctx.tick()
    kind = node[0]
    if kind == "tokens":
        _, tokens, is_word = node
        if len(tokens) == 1:
            return _token(ctx, tokens[0], is_word)
        return _phrase(ctx, tokens)
    if kind == "prefix":
        return _prefix(ctx, node[1])
    if kind == "or":
        return _or([_eval(ctx, child) for child in node[1]])
    if kind == "not":
        return _and_not(_everything(ctx.view), [_eval(ctx, node[1])])
    positives = [_eval(ctx, c) for c in node[1] if c[0] != "not"]
    negatives = [_eval(ctx, c[1]) for c in node[1] if c[0] == "not"]
    base = _and(positives) if positives else _everything(ctx.view)
    return _and_not(base, negatives) if negatives else base


def _field_term(ctx: _Context, term: str, field: str, weight: float = 1.0) -> Matches:
    p = ctx.view.postings(term, field)
    if p is None:
        return Matches()
    return Matches.of_list(p.ids, p.impacts, ctx.view.idf(len(p)) * weight)


def _both(ctx: _Context, term: str, field: str, boiler_field: str) -> Matches:
    """A term in the main field and, in scope ``all``, in boilerplate (weighing less; scores add)."""
    main = _field_term(ctx, term, field)
    if ctx.main_only:
        return main
    boiler = _field_term(ctx, term, boiler_field, BOILER_WEIGHT)
    if not len(boiler):
        return main
    if not len(main):
        return boiler
    return _sum_union([boiler, main])


def _sum_union(items: list[Matches]) -> Matches:
    """Documents in any of ``items``, their scores added (in the items' order)."""
    top = max(m.top() for m in items)
    totals = np.zeros(top)
    seen = np.zeros(top, dtype=np.bool_)
    for m in items:
        ids, values = m.arrays()
        totals[ids] += values
        seen[ids] = True
    ids = np.flatnonzero(seen)
    return Matches(ids, totals[ids])


def _term(ctx: _Context, term: str) -> Matches:
    return _both(ctx, term, FIELD, BOILER)


def _prefix(ctx: _Context, prefix: str) -> Matches:
    """The most frequent terms that begin with ``prefix`` or with its stem, united."""
    starts = dict.fromkeys((prefix, stem(prefix)))
    fields = (FIELD,) if ctx.main_only else (FIELD, BOILER)
    found: dict[str, int] = {}
    for start in starts:
        for field in fields:
            for count, term in ctx.view.expand(start, field):
                found[term] = found.get(term, 0) + count
    ctx.tick()
    terms = heapq.nlargest(MAX_EXPANSIONS, found, key=found.__getitem__)
    if not terms:
        return Matches()
    return _or([_term(ctx, term) for term in sorted(terms)])


def _token(ctx: _Context, token: str, is_word: bool) -> Matches:
    if is_word and len(token) == 1 and is_cjk(token):
        return _character(ctx, token)
    return _term(ctx, token)


def _character(ctx: _Context, char: str) -> Matches:
    """A character wherever it is: its term in ``chars`` (``index.fulltext.postings.CharTerms``)."""
    return _both(ctx, char, CHARS, BOILER_CHARS)


def _phrase(ctx: _Context, tokens: list[str]) -> Matches:
    """The documents of the phrase's rarest term, scored by it (the bigrams of a word are all in
    the documents that hold it: the rarest says how specific it is). Each is checked when ranked:
    the other terms' lists first (a binary search each), then the text (a Chinese or Japanese
    word: a search of its UTF-8 bytes; otherwise ``phrase_in`` on each text)."""
    parts = sorted((_token(ctx, t, is_word=True) for t in dict.fromkeys(tokens)), key=len)  # one character: a word
    rarest, others = parts[0], parts[1:]
    if not len(rarest):
        return Matches()
    lists = [m.docs() for m in others]
    word = chained_word(tokens)
    needle = word.encode("utf-8") if word else None
    main_only = ctx.main_only

    def check(docnum: int) -> bool:
        if not all(_holds(ids, docnum) for ids in lists):
            return False
        if needle is not None:
            return needle in ctx.view.raw_texts(docnum, main_only)
        return any(phrase_in(tokens, text) for text in ctx.texts_of(docnum) if text)

    found = Matches(rarest.ids, rarest.values, check, rarest.impacts, rarest.idf)
    found.prefetch = partial(ctx.view.prefetch, "parts")  # the texts that ``check`` reads
    return found


def _holds(ids, docnum: int) -> bool:
    i = bisect.bisect_left(ids, docnum)
    return i < len(ids) and ids[i] == docnum


def _and(items: list[Matches]) -> Matches:
    """Documents in every item, scores added (the shortest list first, then in turn)."""
    items = sorted(items, key=len)
    ids, values = items[0].arrays()
    for other in items[1:]:
        if not len(ids):
            break
        theirs, their_values = other.arrays()
        if not len(theirs):
            ids, values = _NO_IDS, _NO_VALUES
            break
        if len(theirs) >= _SPARSE * len(ids):  # n binary searches, not a pass over m
            at = np.searchsorted(theirs, ids)
            at[at == len(theirs)] = 0
            keep = theirs[at] == ids
            ids, values = ids[keep], values[keep] + their_values[at[keep]]
        else:
            dense = np.full(max(other.top(), int(ids[-1]) + 1), np.nan)
            dense[theirs] = their_values
            found = dense[ids]
            keep = ~np.isnan(found)
            ids, values = ids[keep], values[keep] + found[keep]
    return _with_prefetch(Matches(ids, values, _all_checks([m.check for m in items])), items)


def _or(items: list[Matches]) -> Matches:
    flat: list[Matches] = []
    for m in items:
        flat.extend(m.items if isinstance(m, Union) and m.values is None else [m])
    return flat[0] if len(flat) == 1 else Union(flat)


class Union(Matches):
    """Documents in any of ``items``, scores added. Without checks it is ranked as the sum of its
    lists; with checks by the threshold algorithm (``rank``): each item's candidates best first,
    in turn, stopping when the page cannot change. Its arrays are made only when it is combined
    further (AND, NOT) or ranked without checks."""

    __slots__ = ("items",)

    def __init__(self, items: list[Matches]):
        super().__init__()
        self.values = None
        self.items = items
        if any(m.check is not None for m in items):
            self.check = self._check
        _with_prefetch(self, items)

    def combine(self) -> None:
        if self.values is None:
            union = _sum_union(self.items)
            self.ids, self.values = union.ids, union.values

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        self.combine()
        return self.ids, self.values

    def top(self) -> int:
        return max(m.top() for m in self.items) if self.values is None else super().top()

    def __len__(self) -> int:
        self.combine()
        return len(self.ids)

    def docs(self) -> array:
        self.combine()
        return super().docs()

    def score_of(self, docnum: int) -> float | None:
        self.combine()
        return super().score_of(docnum)

    def best_first(self, allowed: bytes | None) -> Iterator[tuple[float, int]]:
        self.combine()
        return super().best_first(allowed)

    def _check(self, docnum: int) -> bool:
        return any(m.score_of(docnum) is not None and (m.check is None or m.check(docnum)) for m in self.items)


def _and_not(base: Matches, negatives: list[Matches]) -> Matches:
    exact = [m for m in negatives if m.check is None]
    checked = [m for m in negatives if m.check is not None]
    ids, values = base.arrays()
    if exact and len(ids):
        drop = np.zeros(max(int(ids[-1]) + 1, *(m.top() for m in exact)), dtype=np.bool_)
        for m in exact:
            drop[m.arrays()[0]] = True
        keep = ~drop[ids]
        ids, values = ids[keep], values[keep]
    if not checked:
        return _with_prefetch(Matches(ids, values, base.check), [base])

    def check(docnum: int) -> bool:
        if base.check is not None and not base.check(docnum):
            return False
        return not any(m.score_of(docnum) is not None and m.check(docnum) for m in checked)

    return _with_prefetch(Matches(ids, values, check), [base, *checked])


def _with_prefetch(matches: Matches, parts: list[Matches]) -> Matches:
    """``matches`` reading ahead as its parts do: every check reads the same column (texts), so
    one part's read-ahead serves them all."""
    matches.prefetch = next((m.prefetch for m in parts if m.prefetch is not None), None)
    return matches


def _read_ahead(
    pairs: Iterator[tuple[float, int]], prefetch, wanted: Callable[[int], bool] | None = None, batch: int = 64
) -> Iterator[tuple[float, int]]:
    """``pairs`` as they come, each ``batch`` of their documents read ahead first (``prefetch``);
    only those ``wanted`` says may be checked, when given."""
    if prefetch is None:
        yield from pairs
        return
    while chunk := list(islice(pairs, batch)):
        prefetch([docnum for _, docnum in chunk if wanted is None or wanted(docnum)])
        yield from chunk


def _all_checks(checks: list) -> Callable[[int], bool] | None:
    checks = [c for c in checks if c is not None]
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]
    return lambda docnum: all(c(docnum) for c in checks)


# -- ranking ---------------------------------------------------------------------------------------


@dataclass
class Ranked:
    hits: list[tuple[float, int]]  # (score, docnum), best first
    total: int  # matching documents (estimated when not exact)
    exact: bool
    timed_out: bool = False


# The documents a search may rank: None (all), a set of document numbers, or a mask (a numpy
# array of booleans, one per document from 0).
Allowed = set[int] | np.ndarray | None


def _as_mask(docs: set[int] | np.ndarray, size: int) -> np.ndarray:
    """A set of document numbers, or a mask of any length, as a mask of ``size``."""
    if isinstance(docs, np.ndarray):
        if len(docs) >= size:
            return docs[:size]
        mask = np.zeros(size, dtype=np.bool_)
        mask[: len(docs)] = docs
        return mask
    mask = np.zeros(size, dtype=np.bool_)
    if docs:
        found = np.fromiter(docs, dtype=np.int64, count=len(docs))
        mask[found[(found >= 0) & (found < size)]] = True
    return mask


def intersect(a: set[int] | np.ndarray, b: set[int] | np.ndarray) -> set[int] | np.ndarray:
    """The documents in both (a set when both are sets)."""
    if isinstance(a, set) and isinstance(b, set):
        return a & b
    size = max(len(x) if isinstance(x, np.ndarray) else max(x, default=-1) + 1 for x in (a, b))
    return _as_mask(a, size) & _as_mask(b, size)


def _allowed_mask(allowed: Allowed, top: int) -> bytes | None:
    """``allowed`` as a mask of ``top`` bytes, 1 where allowed."""
    return None if allowed is None else _as_mask(allowed, top).tobytes()


def rank(matches: Matches, allowed: Allowed, limit: int, deadline: float = math.inf) -> Ranked:
    """The ``limit`` best matching documents among ``allowed`` (all when None), checked when the
    matches say so: best first, until ``limit`` pass. The total is exact unless a check was left
    out; then it is the candidates times the share that passed."""
    if time.monotonic() > deadline:
        raise TimeUp
    mask = _allowed_mask(allowed, matches.top())
    if isinstance(matches, Union) and matches.values is None:
        if matches.check is not None:
            return _rank_union(matches, mask, limit, deadline)
        matches.combine()
    if matches.check is None:
        return _rank_all(matches, mask, limit)
    ordered = matches.best_first(mask)
    size = _count_in(_np_ids(matches.ids), mask)
    check = matches.check
    hits, checked, timed_out = [], 0, False
    for score, docnum in _read_ahead(ordered, matches.prefetch):
        if checked % 64 == 0 and time.monotonic() > deadline:
            timed_out = True
            break
        checked += 1
        if not check(docnum):
            continue
        hits.append((score, docnum))
        if len(hits) >= limit:
            break
    exact = checked == size and not timed_out
    total = len(hits) if exact else max(len(hits), round(size * len(hits) / checked)) if checked else size
    return Ranked(hits, total, exact, timed_out)


def _rank_all(matches: Matches, mask: bytes | None, limit: int) -> Ranked:
    """Every candidate matches: the best ``limit`` by score (ties: a single list in document
    order, a combination the higher document number first), and their exact number."""
    ids, values = matches.arrays()
    impacts = np.frombuffer(matches.impacts, dtype=np.uint8) if matches.impacts is not None else None
    if mask is not None:
        keep = _mask_of(mask)[ids]
        ids, values = ids[keep], values[keep]
        impacts = impacts[keep] if impacts is not None else None
    size = len(ids)
    if impacts is not None:  # by impact, then document order
        if size > limit:
            kth = np.partition(impacts, size - limit)[size - limit]
            above = np.flatnonzero(impacts > kth)
            at = np.concatenate((above, np.flatnonzero(impacts == kth)[: limit - len(above)]))
        else:
            at = np.arange(size)
        at = at[np.lexsort((ids[at], -impacts[at].astype(np.int16)))]
    else:  # by score, then the higher document number
        if size > limit:
            kth = np.partition(values, size - limit)[size - limit]
            above = np.flatnonzero(values > kth)
            ties = np.flatnonzero(values == kth)
            at = np.concatenate((above, ties[len(ties) - (limit - len(above)) :])) if limit > len(above) else above
        else:
            at = np.arange(size)
        at = at[np.lexsort((ids[at], values[at]))[::-1]]
    return Ranked(list(zip(values[at].tolist(), ids[at].tolist(), strict=True)), size, True)


def _rank_union(union: Union, mask: bytes | None, limit: int, deadline: float) -> Ranked:
    """Fagin's threshold algorithm: read each item's candidates best first, in turn; score each
    new document over every item (a binary search, and the item's check, made only when the
    document could still enter the page); stop when ``limit`` documents score at least the sum
    of the items' current candidates, which no unread document can beat."""
    page = _Page(union.items, limit)
    streams = [_read_ahead(m.best_first(mask), union.prefetch, page.may_enter) for m in union.items]
    heads = [math.inf] * len(streams)
    live = list(range(len(streams)))
    rounds = 0
    timed_out = False
    while live:
        for j in list(live):
            pulled = next(streams[j], None)
            if pulled is None:
                heads[j] = 0.0
                live.remove(j)
                continue
            heads[j], docnum = pulled
            page.meet(docnum)
        rounds += 1
        if page.full() and page.top[0][0] >= sum(heads):
            break
        if rounds % 32 == 0 and time.monotonic() > deadline:
            timed_out = True
            break
    hits = sorted(page.top, reverse=True)
    if not live and not timed_out and not page.skipped:
        return Ranked(hits, page.matched, True)
    size = _candidates(union, mask)
    judged = len(page.seen) - page.skipped
    return Ranked(hits, max(page.matched, round(size * page.matched / judged)) if judged else size, False, timed_out)


class _Page:
    """The threshold algorithm's page: the ``limit`` best (score, docnum) met so far (a heap)."""

    def __init__(self, items: list[Matches], limit: int):
        self.items, self.limit = items, limit
        self.top: list[tuple[float, int]] = []
        self.seen: set[int] = set()
        self.matched = self.skipped = 0
        self._scored: dict[int, list[tuple[float, Matches]]] = {}  # read ahead, not met yet

    def full(self) -> bool:
        return len(self.top) >= self.limit

    def _scores(self, docnum: int) -> list[tuple[float, Matches]]:
        found = self._scored.get(docnum)
        if found is None:
            found = self._scored[docnum] = [(s, m) for m in self.items if (s := m.score_of(docnum)) is not None]
        return found

    def may_enter(self, docnum: int) -> bool:
        """Not met yet, and could enter the page as it is now (it only gets harder to enter):
        the documents whose texts are worth reading ahead."""
        if docnum in self.seen:
            return False
        return not self.full() or (sum(score for score, _ in self._scores(docnum)), docnum) > self.top[0]

    def meet(self, docnum: int) -> None:
        """A document read from one of the items: scored over all of them, checked if it could
        enter the page, and entered if it matches."""
        if docnum in self.seen:
            return
        self.seen.add(docnum)
        scored = self._scores(docnum)
        del self._scored[docnum]
        if self.full() and (sum(score for score, _ in scored), docnum) <= self.top[0]:
            self.skipped += 1  # cannot enter the page even if it passes every check: not checked
            return
        total, found = 0.0, False
        for score, m in scored:
            if m.check is None or m.check(docnum):
                total += score
                found = True
        if not found:
            return
        self.matched += 1
        if not self.full():
            heapq.heappush(self.top, (total, docnum))
        elif (total, docnum) > self.top[0]:
            heapq.heapreplace(self.top, (total, docnum))


def _candidates(union: Union, mask: bytes | None) -> int:
    """How many documents are in any of the union's items (and in ``mask``): a mask of them, not
    the union's arrays, whose scores would be added up for nothing (15 ms a union of two phrases at
    a million documents)."""
    found = np.zeros(union.top(), dtype=np.bool_)
    for m in union.items:
        found[m.arrays()[0]] = True
    if mask is not None:
        found &= _mask_of(mask)
    return int(np.count_nonzero(found))


def _count_in(ids: np.ndarray, mask: bytes | None) -> int:
    """How many of these documents are in ``mask`` (all when None)."""
    return len(ids) if mask is None else int(np.count_nonzero(_mask_of(mask)[ids]))


def _by_impact(ids, impacts: bytes, idf: float, allowed: bytes | None) -> Iterator[tuple[float, int]]:
    """(score, docnum) of one posting list, best first, without sorting it: impacts are bytes, so
    the postings of each value from 255 down are found by ``bytes.find`` (within a value, in
    document order). ``allowed``: a mask of the documents allowed, one byte each."""
    for value in range(255, 0, -1):
        needle = bytes((value,))
        score = value * idf
        i = impacts.find(needle)
        while i >= 0:
            docnum = ids[i]
            if allowed is None or allowed[docnum]:
                yield score, docnum
            i = impacts.find(needle, i + 1)


def _ordered(ids: np.ndarray, values: np.ndarray, first: int = 1024) -> Iterator[tuple[float, int]]:
    """(score, docnum) by descending score, then descending document number, lazily: the best
    ``first`` (with every tie of the last) sorted, then four times as many of the rest, and so on."""
    size = first
    while len(values):
        if len(values) > size:
            best = values >= np.partition(values, len(values) - size)[len(values) - size]
        else:
            best = np.ones(len(values), dtype=np.bool_)
        these_ids, these_values = ids[best], values[best]
        order = np.lexsort((these_ids, these_values))[::-1]
        yield from zip(these_values[order].tolist(), these_ids[order].tolist(), strict=True)
        ids, values = ids[~best], values[~best]
        size *= 4


def matching_docs(view: IndexView, tree) -> set[int]:
    """Every document matching a parse tree, checked (benchmarks and tests)."""
    matches = evaluate(view, tree)
    ids = matches.arrays()[0].tolist()
    if matches.check is None:
        return set(ids)
    return {d for d in ids if matches.check(d)}

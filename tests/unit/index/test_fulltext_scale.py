"""The full-text index's parts that keep a million documents cheap to open and to search: the
capture table read in place (index.fulltext.captures) and the bound on mapped pages
(index.fulltext.query)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from index.collection import Collection
from index.fulltext import whooshindex
from index.fulltext.captures import TABLE_FILE, CaptureStore, CaptureTable
from index.fulltext.documents import Payload
from index.fulltext.params import SearchParams
from index.fulltext.query import search
from index.fulltext.rebuild import create


def _collection(tmp_path: Path, count: int = 30) -> Collection:
    coll = Collection.open(tmp_path, "scale", create=True)
    docs = [
        (
            f"http://example.org/{n}",
            f"sha1:{n}",
            Payload(mime="text/html", title=f"page {n}", text=f"数据安全 common words {n} " * 40),
            {f"2024{1 + n % 12:02d}{1 + n % 28:02d}120000", f"2025{1 + n % 12:02d}01000000"},
        )
        for n in range(count)
    ]
    create(coll, docs)
    return coll


def _rows(coll: Collection) -> list[tuple[int, int]]:
    with CaptureStore(coll.fulltext_dir) as store:
        return store.conn.execute("SELECT docnum, ts FROM captures ORDER BY docnum, ts").fetchall()


def test_capture_table_is_written_with_the_index_and_agrees_with_the_rows(tmp_path):
    coll = _collection(tmp_path)
    assert (coll.fulltext_dir / TABLE_FILE).is_file()
    rows = _rows(coll)
    with CaptureStore(coll.fulltext_dir, readonly=True) as store:
        table = CaptureTable(store)
        for docnum in range(30):
            assert table.of(docnum) == [f"{ts:014d}" for d, ts in rows if d == docnum]
        assert table.of(30) == []
        lo, hi = "20240301000000", "20240630235959"
        assert table.docs_between(lo, hi) == {d for d, ts in rows if int(lo) <= ts <= int(hi)}
        assert table.docs_between(None, None) == set(range(30))
        for start, end in ((lo, hi), (None, hi), (lo, None), ("20990101000000", None)):
            mask = table.mask_between(start, end, 30)
            assert len(mask) == 30 and set(np.flatnonzero(mask).tolist()) == table.docs_between(start, end)
        assert not table.mask_between(None, None, 10)[10:].any() and table.mask_between(None, None, 10).all()


def test_capture_table_from_a_builds_arrays_equals_the_one_from_the_rows(tmp_path):
    """A build writes the table from the arrays it holds; a reader that finds the table stale
    writes it from SQLite's rows: both the same, duplicates and unsorted stamps included."""
    import random
    from array import array

    from index.fulltext.captures import _read_rows, _table_of

    rng = random.Random(4)
    pairs = [(d, 20200101000000 + rng.randrange(10**6)) for d in range(0, 400, 3) for _ in range(rng.randrange(1, 4))]
    pairs += pairs[:7]  # given twice
    docs, stamps = array("I", (d for d, _ in pairs)), array("q", (t for _, t in pairs))
    with CaptureStore(tmp_path) as store:
        store.add(((d, f"http://example.org/{d} sha1:{d}") for d in range(0, 400, 3)), pairs, [])
        from_rows = _read_rows(store)
    from_arrays = _table_of(docs, stamps)
    for part in ("offsets", "stamps_by_doc", "stamps_by_ts", "docs_by_ts"):
        assert list(getattr(from_arrays, part)) == list(getattr(from_rows, part)), part
    (tmp_path / "none").mkdir()
    with CaptureStore(tmp_path / "none") as store:
        assert list(_table_of(array("I"), array("q")).offsets) == list(_read_rows(store).offsets) == [0]


def test_capture_table_older_than_the_rows_is_read_again_and_rewritten(tmp_path):
    coll = _collection(tmp_path)
    before = (coll.fulltext_dir / TABLE_FILE).read_bytes()
    with CaptureStore(coll.fulltext_dir) as store:
        store.add([], [(3, "20300101000000")], [])  # an index_run's new capture of document 3
    with CaptureStore(coll.fulltext_dir, readonly=True) as store:
        assert "20300101000000" in CaptureTable(store).of(3)
        assert CaptureTable(store).docs_between("20300101000000", None) == {3}
    assert (coll.fulltext_dir / TABLE_FILE).read_bytes() != before


def test_damaged_capture_table_is_not_believed(tmp_path):
    coll = _collection(tmp_path)
    path = coll.fulltext_dir / TABLE_FILE
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data[: len(data) // 2]))  # cut short: its length does not match the header
    with CaptureStore(coll.fulltext_dir, readonly=True) as store:
        assert CaptureTable(store).docs_between(None, None) == set(range(30))
    assert path.stat().st_size == len(data)  # and written whole again


def _segment_rss(coll: Collection) -> int:
    """kB of this process's resident pages in its maps of the index's segment files."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if line[:1].isalnum() and "-" in line.split()[0]:
            inside = str(coll.fulltext_dir) in line and line.rstrip().endswith(".seg")
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def test_searches_drop_their_mapped_pages_past_the_limit(tmp_path, monkeypatch):
    coll = _collection(tmp_path, 200)
    params = SearchParams(q="数据 common", collections=["scale"])
    assert search(tmp_path, params)["total_documents"] == 200
    assert _segment_rss(coll) > 0  # the pages it read stay mapped under the limit
    monkeypatch.setattr(whooshindex, "MAPPED_LIMIT", 0)
    assert search(tmp_path, params)["total_documents"] == 200
    assert _segment_rss(coll) == 0
    assert search(tmp_path, params)["total_documents"] == 200  # and read again from the page cache


def test_merge_reads_term_dictionaries_in_chunks_of_any_size(tmp_path, monkeypatch):
    """BulkWriter's merge reads each segment's term dictionary a chunk at a time (its memory is a
    chunk per segment): chunks cut through records give the same merged index as one read."""
    from whoosh import index as whoosh_index

    from index.fulltext import postings
    from index.fulltext.documents import make_document, schema
    from index.fulltext.postings import BulkWriter, read_postings

    def build(path: Path, chunk: int) -> dict:
        monkeypatch.setattr(postings, "TERMS_CHUNK", chunk)
        path.mkdir()
        ix = whoosh_index.create_in(str(path), schema())
        for start in range(0, 40, 8):
            writer = BulkWriter(ix, merge=None)
            for n in range(start, start + 8):
                text = f"数据安全 国会 word{n % 7} library {n} 图书馆{n % 3}"
                writer.add_document(**make_document(f"http://example.org/{n}", f"sha1:{n}", Payload(text=text)))
            writer.commit()
        assert len(ix._segments()) == 5
        BulkWriter(ix, merge="all").commit()
        assert len(ix._segments()) == 1
        with ix.searcher() as searcher:
            reader = searcher.reader()
            return {
                (name, btext): read_postings(reader, name, btext, info).packed.tolist()
                for name in ("content", "chars", "key", "url")
                for btext, info in reader.iter_field(name)
            }

    whole = build(tmp_path / "whole", 1 << 20)
    assert len(whole) > 100
    for chunk in (5, 13, 64):
        assert build(tmp_path / f"chunk{chunk}", chunk) == whole


def test_prefetch_advises_the_bytes_of_the_values_asked_for(tmp_path, monkeypatch):
    """``IndexView.prefetch`` asks the kernel to read ahead exactly the ranges that hold the
    documents' values (texts, URLs, stored fields), in every segment: each advised range, read
    from the map, is the value itself."""
    from index.fulltext import mapfile
    from index.fulltext.documents import make_document
    from index.fulltext.matching import STORED, IndexView
    from index.fulltext.postings import BulkWriter
    from index.fulltext.store import open_index

    coll = _collection(tmp_path, 40)
    ix = open_index(coll)
    writer = BulkWriter(ix, merge=None)  # a second segment, as an index_run adds
    for n in range(40, 46):
        payload = Payload(mime="text/html", title=f"late {n}", text=f"后来的页面 {n} " * 30)
        writer.add_document(**make_document(f"http://example.org/late/{n}", f"sha1:{n}", payload))
    writer.commit()
    advised: list[bytes] = []

    def record(mapped, base, positions, lengths):
        advised.extend(bytes(mapped[base + at : base + at + n]) for at, n in zip(positions, lengths, strict=True))

    monkeypatch.setattr(mapfile, "_will_need", record)
    view = IndexView(coll)
    try:
        assert len(view.leaves) == 2
        docnums = [3, 17, 39, 41, 45]
        for column in ("parts", "url", STORED):
            advised.clear()
            view.prefetch(column, docnums)
            assert len(advised) == len(docnums)
            if column == "parts":
                assert advised == [view.raw_texts(d) for d in docnums]
            elif column == "url":
                assert [a.decode() for a in advised] == [view.columns["url"][d] for d in docnums]
            else:  # compressed pickles of the stored fields
                import pickle
                import zlib

                assert [pickle.loads(zlib.decompress(a)) for a in advised] == [
                    view.searcher.stored_fields(d) for d in docnums
                ]
    finally:
        view.close()


def test_a_phrase_reads_its_candidates_texts_ahead(tmp_path, monkeypatch):
    """Every candidate a phrase query checks has had its text read ahead before."""
    from index.fulltext.matching import IndexView, evaluate, rank
    from index.fulltext.params import parse_query

    coll = _collection(tmp_path, 200)
    view = IndexView(coll)
    ahead: set[int] = set()
    checked: list[int] = []
    real_prefetch, real_texts = view.prefetch, view.raw_texts
    monkeypatch.setattr(view, "prefetch", lambda column, docs: (ahead.update(docs), real_prefetch(column, docs)))

    def texts(docnum, main_only=False):
        checked.append(docnum)
        assert docnum in ahead
        return real_texts(docnum, main_only)

    monkeypatch.setattr(view, "raw_texts", texts)
    try:
        ranked = rank(evaluate(view, parse_query("数据安全").tree), None, 500)
        assert ranked.total == 200 and len(checked) == 200
    finally:
        view.close()


def test_read_ahead_advises_whole_pages_once_each(monkeypatch):
    """Ranges on one page or on pages next to each other are advised as one span of whole pages;
    a page between them splits it; nothing past the map's end is advised."""
    import mmap

    from index.fulltext.mapfile import _will_need

    page = mmap.PAGESIZE

    class Map:  # the boundary: what the kernel is asked
        closed = False

        def __init__(self) -> None:
            self.calls: list[tuple[int, int]] = []

        def __len__(self) -> int:
            return 10 * page

        def madvise(self, option, start, length):
            assert option == mmap.MADV_WILLNEED
            self.calls.append((start // page, (start + length) // page))

    mapped = Map()
    positions = np.array([7 * page + 5, 10, page - 1, 4 * page, 3 * page + 2, 100, 12 * page])
    lengths = np.array([3, 20, 2, page, 1, 0, 10])
    _will_need(mapped, page, positions, lengths)  # the column begins a page into the map
    # pages 1 (10, 100), 1-2 (page - 1, 2 bytes), 4 (3 * page + 2), 5 (4 * page, a page long), 8; not 13
    assert mapped.calls == [(1, 3), (4, 6), (8, 9)]

    class Big(Map):  # a segment file of 8 GB, a column 5 GB into it, with 32-bit offsets
        def __len__(self) -> int:
            return 2 * 2**32

    mapped = Big()
    _will_need(mapped, 5 * 2**30, np.array([10, 3 * page], dtype=np.uint32), np.array([5, 1], dtype=np.uint16))
    first = 5 * 2**30 // page
    assert mapped.calls == [(first, first + 1), (first + 3, first + 4)]

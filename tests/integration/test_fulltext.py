"""Full-text search over real harvests of the sample site (versions 1, 2, 3).

Exact hit sets against the sample site's ground truth (``SampleSite.containing``), date ranges
that hold only revisits, rebuild-from-WARCs == incremental, hostile queries, and crash safety.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from index.collection import Collection
from index.fulltext import store as fulltext
from index.fulltext.documents import IndexUnusable, indexable
from index.fulltext.params import SearchParams, parse_query, parse_when
from index.fulltext.query import TIME_LIMIT, search
from index.fulltext.rebuild import rebuild
from index.fulltext.store import open_index
from index.fulltext.update import index_run
from strata.errors import CollectionBusy, QueryError
from tests.conftest import REPO
from tests.support.search_fixtures import copy_collection, harvest_and_index


def paths(s, result) -> set[str]:
    return {h["url"][len(s.base_url) :] or "/" for h in result["hits"]}


def run_query(s, q, **kw) -> dict:
    kw.setdefault("per_page", 100)
    return search(s.root, SearchParams(q=q, collections=[s.name], **kw))


# query, terms whose ground truth is OR-ed, terms excluded
TABLE = [
    ("quinquennial", ["quinquennial"], []),  # only in the PDF
    ("国会", ["国会"], []),  # two Han characters inside 国立国会図書館
    ("图书", ["图书"], []),  # inside 国家图书馆 and 数字图书馆
    ("数据安全", ["数据安全"], []),
    ("数字", ["数字"], []),  # UTF-8 page and the GBK page
    ("古籍", ["古籍"], []),  # only in the GBK page
    ("保存", ["保存"], []),  # Chinese and Japanese pages
    ("馆", ["馆"], []),  # one character, inside words
    ("ウェブ", ["ウェブ"], []),
    ("わかりやすく", ["わかりやすく"], []),
    ('"reading room"', ["reading room"], []),  # a phrase
    ("图书馆 NOT 古籍", ["图书馆"], ["古籍"]),  # NOT
    ("milestone OR quinquennial", ["milestone", "quinquennial"], []),
    ("digitisation", ["digitisation"], []),
    ("mkzhgbk", ["mkzhgbk"], []),
    ('"keeps each version"', ["keeps each version"], []),
]


@pytest.mark.parametrize("q,terms,exclude", TABLE, ids=[t[0] for t in TABLE])
def test_exact_hits_over_all_harvests(searched, q, terms, exclude):
    expected = searched.expected(terms, exclude=exclude)
    assert expected, f"the ground truth for {q!r} is empty: the table is wrong"
    assert paths(searched, run_query(searched, q)) == expected


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("q,terms,exclude", TABLE[:8], ids=[t[0] for t in TABLE[:8]])
def test_exact_hits_per_harvest(searched, q, terms, exclude, version):
    lo, hi = searched.window(version)
    result = run_query(searched, q, date_from=lo, date_to=hi)
    assert paths(searched, result) == searched.expected(terms, versions=(version,), exclude=exclude)
    for hit in result["hits"]:
        assert all(lo <= ts <= hi for ts in hit["captures"])
        assert hit["replay_ts"] in hit["captures"]


def test_range_with_only_revisits_finds_unchanged_pages(searched):
    """v1 -> v2: the Japanese page is byte-identical (a revisit), the PDF answers 304."""
    lo, hi = searched.window(2)
    run2 = searched.captured(2)
    for q, path in (("国会", "/ja/index.html"), ("quinquennial", "/docs/report.pdf")):
        assert [c["record_type"] for c in run2[path]] == ["revisit"], path
        result = run_query(searched, q, date_from=lo, date_to=hi)
        assert paths(searched, result) == {path}
        (hit,) = result["hits"]
        assert hit["captures"] == [run2[path][0]["timestamp"]]
        assert hit["count"] == 1
    pdf = run2["/docs/report.pdf"][0]
    assert pdf["status"] == 304 and pdf["class"] == "not_modified"


def test_hits_group_by_url_with_capture_counts(searched):
    result = run_query(searched, "国会")
    (hit,) = result["hits"]
    stamps = sorted(c["timestamp"] for v in (1, 2, 3) for c in searched.captured(v).get("/ja/index.html", []))
    assert hit["captures"] == stamps and hit["count"] == 3
    assert (hit["first"], hit["last"]) == (stamps[0], stamps[-1])
    assert result["total_documents"] == 2  # two payloads of one URL (v3 changed its footer)
    assert result["total_exact"] is True
    assert "<mark>国会</mark>" in hit["snippet_html"]
    assert hit["title"] == "ウェブアーカイブ" and hit["lang"] == "ja"


def test_filters_and_facets(searched):
    pdf = run_query(searched, "library", type="pdf")
    assert paths(searched, pdf) == {"/docs/report.pdf"}
    assert paths(searched, run_query(searched, "library", type="application/pdf")) == {"/docs/report.pdf"}
    html = run_query(searched, "library", type="html")
    assert "/docs/report.pdf" not in paths(searched, html) and html["hits"]
    assert (
        run_query(searched, "library", site="127.0.0.1")["total_urls"] == run_query(searched, "library")["total_urls"]
    )
    assert run_query(searched, "library", site="example.org")["hits"] == []
    everything = run_query(searched, "")  # filters only: every payload
    images = run_query(searched, "", type="image")
    assert images["hits"] and all(h["type"] == "image" for h in images["hits"])
    facets = everything["facets"]
    assert {f["value"] for f in facets["type"]} >= {"html", "pdf", "image"}
    assert facets["site"] == [{"value": "127.0.0.1", "count": everything["total_urls"]}]
    year = searched.runs[0]["snapshot"][:4]
    assert facets["year"][0]["value"] == year
    assert sum(b["count"] for b in everything["histogram"]["buckets"]) == sum(h["count"] for h in everything["hits"])
    before = run_query(searched, "library", date_to="2001-01-01")
    assert before["hits"] == [] and before["total_documents"] == 0


def test_sort_and_pages(searched):
    full = run_query(searched, "library")
    count = run_query(searched, "library", per_page=2)["pages"]
    assert count == -(-len(full["hits"]) // 2) > 2
    pages = [run_query(searched, "library", page=n, per_page=2)["hits"] for n in range(1, count + 2)]
    assert pages[-1] == []
    assert [h["url"] for page in pages for h in page] == [h["url"] for h in full["hits"]]
    newest = run_query(searched, "library", sort="date")["hits"]
    assert [h["last"] for h in newest] == sorted((h["last"] for h in newest), reverse=True)
    oldest = run_query(searched, "library", sort="oldest")["hits"]
    assert [h["first"] for h in oldest] == sorted(h["first"] for h in oldest)


def test_rebuild_from_warcs_equals_incremental(searched, tmp_path):
    copy = copy_collection(searched, tmp_path / "collections")
    before = _documents(copy.coll)
    (copy.coll.db_path).unlink()  # the WARCs alone
    figures = rebuild(copy.coll)
    assert figures["rebuilt"] and figures["orphans"] == 0
    assert _documents(copy.coll) == before
    for q, _, _ in TABLE:
        # scores may differ (deleted documents still count in a segment's statistics): compare the rest
        assert _hitset(run_query(copy, q)) == _hitset(run_query(searched, q)), q
    assert fulltext.indexed_runs(open_index(copy.coll)) == {r["run_id"] for r in searched.runs}


def _hitset(result) -> set:
    return {(h["url"], tuple(h["captures"]), h["title"], h["snippet"]) for h in result["hits"]}


def test_incremental_parses_only_new_payloads(searched):
    first, second, third = searched.index_figures
    assert first["rebuilt"] and first["reason"] == "no full-text index yet"
    assert not second["rebuilt"] and not third["rebuilt"]
    for figures, version in ((second, 2), (third, 3)):
        new_responses = {
            cap["digest"]
            for caps in searched.captured(version).values()
            for cap in caps
            if cap["record_type"] == "response"
        }
        assert 0 < figures["parsed"] <= len(new_responses)
        assert figures["updated"] > 0 and figures["orphans"] == 0
    assert index_run(searched.coll, searched.runs[-1]["run_id"])["runs"] == []  # idempotent


def test_catches_up_runs_that_were_not_indexed(tmp_path):
    root = tmp_path / "collections"
    root.mkdir()
    s = harvest_and_index(root, versions=(1, 2, 3), index_after=(1, 3))
    assert sorted(s.index_figures[1]["runs"]) == sorted(r["run_id"] for r in s.runs[1:])
    assert fulltext.indexed_runs(open_index(s.coll)) == {r["run_id"] for r in s.runs}
    incremental = _documents(s.coll)
    rebuild(s.coll)
    assert _documents(s.coll) == incremental


def _documents(coll: Collection) -> dict:
    """Every document's captures, texts and metadata (after checking the index opens cleanly)."""
    return fulltext.documents(coll)


# -- hostile queries ---------------------------------------------------------------------------

HOSTILE = [
    "kind:run",
    "coll:private",
    "c:private",
    "collection:private",
    "domains:example.org",
    "url:*",
    "?*?*?*",
    "*",
    "[a TO z]",
    "{a TO z}",
    "library~5",
    "library^100 quinquennial",
    "ts:[0 TO 99999999999999]",
    " OR ".join(["library"] * 5000),
    " OR ".join(f"w{i}" for i in range(40)),
    "(" * 2000 + "library" + ")" * 2000,
    "(" * 100 + "library" + ")" * 100,
    "library " * 20000,
    "x" * 100_000,
    '"unclosed',
    "library)",
    "(library",
    "AND",
    "NOT",
    "library AND",
    "OR library",
    "\x00\x01",
    "图" * 600,
    "- - -",
    "()",
    '""',
]


@pytest.mark.parametrize("q", HOSTILE, ids=[q[:30] for q in HOSTILE])
def test_hostile_queries_are_refused_or_bounded(searched, tmp_path, q):
    started = time.monotonic()
    try:
        result = run_query(searched, q)
    except QueryError as exc:
        assert exc.http_status == 400 and exc.message
    else:
        assert result["timed_out"] or result["elapsed_ms"] < TIME_LIMIT * 1000
        urls = {h["url"] for h in result["hits"]}
        assert all(u.startswith(searched.base_url) for u in urls)
    assert time.monotonic() - started < TIME_LIMIT + 1.0


def test_filter_fields_cannot_be_reached_from_the_query(searched, tmp_path):
    root = tmp_path / "collections"
    copy_collection(searched, root, "public")
    copy_collection(searched, root, "private")
    for q in ("coll:private quinquennial", "c:private quinquennial", "collection:private quinquennial"):
        result = search(root, SearchParams(q=q, collections=["public"]))
        assert {h["collection"] for h in result["hits"]} <= {"public"}
    assert parse_query("kind:run").tree == ("tokens", ["kind", "run"], True)  # a phrase of two words
    assert run_query(searched, "kind:run")["hits"] == []
    assert run_query(searched, "type:pdf library", type="html")["hits"] == []  # text, not a filter
    assert run_query(searched, "site:example.org")["hits"] == []


def test_time_bound_returns_partial_results(searched):
    result = search(searched.root, SearchParams(q="", collections=[searched.name]), time_limit=0.0)
    assert result["timed_out"] and not result["exhaustive"]


def test_parse_when():
    assert parse_when("2024") == "20240101000000"
    assert parse_when("2024", end=True) == "20241231235959"
    assert parse_when("2024-02", end=True) == "20240229235959"
    assert parse_when("2024-03-05") == "20240305000000"
    assert parse_when("2024-03-05", end=True) == "20240305235959"
    assert parse_when("2024-03-05T12:30:00Z") == "20240305123000"
    assert parse_when("2024-03-05T12:30:00+09:00") == "20240305033000"
    assert parse_when("20240305120000") == "20240305120000"
    assert parse_when("2024030512", end=True) == "20240305125959"
    for bad in ("2024-13", "yesterday", "2024-02-30", "123"):
        with pytest.raises(QueryError):
            parse_when(bad)


# -- one writer, crashes -----------------------------------------------------------------------


def test_one_writer_at_a_time(searched, tmp_path):
    copy = copy_collection(searched, tmp_path / "collections")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from index.collection import Collection; "
            "from index.fulltext.store import write_lock\n"
            "with write_lock(Collection(Path(sys.argv[1]), sys.argv[2])):\n"
            "    print('locked', flush=True); time.sleep(30)",
            str(copy.root),
            copy.name,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(CollectionBusy):
            rebuild(copy.coll, wait=0.2)
    finally:
        holder.kill()
        holder.wait()
    assert rebuild(copy.coll)["rebuilt"]


@pytest.mark.parametrize("damage", ["garbage-toc", "truncated-segment", "missing-dir", "old-format"])
def test_damaged_index_is_detected_and_rebuilt(searched, tmp_path, damage):
    copy = copy_collection(searched, tmp_path / "collections")
    before = _documents(copy.coll)
    ft = copy.coll.fulltext_dir
    if damage == "garbage-toc":
        gen = max(int(p.name.split("_")[2].split(".")[0]) for p in ft.glob("_MAIN_*.toc"))
        (ft / f"_MAIN_{gen + 1}.toc").write_bytes(b"\x00torn commit" * 10)
    elif damage == "truncated-segment":
        for seg in ft.glob("*.seg"):
            seg.write_bytes(seg.read_bytes()[: seg.stat().st_size // 3])
    elif damage == "missing-dir":
        os.rename(ft, copy.coll.state_dir / "fulltext.old-crash")  # a crash between the two renames
    else:
        (ft / fulltext.FORMAT_FILE).write_text('{"format": 0}')
    if damage != "missing-dir":
        with pytest.raises(IndexUnusable):
            open_index(copy.coll, check=True)
    figures = index_run(copy.coll)
    assert figures["rebuilt"], figures
    assert _documents(copy.coll) == before


def test_killed_writer_leaves_an_index_that_opens(searched, tmp_path):
    """SIGKILL a rebuild at several points: the index left behind opens (the old one, or none
    at all between the two renames), and index_run brings it back to the same documents."""
    copy = copy_collection(searched, tmp_path / "collections")
    before = _documents(copy.coll)
    script = (
        "import sys; from pathlib import Path; from index.collection import Collection; "
        "from index.fulltext.rebuild import rebuild\n"
        "for _ in range(1000): rebuild(Collection(Path(sys.argv[1]), sys.argv[2]))"
    )
    for delay in (0.05, 0.2, 0.45, 0.7, 1.1):
        proc = subprocess.Popen([sys.executable, "-c", script, str(copy.root), copy.name], cwd=REPO)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        try:
            ix = open_index(copy.coll, check=True)
        except IndexUnusable as exc:  # pragma: no cover - would be a failure of the commit protocol
            pytest.fail(f"killed after {delay}s: {exc}")
        if ix is not None:
            assert _documents(copy.coll) == before
        index_run(copy.coll)
        assert _documents(copy.coll) == before


def test_several_captures_in_one_month_are_one_posting(tmp_path):
    """Whoosh's NUMERIC put such a document twice in a tier term's posting list, and a text query
    with a date filter then failed (AssertionError in IntersectionMatcher, seen at 10,000 documents).
    Capture dates are now rows of index.fulltext.captures, one per (document, timestamp): a document
    captured on several days of a month is one posting of the date filter and one hit."""
    from index.fulltext.captures import CaptureStore, CaptureTable
    from index.fulltext.documents import Payload
    from index.fulltext.rebuild import create

    coll = Collection.open(tmp_path, "months", create=True)
    docs = [
        (
            f"http://example.org/{n}",
            f"sha1:{n}",
            Payload(mime="text/html", text=f"common words {n}"),
            {f"202403{day:02d}120000" for day in range(1, 2 + n % 5)},
        )
        for n in range(20)
    ]
    create(coll, docs)
    with CaptureStore(coll.fulltext_dir) as store:
        ids = sorted(CaptureTable(store).docs_between("20240301000000", "20240331235959"))
        assert ids == list(range(20))
        rows = store.conn.execute("SELECT docnum, ts FROM captures").fetchall()
        assert len(rows) == len(set(rows)) == sum(len(stamps) for *_, stamps in docs)
    result = search(
        tmp_path,
        SearchParams(q="common", date_from="2024-03-01", date_to="2024-03-31", collections=["months"], per_page=100),
    )
    assert result["total_documents"] == 20 and len(result["hits"]) == 20
    for hit in result["hits"]:
        assert hit["captures"] == sorted(set(hit["captures"])) and hit["count"] == len(hit["captures"])


# -- the index's own structures ----------------------------------------------------------------


def _joined(reader, fieldname: str, term: str):
    from index.fulltext.postings import Postings, read_postings

    leaves = reader.leaf_readers() if not reader.is_atomic() else [(reader, 0)]
    parts = [p.rebased(base) for leaf, base in leaves if (p := read_postings(leaf, fieldname, term.encode()))]
    return Postings.join(parts).packed.tolist() if parts else []


def test_bulk_writer_keeps_document_numbers_when_it_merges(tmp_path):
    """index.fulltext.captures keys capture dates by document number: BulkWriter only appends and, when it
    merges a tail of segments, puts their documents first, so every document keeps its number.
    The merged posting lists equal a one-shot build's, and Whoosh's own queries read them."""
    from whoosh import index as whoosh_index
    from whoosh import query as wq

    from index.fulltext.documents import Payload, make_document, schema
    from index.fulltext.postings import BulkWriter

    def doc(n: int) -> dict:
        text = f"国立国会図書館 {'数据安全' * (n % 3)} word{n % 5} library {n} ウェブ{n % 4}"
        return make_document(
            f"http://example.org/{n}", f"sha1:{n}", Payload(mime="text/html", title=f"第{n}页", text=text)
        )

    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    one = whoosh_index.create_in(str(tmp_path / "one"), schema())
    writer = BulkWriter(one)
    for n in range(60):
        writer.add_document(**doc(n))
    writer.commit()
    many = whoosh_index.create_in(str(tmp_path / "many"), schema())
    n, segments = 0, []
    for size in (10, 10, 5, 20, 3, 12):
        writer = BulkWriter(many, expected=size)
        for _ in range(size):
            writer.add_document(**doc(n))
            n += 1
        writer.commit()
        segments.append(len(many._segments()))
    assert segments[-1] < 6 and max(segments) > 1, segments  # merged on the way
    with one.searcher() as a, many.searcher() as b:
        assert [a.stored_fields(i)["key"] for i in range(60)] == [b.stored_fields(i)["key"] for i in range(60)]
        for term in ("国会", "librari", "word3", "数据", "館", "ウェ", "页", "17"):
            assert _joined(a.reader(), "content", term) == _joined(b.reader(), "content", term), term
            assert _joined(a.reader(), "content", term), term
            ids = [v >> 32 for v in _joined(a.reader(), "content", term)]
            assert sorted(hit.docnum for hit in b.search(wq.Term("content", term), limit=None)) == ids
        assert [h["key"] for h in b.search(wq.Term("domains", "example.org"), limit=None)]
        for char in ("国", "館", "数", "ウ", "页"):  # every occurrence, from the bigrams and run ends
            packed = _joined(b.reader(), "chars", char)
            assert packed == _joined(a.reader(), "chars", char), char
            counts = {
                docnum: 3 * doc(docnum)["content"][0][0].count(char) + doc(docnum)["content"][3][0].count(char)
                for docnum in range(60)
            }
            assert [(v >> 32, v & 0xFFFF) for v in packed] == [(d, c) for d, c in counts.items() if c], char


def test_unchanged_pages_add_capture_rows_not_documents(searched):
    """After runs 2 and 3, only keys (URL, payload) new to the index became documents; the others
    got their new dates as rows. Indexing a run again writes nothing."""
    from index.storage.state import HarvestState

    for figures, run in zip(searched.index_figures[1:], searched.runs[1:], strict=True):
        with HarvestState(searched.coll.db_path) as state:
            keys = {
                (c["url"], c["digest"])
                for c in state.captures(run_id=run["run_id"])
                if c["digest"] and indexable(c["url"], c["status"] if c["status"] != 304 else None)
            }
        assert figures["added"] + figures["updated"] + figures["unchanged"] == len(keys)
        assert 0 < figures["added"] < len(keys) and figures["parsed"] <= figures["added"]
        assert figures["captures"] >= len(keys) - figures["unchanged"]
    ix = open_index(searched.coll)
    generation = ix.latest_generation()
    assert ix.doc_count_all() == len(_documents(searched.coll)) == sum(f["added"] for f in searched.index_figures)
    assert index_run(searched.coll, searched.runs[-1]["run_id"])["runs"] == []
    assert open_index(searched.coll).latest_generation() == generation


@pytest.mark.slow
def test_crash_between_the_two_commits_is_caught_up(tmp_path, monkeypatch):
    """Killed after Whoosh committed a run's documents and before their capture rows: the next
    index_run adds the rows and the run's captures; the result equals a rebuild's."""
    from index.fulltext.captures import CaptureStore

    root = tmp_path / "collections"
    root.mkdir()
    s = harvest_and_index(root, versions=(1, 2, 3), index_after=(1, 2))
    real_add = CaptureStore.add

    def killed(self, *args, **kwargs):
        raise RuntimeError("killed between the Whoosh commit and the capture rows")

    monkeypatch.setattr(CaptureStore, "add", killed)
    with pytest.raises(RuntimeError):
        index_run(s.coll, s.runs[2]["run_id"])
    monkeypatch.setattr(CaptureStore, "add", real_add)
    with CaptureStore(s.coll.fulltext_dir) as store:
        assert store.doc_count() < open_index(s.coll, check=True).doc_count_all()
        assert s.runs[2]["run_id"] not in store.runs()
    figures = index_run(s.coll, s.runs[2]["run_id"])
    assert not figures["rebuilt"] and figures["runs"] == [s.runs[2]["run_id"]]
    incremental = _documents(s.coll)
    assert all(doc["captures"] for doc in incremental.values())
    rebuild(s.coll)
    assert _documents(s.coll) == incremental


def test_search_sees_captures_added_after_it_opened_the_index(tmp_path):
    """Searches keep the index open per thread; a commit of capture rows alone (a run that found
    every page unchanged) must show."""
    from index.fulltext.captures import CaptureStore
    from index.fulltext.documents import Payload
    from index.fulltext.rebuild import create

    coll = Collection.open(tmp_path, "live", create=True)
    create(
        coll, [("http://example.org/", "sha1:1", Payload(mime="text/html", text="国会 archive"), {"20240101000000"})]
    )
    params = {"q": "国会", "date_from": "2025", "collections": ["live"]}
    assert search(tmp_path, SearchParams(**params))["hits"] == []
    with CaptureStore(coll.fulltext_dir) as store:
        store.add([], [(0, "20250101000000")], ["later-run"])
    (hit,) = search(tmp_path, SearchParams(**params))["hits"]
    assert hit["captures"] == ["20250101000000"]

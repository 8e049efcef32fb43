"""A browser-captured page's rendered text (``urn:text:`` records) is that page's text in the index,
both ways in: the rebuild from WARCs, and ``index_run`` for a run added since (found through the
CDXJ index, not the harvest state). WARCs written with warcio and Strata's record builders; the
CDXJ and harvest state by Strata's own rebuild."""

from __future__ import annotations

import io

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvester.browser.records import text_record
from index.capture.rebuild import rebuild_state
from index.collection import Collection
from index.fulltext import rendered
from index.fulltext.query import SearchParams, search
from index.fulltext.rebuild import rebuild
from index.fulltext.update import index_run

PAGE = "http://portal.example/article/1.html"
SHELL = b"<!DOCTYPE html><title>Article</title><article>Loading...</article>"


def write_run(coll: Collection, run_id: str, date: str, text: str, title: str = "Article one") -> None:
    coll.archive_dir.mkdir(parents=True, exist_ok=True)
    with open(coll.archive_dir / f"{run_id}.warc.gz", "wb") as fh:
        writer = WARCWriter(fh, gzip=True, warc_version="1.1")
        writer.write_record(writer.create_warcinfo_record(f"{run_id}.warc.gz", {"run-id": run_id, "mode": "full"}))
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        page = writer.create_warc_record(
            PAGE, "response", payload=io.BytesIO(SHELL), http_headers=http, warc_headers_dict={"WARC-Date": date}
        )
        writer.write_record(page)
        writer.write_record(text_record(PAGE, text, title, date, page.rec_headers.get_header("WARC-Record-ID")))


def hits(root, word: str) -> list[tuple[str, list[str]]]:
    found = search(root, SearchParams(q=word))
    return [(hit["url"], sorted(hit["captures"])) for hit in found["hits"]]


def test_the_rebuild_indexes_rendered_text_as_the_pages_text(tmp_path):
    root = tmp_path / "collections"
    coll = Collection.open(root, "js", create=True)
    write_run(coll, "r1", "2024-03-01T10:00:00Z", "Loaded by script: quillwort and more.")
    rebuild_state(coll)
    figures = rebuild(coll)
    assert figures["documents"] == 2  # the HTML shell and the page as rendered
    assert hits(root, "quillwort") == [(PAGE, ["20240301100000"])]
    assert hits(root, "loading") == [(PAGE, ["20240301100000"])]  # the shell keeps its own document
    found = search(root, SearchParams(q="quillwort"))["hits"][0]
    assert found["title"] == "Article one"


def test_a_later_run_adds_its_rendered_text_through_index_run(tmp_path):
    root = tmp_path / "collections"
    coll = Collection.open(root, "js", create=True)
    write_run(coll, "r1", "2024-03-01T10:00:00Z", "First version: quillwort.")
    rebuild_state(coll)
    rebuild(coll)
    write_run(coll, "r2", "2024-06-01T10:00:00Z", "Second version: bladderwort.")
    write_run(coll, "r3", "2024-09-01T10:00:00Z", "Second version: bladderwort.")  # the same text again
    rebuild_state(coll)
    figures = index_run(coll, "r2")
    assert not figures["rebuilt"]
    assert figures["runs"] == ["r2", "r3"]
    assert hits(root, "bladderwort") == [(PAGE, ["20240601100000", "20240901100000"])]
    assert hits(root, "quillwort") == [(PAGE, ["20240301100000"])]


def test_only_text_records_of_http_pages_count():
    assert rendered.page_of("urn:text:http://a.example/") == "http://a.example/"
    assert rendered.page_of("urn:view:http://a.example/") is None
    assert rendered.page_of("urn:text:file:///etc/passwd") is None
    assert rendered.page_of("http://a.example/") is None
    assert rendered.page_of(None) is None

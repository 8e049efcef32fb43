"""Better search over a real harvest of the records office site (``tests.support.meta_site``):
English stemming and prefixes, main text apart from menus and footers, metadata fields from
JSON-LD, Open Graph, Dublin Core and PDF document info with their filters (search API, web page,
``strata search``), the publications page, and the rebuild of all of it from the WARCs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from lxml import html as lxml_html

from cli import cli
from index.fulltext import store as fulltext
from index.fulltext.documents import FORMAT, FORMAT_FILE, IndexUnusable
from index.fulltext.params import SearchParams
from index.fulltext.query import search
from index.fulltext.rebuild import rebuild
from index.fulltext.store import open_index
from replay.app import create_app
from strata.errors import QueryError
from tests.support.meta_fixtures import MetaHarvest
from tests.support.meta_site import ARTICLES, PDFS, MetaSite


def run(m: MetaHarvest, q: str = "", **kw) -> dict:
    kw.setdefault("per_page", 100)
    return search(m.root, SearchParams(q=q, collections=[m.name], **kw))


def paths(m: MetaHarvest, result: dict) -> list[str]:
    return [h["url"][len(m.base_url) :] for h in result["hits"]]


@pytest.fixture
def client(meta_harvest):
    return create_app(meta_harvest.root).test_client()


# -- stemming and prefixes -----------------------------------------------------------------------------


def test_a_plural_finds_a_page_that_says_only_the_singular(meta_harvest):
    page = MetaSite().pages["/news/archive-opens.html"][1].decode()
    assert "archive" in page and "archives" not in page.lower()
    for q in ("archives", "archived", "ARCHIVE", "arch*", "archiv*", "archive*"):
        result = run(meta_harvest, q)
        assert "/news/archive-opens.html" in paths(meta_harvest, result), q
    hit = next(h for h in run(meta_harvest, "archives")["hits"] if h["url"].endswith("archive-opens.html"))
    assert "<mark>archive</mark>" in hit["snippet_html"]
    prefixed = next(h for h in run(meta_harvest, "arch*")["hits"] if h["url"].endswith("archive-opens.html"))
    assert "<mark>archive</mark>" in prefixed["snippet_html"]
    assert run(meta_harvest, '"opens its new reading rooms"')["hits"]  # phrases match on stems too
    assert not run(meta_harvest, "archeology")["hits"]


def test_a_prefix_needs_two_letters(meta_harvest):
    with pytest.raises(QueryError, match="at least 2"):
        run(meta_harvest, "a*")


def test_cjk_words_are_found_as_before(meta_harvest):
    # inside 港湾測量の記録: the report, then the listing that links to it
    assert paths(meta_harvest, run(meta_harvest, "測量")) == ["/reports/survey.html", "/news/"]
    assert "/reports/survey.html" in paths(meta_harvest, run(meta_harvest, "閲覧"))


# -- main text and boilerplate ---------------------------------------------------------------------


def test_a_menu_word_is_not_a_hit_on_every_page_in_the_main_field(meta_harvest):
    everywhere = run(meta_harvest, "accessibility")
    html_pages = [h for h in everywhere["hits"] if h["type"] == "html"]
    assert len(html_pages) >= 9  # the menu is on every page: in scope "all" they are all hits ...
    assert paths(meta_harvest, everywhere)[0] == "/accessibility.html"  # ... ranked below the page about it
    main = run(meta_harvest, "accessibility", scope="main")
    assert paths(meta_harvest, main) == ["/accessibility.html"]
    assert not run(meta_harvest, "contact", scope="main")["hits"]  # only in menus and footers
    for hit in run(meta_harvest, "contact")["hits"]:
        assert "Contact" not in hit["snippet"] and "<mark>" not in hit["snippet_html"]  # snippets: main text


def test_snippets_start_in_the_main_text_not_the_menu(meta_harvest):
    for hit in run(meta_harvest, "harbour")["hits"]:
        assert "Home News Publications" not in hit["snippet"], hit["url"]


def test_listing_pages_do_not_rank_first_for_content_words(meta_harvest):
    ranked = paths(meta_harvest, run(meta_harvest, "ledgers"))
    assert "/news/" in ranked  # its list of links is still searchable ...
    assert set(ranked[:3]) == {"/news/ledgers-1.html", "/news/ledgers-2.html", "/news/ledgers-3.html"}  # ... below


def test_boilerplate_is_stored_apart(meta_harvest):
    docs = fulltext.documents(meta_harvest.coll)
    page = next(d for k, d in docs.items() if k.startswith(meta_harvest.base_url + "/accessibility.html "))
    assert "Home News Publications" in page["boilerplate"] and "Home News" not in page["text"]
    assert page["text"].startswith("Accessibility\nAccessibility matters to us")


# -- metadata --------------------------------------------------------------------------------------


def _doc(m: MetaHarvest, path: str) -> dict:
    docs = fulltext.documents(m.coll)
    return next(d for k, d in docs.items() if k.startswith(m.base_url + path + " "))


@pytest.mark.parametrize("article", ARTICLES, ids=[a.path for a in ARTICLES])
def test_metadata_of_pages_from_jsonld_opengraph_and_dublin_core(meta_harvest, article):
    doc = _doc(meta_harvest, article.path)
    got = {k: doc[k] for k in ("author", "publisher", "published", "keywords", "lang", "description")}
    assert got == article.meta


@pytest.mark.parametrize("pdf", PDFS, ids=[p.path for p in PDFS])
def test_metadata_of_pdfs_from_their_document_info(meta_harvest, pdf):
    doc = _doc(meta_harvest, pdf.path)
    assert doc["title"] == pdf.title
    assert (doc["author"] or "") == pdf.author
    assert doc["description"] == pdf.subject and doc["keywords"] == pdf.keywords
    assert doc["published"] == pdf.created.date().isoformat()
    assert (doc["lang"] or "") == pdf.lang[:2]


@pytest.mark.parametrize(
    "filters,expected",
    [
        ({"author": "seacole"}, ["/news/archive-opens.html"]),
        ({"author": "Port Authority"}, ["/pubs/tide-tables-1923.pdf", "/reports/survey.html"]),
        ({"title": "tide tables"}, ["/pubs/tide-tables-1923.pdf"]),
        ({"keyword": "digitisation"}, ["/news/ledgers-1.html", "/news/ledgers-2.html", "/news/ledgers-3.html"]),
        ({"keyword": "測量"}, ["/reports/survey.html"]),
        ({"lang": "ja"}, ["/reports/survey.html"]),
        ({"published_from": "2024-02", "published_to": "2024-02"}, ["/news/ledgers-1.html", "/news/ledgers-2.html"]),
        ({"published_to": "2021"}, ["/pubs/scan-0042.pdf", "/pubs/tide-tables-1923.pdf"]),
        ({"published_from": "2024-03-01", "type": "pdf"}, ["/pubs/annual-report-2023.pdf"]),
    ],
)
def test_metadata_filters(meta_harvest, filters, expected):
    assert sorted(paths(meta_harvest, run(meta_harvest, **filters))) == expected
    with_words = run(meta_harvest, "harbour", **filters)  # filters and a query together
    assert set(paths(meta_harvest, with_words)) <= set(expected)


def test_hits_carry_the_metadata(meta_harvest):
    hit = run(meta_harvest, "reading", author="seacole")["hits"][0]
    assert (hit["author"], hit["publisher"], hit["published"]) == (
        "Mary Seacole",
        "Harbour Records Office",
        "2023-05-17",
    )
    assert hit["lang"] == "en" and hit["keywords"] == "reading room; maritime history"


@pytest.mark.parametrize(
    "filters,message",
    [
        ({"lang": "english"}, "language code"),
        ({"published_from": "May 2024"}, "published from must be a date"),
        ({"published_from": "2024-05", "published_to": "2024-01"}, "after"),
        ({"scope": "menus"}, "in must be one of"),
        ({"title": "..."}, "no searchable words"),
    ],
)
def test_bad_filters_are_refused_with_a_message(meta_harvest, filters, message):
    with pytest.raises(QueryError, match=message):
        run(meta_harvest, "harbour", **filters)


def test_filters_on_the_web_page_api_and_cli(meta_harvest, client):
    response = client.get("/search?q=ledgers&author=" + quote("Tomas Reyes") + "&published_from=2024-03")
    assert response.status_code == 200
    doc = lxml_html.fromstring(response.get_data(as_text=True))
    urls = [u[len(meta_harvest.base_url) :] for u in doc.xpath("//article[@class='hit']/@data-url")]
    assert urls == ["/news/ledgers-3.html"]
    assert doc.xpath("//article[@class='hit']//span[@class='published']/text()") == ["published 2024-03-14"]
    assert doc.xpath("//details[@id='more-filters'][@open]")
    data = client.get("/api/search?q=accessibility&in=main").get_json()
    assert [h["url"][len(meta_harvest.base_url) :] for h in data["hits"]] == ["/accessibility.html"]
    assert data["in"] == "main"
    bad = client.get("/api/search?q=x&lang=klingon")
    assert bad.status_code == 400 and "language code" in bad.get_json()["error"]

    runner = CliRunner()
    root = str(meta_harvest.root)
    args = ["search", meta_harvest.name, "--root", root, "--json"]
    out = runner.invoke(cli, [*args, "--lang", "ja"])
    assert out.exit_code == 0, out.output
    assert [h["url"][len(meta_harvest.base_url) :] for h in json.loads(out.output)["hits"]] == ["/reports/survey.html"]
    out = runner.invoke(cli, [*args, "accessibility", "--in", "main"])
    assert [h["url"][len(meta_harvest.base_url) :] for h in json.loads(out.output)["hits"]] == ["/accessibility.html"]
    out = runner.invoke(cli, ["search", meta_harvest.name, "--root", root, "--published-from", "2024-13"])
    assert isinstance(out.exception, QueryError) and "published from must be a date" in out.exception.message
    out = runner.invoke(cli, ["search", meta_harvest.name, "tide", "--root", root, "--title", "tables"])
    assert out.exit_code == 0 and "2021-06-15 · Port Authority Library" in out.output


# -- publications ----------------------------------------------------------------------------------


def test_publications_page_lists_the_sites_pdfs_one_click_from_replay(meta_harvest, client):
    coll = client.get(f"/{meta_harvest.name}/")
    doc = lxml_html.fromstring(coll.get_data(as_text=True))
    link = doc.xpath(f"//tr[@data-host='{meta_harvest.host}']//a[@class='publications']/@href")
    assert link == [f"/{meta_harvest.name}/publications/{meta_harvest.host}"]
    response = client.get(link[0])
    assert response.status_code == 200
    page = lxml_html.fromstring(response.get_data(as_text=True))
    entries = page.xpath("//li[@class='publication']")
    assert [e.get("data-url")[len(meta_harvest.base_url) :] for e in entries] == [
        "/pubs/annual-report-2023.pdf",  # newest publication first
        "/pubs/tide-tables-1923.pdf",
        "/pubs/scan-0042.pdf",
    ]
    titles = [e.xpath(".//a[contains(@class, 'title')]/text()")[0] for e in entries]
    assert titles == ["Annual Report 2023", "Tide Tables of 1923", "scan-0042.pdf"]  # no title: its file name
    dates = [e.xpath(".//span[@class='published']/text()") for e in entries]
    assert dates == [["published 2024-03-31"], ["published 2021-06-15"], ["published 2020-01-02"]]
    for entry in entries:
        replay = entry.xpath(".//a[contains(@class, 'replay')]/@href")[0]
        answer = client.get(replay)
        assert answer.status_code == 200 and answer.get_data().startswith(b"%PDF"), replay
    data = client.get(f"/api/publications/{meta_harvest.name}/{meta_harvest.host}").get_json()
    assert data["total"] == 3 and data["entries"][0]["author"] == "Harbour Records Office"
    empty = client.get(f"/{meta_harvest.name}/publications/nowhere.example")
    assert empty.status_code == 200 and b"No PDF documents" in empty.get_data()
    assert client.get("/nocollection/publications/x.org").status_code == 404


# -- rebuilt from the WARCs ------------------------------------------------------------------------


def test_rebuild_from_warcs_gives_the_same_fields_and_old_indexes_are_refused(meta_harvest, tmp_path):
    import shutil

    from index.collection import Collection

    root = tmp_path / "collections"
    shutil.copytree(meta_harvest.root / meta_harvest.name, root / meta_harvest.name)
    coll = Collection(root, meta_harvest.name)
    before = fulltext.documents(coll)
    figures = rebuild(coll)
    assert figures["documents"] == len(before)
    assert fulltext.documents(coll) == before  # metadata, boilerplate and captures, from the WARCs alone

    meta = coll.fulltext_dir / FORMAT_FILE
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "format": 3}))
    with pytest.raises(IndexUnusable, match=f"format 3, expected {FORMAT}.*strata index rebuild"):
        open_index(coll)
    shown = subprocess.run(
        [str(Path(sys.executable).parent / "strata"), "search", coll.name, "archive", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode != 0 and "Traceback" not in shown.stderr
    assert f"rebuild it from the WARC files with: strata index rebuild {coll.name}" in shown.stderr
    out = CliRunner().invoke(cli, ["index", "rebuild", coll.name, "--only", "fulltext", "--root", str(root)])
    assert out.exit_code == 0, out.output
    assert run(MetaHarvestLike(root, coll.name), "archives")["hits"]


class MetaHarvestLike:
    def __init__(self, root, name):
        self.root, self.name = root, name

"""The search's fields and facets are declared once (``index.fulltext.fields``) and read by the query,
the web form and its template, the JSON API, the CLI and the export: a new facet is one
declaration, seen everywhere."""

from __future__ import annotations

import dataclasses
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from click.testing import CliRunner
from lxml import html as lxml_html

from cli import cli
from index.fulltext import fields
from index.fulltext.params import SearchParams
from index.fulltext.query import search


@pytest.fixture
def client(searched):
    from replay import create_app

    app = create_app(searched.root)
    app.config["STRATA_ROOT"] = searched.root
    return app.test_client()


def test_every_search_parameter_is_declared_once():
    declared = [field.name for field in fields.FIELDS]
    assert len(declared) == len(set(declared)) == 16
    assert len({field.param for field in fields.FIELDS}) == 16
    params = {f.name for f in dataclasses.fields(SearchParams)} - {"meta"}  # meta: the checked filters
    assert set(declared) == params


def test_a_request_is_read_into_search_params_by_the_declarations():
    args = {"q": ["x"], "from": ["2024"], "type": ["pdf"], "c": ["a", "", "b"], "in": ["main"], "lang": ["ja"]}
    values = fields.params_of(lambda k: (args.get(k) or [None])[0], lambda k: args.get(k, []), per_page=10)
    assert SearchParams(**values) == SearchParams(
        q="x", date_from="2024", type="pdf", collections=["a", "b"], scope="main", lang="ja", page="1", per_page="10"
    )
    bare = SearchParams(**fields.params_of(lambda k: None, lambda k: [], per_page=20))
    assert bare == SearchParams(q="", page="1", per_page="20")


def test_the_cli_has_an_option_for_each_declared_filter_and_order():
    text = CliRunner().invoke(cli, ["search", "--help"], terminal_width=200).output
    for field in fields.FIELDS:
        if field.kind in ("capture", "meta", "order"):
            assert field.option in text, field.option


def test_a_new_facet_is_one_declaration(client, searched, monkeypatch):
    """A facet of the URLs' first path segment, declared here only: counted by the query, listed by
    the template, and its values' links set the parameters it declares."""
    section = fields.Facet(
        "section",
        "Section",
        lambda hit: (urlsplit(hit["url"]).path.split("/")[1] or "/",),
        lambda value: {"q": value},
    )
    monkeypatch.setattr(fields, "FACETS", (*fields.FACETS, section))
    from replay import search as web

    monkeypatch.setattr(web, "FACETS", fields.FACETS)
    result = search(searched.root, SearchParams(q="library"))
    counted = {f["value"]: f["count"] for f in result["facets"]["section"]}
    assert counted and sum(counted.values()) == result["total_urls"]

    doc = lxml_html.fromstring(client.get("/search?q=library").get_data(as_text=True))
    links = doc.xpath("//ul[@id='facet-section']//a")
    assert [a.text for a in links] == [f["value"] for f in result["facets"]["section"]]
    assert parse_qs(urlsplit(links[0].get("href")).query)["q"] == [links[0].text]
    assert (
        client.get("/api/search?q=" + quote("library")).get_json()["facets"]["section"] == result["facets"]["section"]
    )

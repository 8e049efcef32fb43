"""The search page and JSON API in the replay application, and the key flow in headless Chromium."""

from __future__ import annotations

import shutil
import time
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from lxml import html as lxml_html

from cli import cli
from tests.conftest import REPO
from tests.support.chromium import launched
from tests.support.replay_fixtures import StrataServer

ARTIFACTS = REPO / "tests" / "artifacts"


@pytest.fixture
def client(searched):
    from replay import create_app

    app = create_app(searched.root)
    app.config["STRATA_ROOT"] = searched.root
    return app.test_client()


def test_search_page_lists_hits_with_replay_and_calendar_links(client, searched):
    response = client.get("/search?q=" + quote("保存"))
    assert response.status_code == 200
    doc = lxml_html.fromstring(response.get_data(as_text=True))
    hits = doc.cssselect("article.hit") if hasattr(doc, "cssselect") else doc.xpath("//article[@class='hit']")
    assert {h.get("data-url")[len(searched.base_url) :] for h in hits} == searched.expected(["保存"])
    for hit in hits:
        replay = hit.xpath(".//a[@class='replay']/@href")[0]
        calendar = hit.xpath(".//a[@class='calendar']/@href")[0]
        coll, ts, url = replay.split("/", 3)[1:]
        assert coll == searched.name and len(ts) == 14 and url == hit.get("data-url")
        assert calendar == f"/{coll}/{ts}*/{url}"
        assert hit.xpath(".//mark/text()") == ["保存"] * len(hit.xpath(".//mark"))
        assert client.get(replay).status_code == 200
        assert client.get(calendar).status_code == 200
    assert doc.xpath("//ul[@id='facet-type']//a/text()") == ["html"]
    assert doc.xpath("//figure[@id='histogram']//a[@class='bar']")


def test_date_filter_and_pagination(client, searched):
    lo, hi = searched.window(2)
    response = client.get(f"/search?q=quinquennial+OR+%E5%9B%BD%E4%BC%9A&from={lo}&to={hi}")
    doc = lxml_html.fromstring(response.get_data(as_text=True))
    urls = {u[len(searched.base_url) :] for u in doc.xpath("//article/@data-url")}
    assert urls == {"/docs/report.pdf", "/ja/index.html"}
    assert all("1 capture in range" in " ".join(m.text_content().split()) for m in doc.xpath("//article//div[2]"))
    paged = client.get("/search?q=library&per_page=2&page=2")
    doc = lxml_html.fromstring(paged.get_data(as_text=True))
    assert len(doc.xpath("//article")) == 2 and doc.xpath("//nav[@id='pager']//a[@rel='prev']")


def test_json_api_has_the_same_parameters(client, searched):
    data = client.get("/api/search?q=library&type=pdf").get_json()
    assert [h["url"][len(searched.base_url) :] for h in data["hits"]] == ["/docs/report.pdf"]
    hit = data["hits"][0]
    assert hit["replay"] == f"/{searched.name}/{hit['replay_ts']}/{hit['url']}"
    assert set(data) >= {"hits", "facets", "histogram", "total_urls", "page", "pages", "timed_out"}


@pytest.mark.parametrize(
    "q",
    ["coll:private", "?*?*?*", "[a TO z]", " OR ".join(["x"] * 3000), "(" * 2000 + "a", "y" * 100_000, "library AND"],
)
def test_hostile_queries_get_400_with_a_message(client, q):
    started = time.monotonic()
    api = client.get("/api/search", query_string={"q": q})
    page = client.get("/search", query_string={"q": q})
    assert time.monotonic() - started < 3
    if api.status_code == 200:
        assert api.get_json()["hits"] == []
        assert page.status_code == 200
    else:
        assert api.status_code == 400 and api.get_json()["error"]
        assert page.status_code == 400 and 'id="error"' in page.get_data(as_text=True)


def test_bad_parameters_get_400(client):
    for args in (
        {"q": "x", "from": "someday"},
        {"q": "x", "sort": "size"},
        {"q": "x", "page": "0"},
        {"q": "x", "type": "<script>"},
        {"q": "x", "from": "2024-05", "to": "2024-01"},
    ):
        assert client.get("/api/search", query_string=args).status_code == 400, args
    assert client.get("/api/search", query_string={"q": "library", "c": "nosuch"}).status_code == 404


def test_cli_search_and_rebuild(searched, tmp_path):
    runner = CliRunner()
    root = str(searched.root)
    result = runner.invoke(cli, ["search", searched.name, "国会", "--json", "--root", root])
    assert result.exit_code == 0, result.output
    import json

    answer = json.loads(result.output)
    assert answer["total"] == 1 and answer["pages"] == 1 and answer["page"] == 1
    (hit,) = answer["hits"]
    assert hit["url"].endswith("/ja/index.html") and len(hit["captures"]) == 3 and "国会" in hit["snippet"]
    lo, hi = searched.window(2)
    for when in ((lo, hi), (f"{lo[:4]}-{lo[4:6]}-{lo[6:8]}T{lo[8:10]}:{lo[10:12]}:{lo[12:]}Z", hi)):
        result = runner.invoke(
            cli, ["search", searched.name, "国会", "--from", when[0], "--to", when[1], "--json", "--root", root]
        )
        assert [len(h["captures"]) for h in json.loads(result.output)["hits"]] == [1]
    text = runner.invoke(cli, ["search", searched.name, "quinquennial", "--type", "pdf", "--root", root])
    assert "report.pdf" in text.output and "1 URLs" in text.output
    copy = tmp_path / "collections"
    shutil.copytree(searched.root / searched.name, copy / searched.name)
    rebuilt = runner.invoke(cli, ["index", "rebuild", searched.name, "--root", str(copy)])
    assert rebuilt.exit_code == 0 and "rebuilt" in rebuilt.output
    assert runner.invoke(cli, ["search", searched.name, "a AND", "--root", root]).exit_code != 0


@pytest.mark.slow
@pytest.mark.browser
def test_browser_search_filter_and_follow_into_replay(searched, tmp_path):
    server = StrataServer(searched.root, tmp_path / "serve.log")
    ARTIFACTS.mkdir(exist_ok=True)
    lo, hi = searched.window(2)
    try:
        with launched() as browser:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(server.base_url + "/search")
            page.fill("#q", "quinquennial OR 国会 OR 数据")
            page.click("#go")
            page.wait_for_selector("#hits")
            assert page.locator("article.hit").count() == 3
            page.fill("#from", lo)
            page.fill("#to", hi)
            page.click("#go")
            page.wait_for_selector("#summary")
            assert "captured" in page.inner_text("#summary")
            found = {
                u[len(searched.base_url) :]
                for u in page.eval_on_selector_all("article.hit", "els => els.map(e => e.dataset.url)")
            }
            assert found == searched.expected(["quinquennial", "国会", "数据"], versions=(2,))
            assert page.locator("mark").count() >= 3
            page.screenshot(path=str(ARTIFACTS / "search-results.png"), full_page=True)
            link = page.locator("article.hit[data-url$='/ja/index.html'] a.replay")
            href = link.get_attribute("href")
            link.click()
            page.wait_for_load_state("load")
            assert page.url.endswith(href)
            texts = [frame.content() for frame in page.frames]
            assert any("国立国会図書館" in t for t in texts)
            page.screenshot(path=str(ARTIFACTS / "search-replay.png"))
    finally:
        server.stop()

"""A host's site map against the collection whose captures are known (``history_fixtures``): the
folders and pages of each level with their counts, first and last capture and changes since a date,
the treemap, the JSON, and the counts as a level sees them when an access rule hides a page."""

from __future__ import annotations

import lxml.html
import pytest

from index.access.rules import AccessRules, Rule
from replay import create_app
from tests.support.history_fixtures import SITE, write_known


def rows(client, query: str = "") -> dict[str, tuple[int, int, str, str, int]]:
    r = client.get("/known/sitemap/site.test" + query)
    assert r.status_code == 200, r.get_data(as_text=True)[:400]
    doc = lxml.html.fromstring(r.get_data())
    return {
        tr.get("data-name"): (
            int(tr.get("data-urls")),
            int(tr.get("data-captures")),
            tr.xpath("string(td[4])"),
            tr.xpath("string(td[5])").strip(),
            int(tr.get("data-changed")),
        )
        for tr in doc.xpath('//table[@id="entries"]/tbody/tr')
    }


def test_each_folder_with_its_counts_and_changes_since_a_date(known_client):
    assert rows(known_client, "?since=2024-01-01") == {
        "news/": (2, 5, "2023-11-02", "2024-03-20", 2),  # a.html deleted, b.html new then changed
        "about/": (1, 1, "2024-03-05", "2024-03-05", 1),
        "": (1, 5, "2023-05-10", "2024-03-20", 1),
    }
    assert rows(known_client, "?since=2024-03-10") == {
        "news/": (2, 5, "2023-11-02", "2024-03-20", 1),
        "about/": (1, 1, "2024-03-05", "2024-03-05", 0),
        "": (1, 5, "2023-05-10", "2024-03-20", 1),
    }
    assert rows(known_client, "?folder=/news/&since=2024-03-01") == {
        "a.html": (1, 3, "2023-11-02", "2024-03-05", 1),
        "b.html": (1, 2, "2024-01-15", "2024-03-20", 1),
    }
    doc = lxml.html.fromstring(known_client.get("/known/sitemap/site.test?folder=news").data)
    assert doc.xpath('//nav[@id="path"]//a/text()') == ["/", "news/"]
    assert doc.xpath('//figure[@id="treemap"]/*[local-name()="svg"]')  # the picture, in its two shapes
    links = doc.xpath('//table[@id="entries"]//td[@class="url"]/a/@href')
    assert links == [f"/known/*/{SITE}/news/a.html", f"/known/*/{SITE}/news/b.html"]


def test_the_same_as_json(known_client):
    data = known_client.get("/api/sitemap/known/site.test?folder=/&since=2024-01-01").get_json()
    assert data["total"]["urls"] == 4 and data["total"]["captures"] == 11 and data["total"]["changed"] == 4
    assert [(e["name"], e["folder"], e["urls"]) for e in data["entries"]] == [
        ("news/", True, 2),
        ("about/", True, 1),
        ("", False, 1),
    ]
    missing = known_client.get("/api/sitemap/known/nosuch.test")
    assert missing.status_code == 404 and "Nothing archived" in missing.get_json()["error"]
    assert known_client.get("/api/sitemap/known/site.test?since=yesterday").status_code == 400


@pytest.fixture
def hidden_root(tmp_path):
    root = tmp_path / "collections"
    root.mkdir()
    write_known(root)
    AccessRules(root / "known").add(Rule.new(SITE + "/news/a.html", "exclude", reason="hidden", by="t"))
    return root


def test_a_hidden_page_counts_nowhere(hidden_root):
    client = create_app(hidden_root).test_client()
    assert rows(client, "?since=2024-01-01")["news/"] == (1, 2, "2024-01-15", "2024-03-20", 1)
    assert rows(client, "?folder=/news/&since=2024-01-01") == {"b.html": (1, 2, "2024-01-15", "2024-03-20", 1)}

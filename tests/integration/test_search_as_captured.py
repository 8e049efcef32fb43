"""A search hit's title and snippet are those of the capture its link opens, and its downloads give
absolute replay addresses. On the collection whose captures are known: the home page's three
versions share words (word21 to word46), and each has words of its own."""

from __future__ import annotations

import csv
import io
import json

import pytest

from demo.history import page_key
from index.fulltext.rebuild import rebuild
from replay import create_app
from tests.support.history_fixtures import SITE, write_known


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("as-captured") / "collections"
    root.mkdir()
    rebuild(write_known(root))
    return create_app(root).test_client()


def home_hit(client, **params) -> dict:
    result = client.get("/api/search", query_string=params).get_json()
    hits = [h for h in result["hits"] if h["url"] == SITE + "/"]
    assert len(hits) == 1, result
    return hits[0]


@pytest.mark.parametrize(
    ("params", "opens", "version"),
    [
        ({"q": "word30"}, "20240320100000", 3),  # in every version: the latest opens, v3's text shows
        ({"q": "word30", "to": "2024-02"}, "20240115100000", 2),  # the latest in range
        ({"q": "word30", "from": "2023-06"}, "20231102100000", 1),  # only a start: the first in range, a revisit
        ({"q": "word10"}, "20231102100000", 1),  # only in v1: its last capture
    ],
)
def test_title_and_snippet_come_from_the_capture_the_link_opens(client, params, opens, version):
    hit = home_hit(client, **params)
    assert hit["replay_ts"] == opens and hit["replay"].endswith(f"/known/{opens}/{SITE}/")
    assert hit["title"] == f"home v{version}"
    assert "<mark>" in hit["snippet_html"]


def test_downloads_give_absolute_replay_addresses(client):
    rows = list(csv.DictReader(io.StringIO(client.get("/search/export.csv?q=word30").text)))
    assert rows and all(r["replay"].startswith("http://localhost/known/") for r in rows)
    home = next(r for r in rows if r["url"] == SITE + "/")
    assert home["title"] == "home v3"
    lines = client.get("/search/export.jsonl?q=" + page_key(SITE + "/news/b.html", 1)).text.splitlines()
    assert [json.loads(line)["replay"] for line in lines] == [
        f"http://localhost/known/20240115100002/{SITE}/news/b.html"
    ]

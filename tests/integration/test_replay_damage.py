"""Replay of a damaged record: a clear error page, never its torn bytes and never another capture in
its place; every other capture still replays. Real harvests of the sample site, bytes flipped inside
a record's gzip member on disk, requests through the real replay application."""

from __future__ import annotations

import gzip

import lxml.html
import pytest

from index.cdx import cdxj
from index.collection import Collection
from replay import create_app
from tests.support.replay_fixtures import harvest_versions

NAME = "dmg"


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    root = tmp_path_factory.mktemp("damage") / "collections"
    root.mkdir()
    archive = harvest_versions(root, NAME, (1, 2))
    coll = Collection(root, NAME)
    lines = list(cdxj.iter_index(coll.cdxj_path))
    first, second = coll.warc_files()
    revisited = {(x["url"], x["digest"]) for x in lines if x["mime"] == "warc/revisit"}
    # a page that changed in run 2 (its run-2 record is a response) ...
    changed = next(
        x for x in lines if x["filename"] == second and x["mime"] == "text/html" and x["url"] == archive.url("/")
    )
    # ... and one whose run-1 response is the original of a run-2 revisit
    original = max(
        (
            x
            for x in lines
            if x["filename"] == first and (x["url"], x["digest"]) in revisited and x["mime"] == "text/html"
        ),
        key=lambda x: int(x["length"]),
    )
    bodies = {}
    for line in (changed, original):
        path = coll.archive_dir / line["filename"]
        data = bytearray(path.read_bytes())
        start, length = int(line["offset"]), int(line["length"])
        bodies[line["url"]] = gzip.decompress(bytes(data[start : start + length]))
        for i in range(10):
            data[start + length - 40 + i] ^= 0xA5
        path.write_bytes(bytes(data))
    app = create_app(root)
    return {
        "client": app.test_client(),
        "changed": changed,
        "original": original,
        "lines": lines,
        "bodies": bodies,
        "revisit": next(x for x in lines if x["filename"] == second and x["url"] == original["url"]),
    }


def get(client, ts: str, url: str, mod: str = ""):
    return client.get(f"/{NAME}/{ts}{mod}/{url}")


def assert_damage_page(response, body: bytes) -> None:
    assert response.status_code == 502
    page = lxml.html.fromstring(response.get_data())
    assert "This capture is damaged in the archive" in page.cssselect("h1")[0].text_content()
    assert page.cssselect("#damaged")
    # nothing of the record's content: not its title, not a line of its text
    html = lxml.html.fromstring(body.split(b"\r\n\r\n", 2)[-1])
    title = html.findtext(".//title")
    assert title and title not in response.get_data(as_text=True)


@pytest.mark.parametrize("mod", ["", "id_", "mp_"])
def test_a_damaged_response_answers_the_damage_page_not_an_older_capture(damaged, mod):
    line = damaged["changed"]
    response = get(damaged["client"], line["timestamp"], line["url"], mod)
    assert_damage_page(response, damaged["bodies"][line["url"]])


def test_a_revisit_whose_original_is_damaged_answers_the_damage_page(damaged):
    original, revisit = damaged["original"], damaged["revisit"]
    assert revisit["mime"] == "warc/revisit"
    for line in (original, revisit):
        response = get(damaged["client"], line["timestamp"], line["url"], "id_")
        assert_damage_page(response, damaged["bodies"][original["url"]])


def test_every_other_capture_still_replays(damaged):
    broken = {
        (damaged["changed"]["filename"], damaged["changed"]["offset"]),
        (damaged["original"]["filename"], damaged["original"]["offset"]),
    }
    broken_urls = {damaged["original"]["url"]}
    checked = 0
    for line in damaged["lines"]:
        if (line["filename"], line["offset"]) in broken or line["url"] in broken_urls:
            continue
        if line.get("status", "200") != "200" or line["url"].startswith("urn:strata:run:"):
            continue  # a run's report is not a capture: Strata's replay answers 404 for it
        response = get(damaged["client"], line["timestamp"], line["url"], "id_")
        assert response.status_code == 200, (line["url"], line["timestamp"], response.status_code)
        checked += 1
    assert checked > 30
    # the changed page's earlier capture is intact and replays
    earlier = next(
        x
        for x in damaged["lines"]
        if x["url"] == damaged["changed"]["url"] and x["timestamp"] < damaged["changed"]["timestamp"]
    )
    assert get(damaged["client"], earlier["timestamp"], earlier["url"], "id_").status_code == 200

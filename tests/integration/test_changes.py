"""Changes side by side and over time: the two captures of a page rendered with the removed and
added words marked in place (nothing active left, a sandbox policy sent), an image at its natural
size with its dimensions, and a URL's changes listed newest first with how much each changed."""

from __future__ import annotations

import struct
import zlib

import lxml.html
import pytest

from index.access.rules import AccessRules, Rule
from index.capture.rebuild import rebuild_state
from index.collection import Collection
from replay import create_app
from tests.support.banner_fixtures import PAGE, TIMESTAMPS
from tests.support.history_fixtures import SITE, write_known
from tests.support.warc_makers import Cap, write_warc

FIRST, REVISIT, EDITED = TIMESTAMPS


@pytest.fixture(scope="module")
def mixed_client(mixed_archive):
    return create_app(mixed_archive.root).test_client()


def test_the_two_rendered_pages_mark_what_changed_in_place(mixed_client):
    page = lxml.html.fromstring(mixed_client.get(f"/mixed/diff/{FIRST}/{EDITED}/{PAGE}").data)
    frames = {f.get("id"): f for f in page.xpath("//iframe")}
    assert set(frames) == {"rendered-old", "rendered-new"} and all(f.get("sandbox") == "" for f in frames.values())
    old = mixed_client.get(frames["rendered-old"].get("src"))
    new = mixed_client.get(frames["rendered-new"].get("src"))
    for r in (old, new):
        assert r.status_code == 200 and r.mimetype == "text/html"
        assert r.headers["Content-Security-Policy"].startswith("sandbox; default-src 'none'")
        assert b"<script" not in r.data.lower()
    old_doc, new_doc = lxml.html.fromstring(old.data), lxml.html.fromstring(new.data)
    assert [d.text for d in old_doc.xpath("//del[@class='strata-del']")] == ["nine"]
    assert [i.text for i in new_doc.xpath("//ins[@class='strata-ins']")] == ["ten"]
    assert "Bring a reader's card." in new_doc.text_content()  # the page itself, unmarked where unchanged
    for href in new_doc.xpath("//link[@rel='stylesheet']/@href"):
        assert href.startswith(f"/mixed/{EDITED}cs_/") and mixed_client.get(href).status_code == 200
    bad = mixed_client.get(f"/mixed/marked/both/{FIRST}/{EDITED}/{PAGE}")
    assert bad.status_code == 404


def _png(width: int, height: int) -> bytes:
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def test_an_image_at_its_natural_size_with_its_dimensions(tmp_path):
    root = tmp_path / "collections"
    root.mkdir()
    coll = Collection.open(root, "img", create=True)
    url = "http://img.test/logo.png"
    write_warc(coll.archive_dir / "a.warc.gz", [Cap(url, "2024-01-01T00:00:00Z", _png(60, 30), mime="image/png")])
    write_warc(coll.archive_dir / "b.warc.gz", [Cap(url, "2024-02-01T00:00:00Z", _png(80, 30), mime="image/png")])
    rebuild_state(coll)
    client = create_app(root).test_client()
    doc = lxml.html.fromstring(client.get(f"/img/diff/20240101000000/20240201000000/{url}").data)
    assert "60 × 30 px" in doc.get_element_by_id("diff-summary").text_content()
    assert [(img.get("width"), img.get("height")) for img in doc.xpath("//div[@id='diff-images']//img")] == [
        ("60", "30"),
        ("80", "30"),
    ]


def test_a_urls_changes_over_time_newest_first(known_client):
    doc = lxml.html.fromstring(known_client.get(f"/known/changes/{SITE}/news/a.html").data)
    rows = doc.xpath("//table[@id='changes']/tbody/tr")
    assert [(r.get("data-timestamp"), r.get("data-kind")) for r in rows] == [
        ("20240305100001", "deleted"),
        ("20231102100001", "new"),
    ]
    link = rows[0].xpath(".//a[@class='compare-link']/@href")[0]
    assert link == f"/known/diff/20240115100001/20240305100001/{SITE}/news/a.html"
    assert doc.xpath("//figure[starts-with(@id, 'timeline-')]/@id") == ["timeline-2024", "timeline-2023"]


def test_a_hidden_capture_is_never_marked_or_listed(tmp_path):
    root = tmp_path / "collections"
    root.mkdir()
    write_known(root)
    AccessRules(root / "known").add(Rule.new(SITE + "/news/b.html", "exclude", reason="t", by="t"))
    client = create_app(root).test_client()
    assert client.get(f"/known/changes/{SITE}/news/b.html").status_code == 404
    assert client.get(f"/known/marked/new/20240115100002/20240320100001/{SITE}/news/b.html").status_code == 404
    assert client.get(f"/known/changes/{SITE}/").status_code == 200


def test_changes_are_measured_in_words_where_search_holds_the_texts(tmp_path):
    from index.fulltext.rebuild import rebuild

    root = tmp_path / "collections"
    root.mkdir()
    rebuild(write_known(root))
    doc = lxml.html.fromstring(create_app(root).test_client().get(f"/known/changes/{SITE}/").data)
    words = {
        r.get("data-timestamp"): (r.xpath("td[3]/@data-added"), r.xpath("td[3]/@data-removed"))
        for r in doc.xpath("//table[@id='changes']/tbody/tr")
    }
    # v2 -> v3 keeps its size (0 bytes) but changes 10 words (7 of the text, its key, "3" and "v3")
    assert words["20240320100000"] == (["10"], ["10"])
    assert words["20230510100000"][0] and int(words["20230510100000"][0][0]) > 40  # new: every word

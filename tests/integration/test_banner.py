"""The replay banner's navigation as served (the Chromium tests click it): previous and next capture
with whether each differs, the snapshots at the same URL, and the header that lets the banner count
embedded resources taken from a later capture."""

from __future__ import annotations

import lxml.html
import pytest

PAGE = "http://reading.example/"
FIRST, REVISIT, EDITED = "20240110090000", "20240210090000", "20240310090000"


@pytest.fixture(scope="module")
def mixed_client(mixed_archive):
    from replay import create_app

    return create_app(mixed_archive.root).test_client()


def banner(client, path: str):
    r = client.get(path)
    assert r.status_code == 200
    template = lxml.html.fromstring(r.data).xpath('//template[@id="strata-banner-content"]')
    return (
        lxml.html.fromstring(lxml.html.tostring(template[0])).get_element_by_id("strata-banner") if template else None
    )


def test_previous_and_next_with_whether_they_differ(mixed_client):
    b = banner(mixed_client, f"/mixed/{REVISIT}/{PAGE}")
    prev, nxt = b.get_element_by_id("strata-prev"), b.get_element_by_id("strata-next")
    assert (prev.get("href"), nxt.get("href")) == (f"/mixed/{FIRST}/{PAGE}", f"/mixed/{EDITED}/{PAGE}")
    assert b.get_element_by_id("strata-prev-diff").text_content() == "same"  # the revisit: same digest
    changed = b.get_element_by_id("strata-next-diff")
    assert changed.text_content() == "changed" and changed.xpath("a/@href") == [
        f"/mixed/diff/{REVISIT}/{EDITED}/{PAGE}"
    ]
    assert b.get_element_by_id("strata-calendar").get("href") == f"/mixed/{REVISIT}*/{PAGE}"

    first = banner(mixed_client, f"/mixed/{FIRST}/{PAGE}")
    assert first.get_element_by_id("strata-prev").text_content() == "first capture"
    last = banner(mixed_client, f"/mixed/{PAGE}")  # the TimeGate's latest capture
    assert last.get_element_by_id("strata-next").text_content() == "latest capture"


def test_snapshots_at_the_same_url(mixed_client):
    b = banner(mixed_client, f"/mixed/202402/{PAGE}")  # as of the end of February: the second snapshot
    items = b.xpath('//details[@id="strata-snapshots"]//li')
    assert [li.xpath("a/@data-snapshot")[0] for li in items] == [EDITED, REVISIT, FIRST]
    assert [li.get("class") for li in items] == [None, "current", None]
    assert items[1].xpath("a/@href") == [f"/mixed/{REVISIT}/{PAGE}"]
    assert "this capture" in items[1].text_content()


def test_frames_get_no_banner_and_no_lookups(mixed_client):
    r = mixed_client.get(f"/mixed/{FIRST}mp_/{PAGE}")
    assert r.status_code == 200 and b"strata-banner-content" not in r.data


def test_a_later_embed_says_so_in_a_header(mixed_client):
    later = mixed_client.get(f"/mixed/{FIRST}im_/http://reading.example/b.png")
    assert later.status_code == 200 and later.headers["Server-Timing"] == f'strata-later;desc="{EDITED}"'
    as_of = mixed_client.get(f"/mixed/{FIRST}im_/http://reading.example/a.png")
    assert as_of.status_code == 200 and "Server-Timing" not in as_of.headers
    assert "Server-Timing" not in mixed_client.get(f"/mixed/{EDITED}im_/http://reading.example/b.png").headers

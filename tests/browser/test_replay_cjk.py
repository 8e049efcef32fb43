"""Replay of GBK, GB18030, Shift_JIS and UTF-8 pages with non-ASCII links, against what Chromium did
on the live site (``tests.support.replay_cjk_fixtures``): the archive holds what Chromium requested there,
and on replay Chromium must request the same URLs behind the replay prefix and find them.
"""

from __future__ import annotations

import re

import pytest

from strata.charset import codec_for_label
from tests.support.replay_cjk_pages import COLL, PAGES, TIMESTAMP, click_each_link, replay_url


def text_of(tab) -> str | None:
    return tab.evaluate("(document.getElementById('text') || {}).innerText || null")


@pytest.fixture(scope="module")
def cjk_client(cjk_archive):
    from replay import create_app

    return create_app(cjk_archive).test_client()


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.path)
def test_rewritten_links_keep_the_characters_and_delimiters_the_page_wrote(cjk_client, live_visit, page):
    response = cjk_client.get(f"/{COLL}/{TIMESTAMP}/{live_visit.base_url}{page.path}")
    assert response.status_code == 200
    hrefs = re.findall(rb'<a class="l" href="([^"]*)"', response.data)
    assert len(hrefs) == len(page.links)
    prefix = f"/{COLL}/{TIMESTAMP}/{live_visit.base_url}".encode()
    for written, href in zip(page.links, hrefs, strict=True):
        original = written.encode(page.codec)
        # relative links are left to the browser; absolute paths get the replay prefix, nothing else
        assert href == (prefix + original if written.startswith("/") else original), (written, href)
        assert b"%3F" not in href and b"%26amp%3B" not in href


@pytest.mark.browser
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.path)
def test_clicking_a_link_on_replay_requests_what_chromium_requested_live(chromium, cjk_server, live_visit, page):
    origin = cjk_server.base_url
    context = chromium.new_context()
    tab = context.new_page()
    navigations: list = []
    tab.on("request", lambda req: navigations.append(req) if req.is_navigation_request() else None)
    prefix = replay_url(origin, live_visit.base_url)
    requested, shown = [], []

    def clicked(i):
        req = navigations[-1]
        requested.append(req.url)
        shown.append((req.response().status, text_of(tab)))

    click_each_link(tab, replay_url(origin, live_visit.base_url + page.path), len(page.links), clicked)
    context.close()
    live = live_visit.clicks[page.path]
    assert requested == [prefix + path for path in live]
    assert shown == [(200, live_visit.target_text[path]) for path in live]


def test_a_link_to_a_non_ascii_host_replays_under_its_punycode_name(cjk_client):
    # Left unquoted in the page, http://例え.jp/ is requested as /cjk/<ts>/http://%E4%BE%8B%E3%81%88.jp/
    response = cjk_client.get(f"/{COLL}/{TIMESTAMP}/http://%E4%BE%8B%E3%81%88.jp/a.html?q=%B4%F3")
    assert response.status_code == 404
    assert b'id="not-archived"><span class="url">http://xn--r8jz45g.jp/a.html?q=%B4%F3</span>' in response.data


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.path)
def test_the_replayed_content_type_names_the_charset_chromium_used_live(cjk_client, live_visit, page):
    response = cjk_client.get(f"/{COLL}/{TIMESTAMP}/{live_visit.base_url}{page.path}")
    content_type = response.headers["Content-Type"]
    if page.declared == "none":
        # valid UTF-8 is declared; a legacy encoding is left to the browser's detector, as live
        assert content_type == ("text/html; charset=utf-8" if page.codec == "utf-8" else "text/html")
        return
    charset = content_type.split("charset=", 1)[1]
    assert codec_for_label(charset) == codec_for_label(live_visit.charset[page.path])  # as browsers map labels
    if page.declared == "meta":
        assert charset == page.meta_charset  # as written: gb2312 is the browser's GBK, as live
    if page.header_charset:
        assert charset == page.header_charset  # the archived header, right or wrong


@pytest.mark.browser
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.path)
def test_each_page_reads_in_chromium_as_it_did_live(chromium, cjk_server, live_visit, page):
    context = chromium.new_context()
    tab = context.new_page()
    response = tab.goto(replay_url(cjk_server.base_url, live_visit.base_url + page.path), wait_until="load")
    assert response.status == 200
    charset, shown = tab.evaluate("document.characterSet"), text_of(tab)
    context.close()
    if page.declared == "none" and page.codec == "utf-8":
        # Chromium never detects UTF-8 (live it showed windows-1252 mojibake); replay shows the text
        # as the harvester decoded it and stored its links
        assert (live_visit.charset[page.path], charset) == ("windows-1252", "UTF-8")
    else:
        assert charset == live_visit.charset[page.path]
        assert shown == live_visit.text[page.path]
    if page.declared != "wrong-header":
        assert shown == page.text  # its own text, no mojibake


def test_another_escaping_of_an_archived_url_finds_the_same_capture(cjk_client, live_visit):
    # A harvester may escape what Chromium sends raw (\ as %5C) or write hex in lower case: the
    # index's canonical key is the same, so the capture is found in place (no fuzzy redirect).
    variants = {}
    for path in live_visit.responses:
        variant = re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), path).replace("\\", "%5C")
        if variant != path:
            variants[path] = variant
    assert any("%5C" in v for v in variants.values()) and len(variants) > 10
    for path, variant in variants.items():
        response = cjk_client.get(f"/{COLL}/{TIMESTAMP}id_/{live_visit.base_url}{variant}")
        assert response.status_code == 200, variant
        assert response.data == live_visit.responses[path].body

"""A fuzzy match (pywb's rules: another query on an archived path, say) is never presented as the
URL that was asked for: ``id_`` answers 404 as for a URL never archived, a page mode redirects to
the matched URL's own replay address, whose banner names the URL shown."""

from __future__ import annotations

import html
import re

import pytest

from tests.support.replay_cjk_pages import COLL, IRI_PATH, TIMESTAMP, replay_url

ARCHIVED = "/gbk/search.html?s=%B4%F3&p=1"  # clicked on /gbk/header.html live
UNARCHIVED = ["/gbk/search.html?s=%B4%F3&p=999", "/gbk/search.html?zzz=1", "/gbk/search.html"]


@pytest.fixture(scope="module")
def cjk_client(cjk_archive):
    from replay import create_app

    return create_app(cjk_archive).test_client()


def banner_url(page: bytes) -> str:
    return html.unescape(re.search(rb'<span class="url">([^<]*)</span>', page).group(1).decode())


def test_the_fixture_archived_the_matched_url_and_not_the_others(live_visit):
    assert ARCHIVED in live_visit.responses
    assert not set(UNARCHIVED) & set(live_visit.responses)


@pytest.mark.parametrize("path", UNARCHIVED)
def test_raw_replay_of_a_url_never_archived_is_404_not_another_urls_bytes(cjk_client, live_visit, path):
    response = cjk_client.get(f"/{COLL}/{TIMESTAMP}id_/{live_visit.base_url}{path}")
    assert response.status_code == 404
    assert b'id="not-archived"' in response.data
    assert live_visit.responses[ARCHIVED].body not in response.data


@pytest.mark.parametrize("mod", ["", "mp_", "if_"])
@pytest.mark.parametrize("path", UNARCHIVED)
def test_a_page_mode_redirects_to_the_matched_urls_own_address(cjk_client, live_visit, path, mod):
    response = cjk_client.get(f"/{COLL}/{TIMESTAMP}{mod}/{live_visit.base_url}{path}")
    assert response.status_code == 302
    matched = live_visit.base_url + ARCHIVED
    assert response.headers["Location"] == f"/{COLL}/{TIMESTAMP}{mod}/{matched}"
    followed = cjk_client.get(response.headers["Location"])
    assert followed.status_code == 200
    assert "Content-Location" not in followed.headers or followed.headers["Content-Location"].endswith(matched)


def test_the_redirect_to_a_capture_stored_under_an_iri_is_ascii(cjk_client, live_visit):
    # IRI_PATH with a tracking parameter, which pywb's rules drop before comparing keys
    asked = "/%E5%85%B6%E4%BB%96/%E9%A1%B5.html?a=1&utm_source=feed"
    response = cjk_client.get(f"/{COLL}/{TIMESTAMP}/{live_visit.base_url}{asked}")
    assert response.status_code == 302
    location = response.headers["Location"]
    assert location == f"/{COLL}/{TIMESTAMP}/{live_visit.base_url}/%E5%85%B6%E4%BB%96/%E9%A1%B5.html?a=1"
    followed = cjk_client.get(location)
    assert followed.status_code == 200
    assert f"TARGET {IRI_PATH}".encode() in followed.data


def test_a_timegate_request_redirects_too(cjk_client, live_visit):
    response = cjk_client.get(f"/{COLL}/{live_visit.base_url}{UNARCHIVED[0]}")
    assert response.status_code == 302
    assert response.headers["Location"] == f"/{COLL}/{TIMESTAMP}/{live_visit.base_url}{ARCHIVED}"


def test_an_exact_capture_is_served_where_it_was_asked_for(cjk_client, live_visit):
    for mod in ("", "id_"):
        response = cjk_client.get(f"/{COLL}/{TIMESTAMP}{mod}/{live_visit.base_url}{ARCHIVED}")
        assert response.status_code == 200
    assert (
        banner_url(cjk_client.get(f"/{COLL}/{TIMESTAMP}/{live_visit.base_url}{ARCHIVED}").data)
        == live_visit.base_url + ARCHIVED
    )


@pytest.mark.browser
def test_in_chromium_the_address_and_the_banner_name_the_url_shown(chromium, cjk_server, live_visit):
    context = chromium.new_context()
    tab = context.new_page()
    response = tab.goto(replay_url(cjk_server.base_url, live_visit.base_url + UNARCHIVED[0]), wait_until="load")
    matched = live_visit.base_url + ARCHIVED
    assert response.status == 200
    assert tab.url == replay_url(cjk_server.base_url, matched)
    assert tab.locator("#strata-banner .url").inner_text() == matched
    assert tab.locator("#text").inner_text() == live_visit.target_text[ARCHIVED]
    context.close()

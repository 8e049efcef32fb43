""" "Cite this" names the public archive, also on the restricted host (``public_url``, which
``strata serve --staff-host`` sets from ``--archive-url``); a page read by staff there is cited where
readers will find it."""

from __future__ import annotations

import lxml.html

from replay import create_app
from replay.access_grants import COOKIE, ENTRY_PATH, Grants
from replay.hosts import build_site
from tests.support.access_fixtures import RESTRICTED

PUBLIC = "https://archive.example.org"


def cite_of(response) -> str:
    assert response.status_code == 200, response.data[:300]
    template = lxml.html.fromstring(response.data).xpath("//template[@id='strata-banner-template']")
    doc = lxml.html.fromstring(lxml.html.tostring(template[0])) if template else lxml.html.fromstring(response.data)
    return doc.get_element_by_id("strata-cite-url").get("href")


def test_the_restricted_host_cites_the_public_address(ruled):
    app = create_app(ruled.root, {"restricted_hosts": [RESTRICTED], "public_url": PUBLIC})
    token = Grants(ruled.root).issue("tester", RESTRICTED)
    client = app.test_client()
    assert client.get(f"{ENTRY_PATH}?token={token}&next=/", headers={"Host": RESTRICTED}).status_code == 200
    page = f"/{ruled.name}/{ruled.snapshot}/{ruled.url('/')}"
    cite = cite_of(client.get(page, headers={"Host": RESTRICTED}))
    assert cite.startswith(PUBLIC + "/") and RESTRICTED not in cite
    assert client.get_cookie(COOKIE, domain=RESTRICTED) is not None
    # without the setting, the address the page came from (the public host)
    plain = create_app(ruled.root).test_client()
    assert cite_of(plain.get(page)).startswith("http://localhost/")


def test_serve_with_a_staff_host_sets_it_from_the_archive_url(ruled):
    site = build_site(ruled.root, "staff.localhost", archive_url=PUBLIC, restricted_host=RESTRICTED)
    assert site.replay_app.extensions["strata_replay"]["settings"]["public_url"] == PUBLIC

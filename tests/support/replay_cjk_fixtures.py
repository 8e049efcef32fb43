"""Fixtures for replay of legacy-encoded pages (``tests.support.replay_cjk_pages``): what Chromium does on
the live site, and an archive of exactly what it asked for.

``live_visit`` (session) opens every page in headless Chromium on the live site, notes the charset
Chromium chose and the text it shows, and clicks every link, recording the request Chromium sent
(the server's raw request line). ``cjk_archive`` then writes a WARC with warcio holding every
response the live site gave (the pages and each target under the URL Chromium requested, as a
harvester that encodes URLs like a browser stores them) and indexes it with pywb's indexer; the
site is stopped by then. ``cjk_server`` runs ``strata serve`` on that root.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from demo.site_server import Resource, SiteServer
from index.cdx import cdxj
from index.collection import Collection
from tests.support.chromium import launched
from tests.support.replay_cjk_pages import (
    COLL,
    IRI_PATH,
    PAGES,
    CjkSite,
    LiveVisit,
    click_each_link,
    target_body,
    write_warc,
)


@pytest.fixture(scope="module")
def chromium():
    with launched() as browser:
        yield browser


@pytest.fixture(scope="session")
def live_visit() -> LiveVisit:
    site = SiteServer(CjkSite()).start()
    try:
        with launched() as browser:
            return visit(browser, site)
    finally:
        site.stop()


def visit(browser, site: SiteServer) -> LiveVisit:
    """Every page, then every link of it clicked, on the live site."""
    context = browser.new_context()
    page = context.new_page()
    charset, text, clicks, target_text = {}, {}, {}, {}
    for p in PAGES:
        page.goto(site.url(p.path), wait_until="load")
        charset[p.path] = page.evaluate("document.characterSet")
        text[p.path] = page.locator("#text").inner_text()
        clicks[p.path] = []

        def clicked(i, p=p):
            site_path = site.request_log[-1].path
            clicks[p.path].append(site_path)
            target_text[site_path] = page.locator("#text").inner_text()

        click_each_link(page, site.url(p.path), len(p.links), clicked)
    context.close()
    model = CjkSite()
    responses = {r.path: model.resolve(1, r.path, {}) for r in site.request_log}
    responses = {path: res for path, res in responses.items() if res is not None}
    return LiveVisit(site.base_url, charset, text, clicks, target_text, responses)


@pytest.fixture(scope="session")
def cjk_archive(tmp_path_factory, live_visit) -> Path:
    """A collections root holding collection ``cjk``: the live visit's responses, indexed."""
    root = tmp_path_factory.mktemp("cjk") / "collections"
    coll = Collection.open(root, COLL, create=True)
    warc = coll.archive_dir / "cjk.warc.gz"
    iri = Resource(200, (("Content-Type", "text/html; charset=utf-8"),), target_body(IRI_PATH))
    write_warc(warc, live_visit.base_url, {**live_visit.responses, IRI_PATH: iri})
    cdxj.write_index(coll.cdxj_path, cdxj.index_warc(warc, warc.name))
    return root


@pytest.fixture(scope="session")
def cjk_server(cjk_archive):
    from tests.support.replay_fixtures import StrataServer

    server = StrataServer(cjk_archive, cjk_archive.parent / "strata-serve.log")
    yield server
    server.stop()

"""Every URL Strata requests on the CJK test site is a URL Chromium requests on the same pages.

Headless Chromium (Debian's /usr/bin/chromium through Playwright) crawls tests/cjk_site.py from
``/``: it loads each page, reads ``a.href`` of every link (the browser's own URL parser, which
encodes the query in the document's encoding) and loads each same-site one, while the site's
request log records what it asked for. On every group's index page it also clicks each link, and
the requests those clicks make must be exactly the ``a.href`` values. Then Strata harvests the
site and the sets of requested URLs must be equal, byte for byte: undeclared GBK, GB18030 and
Shift_JIS pages, ``<meta>``-only pages, pages whose header names the wrong charset (both follow
the header into 404s), non-ASCII paths and queries, ``&amp;``, ASCII second bytes (``%95\\``).
"""

from __future__ import annotations

import html
import json
import subprocess
import time

import pytest

from demo.site_server import Resource, SiteServer
from strata.urls import normalize_url
from tests.conftest import VENV_BIN
from tests.support.chromium import launched
from tests.support.cjk_site import GROUPS, LIVE_CHARSET, start_cjk_site

pytestmark = pytest.mark.browser

MAX_PAGES = 300
DEADLINE = 120.0


@pytest.fixture(scope="module")
def browser():
    with launched() as browser:
        yield browser


@pytest.fixture
def site():
    with start_cjk_site() as site:
        yield site


def chromium_crawl(browser, site) -> dict[str, tuple[str, list[str]]]:
    """Load every page reachable from / in Chromium: {target: (characterSet, [a.href targets])}."""
    seen: dict[str, tuple[str, list[str]]] = {}
    queue = ["/"]
    deadline = time.monotonic() + DEADLINE
    page = browser.new_page()
    try:
        while queue and len(seen) < MAX_PAGES and time.monotonic() < deadline:
            target = queue.pop(0)
            if target in seen:
                continue
            response = page.goto(site.url(target))
            charset = page.evaluate("document.characterSet")
            hrefs = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
            links = [href[len(site.base_url) :] for href in hrefs if href.startswith(site.base_url + "/")]
            seen[target] = (charset if response.status == 200 else "", links)
            queue.extend(link for link in links if link not in seen)
    finally:
        page.close()
    assert not queue, "the Chromium crawl did not finish within its bounds"
    return seen


@pytest.mark.slow
def test_strata_requests_exactly_what_chromium_requests(browser, site, root):
    crawl = chromium_crawl(browser, site)
    chromium = site.requested_targets()
    assert chromium == set(crawl)
    # Chromium read each page as LIVE_CHARSET says (and tests/test_charset.py checks sniff_html decides).
    for target, (charset, _) in crawl.items():
        page = site.pages.get(target)
        if page is not None:
            assert charset == LIVE_CHARSET[page.group], target
    # The site serves what Chromium asks for on correctly read pages; wrong headers lead to 404s.
    missing = {target for target in chromium if target not in site.pages}
    assert missing and all(t.split("/")[1].endswith("-wrong") or "%26%23" in t for t in missing), missing
    assert len(chromium) > 80

    site.clear_log()
    # As a user would: the CLI in its own process (Playwright's loop holds this thread).
    done = subprocess.run(
        [
            str(VENV_BIN / "strata"),
            "harvest",
            "cjk",
            "--seed",
            site.url("/"),
            "--depth",
            "6",
            "--delay",
            "0",
            "--json",
            "--root",
            str(root),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["status"] == "finished"
    strata = site.requested_targets()
    assert strata - chromium == set(), "requested by Strata only"
    assert chromium - strata == set(), "requested by Chromium only"


@pytest.mark.slow
def test_clicking_each_link_requests_its_a_href(browser, site):
    page = browser.new_page()
    try:
        for group in GROUPS:
            index = f"/{group.name}/"
            page.goto(site.url(index))
            hrefs = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
            for number, href in enumerate(hrefs):
                page.goto(site.url(index))
                site.clear_log()
                with page.expect_navigation():
                    page.locator("a[href]").nth(number).click()
                clicked = [path for method, path in site.requested() if path != "/favicon.ico"]
                assert clicked == [href[len(site.base_url) :]], (group.name, number)
    finally:
        page.close()


def test_every_printable_ascii_character_is_encoded_as_chromium_encodes_it(browser):
    """Path and query, each printable ASCII character, as a.href in Chromium and normalize_url."""
    chars = [chr(c) for c in range(0x20, 0x7F) if chr(c) not in "#?/&=%"]
    hrefs = [f"/p{c}x?q{c}y" for c in chars] + [
        "/a%zz?b%zz",
        "/a%41?b%41",
        "/a%7c?b%7C",
        "\\a\\b?c\\d",
        " /lead?x=1 ",
        "/t\tab?n\nl",
    ]
    body = '<meta charset="utf-8">' + "".join(f'<a href="{html.escape(h)}">x</a>' for h in hrefs)

    class Model:
        def resolve(self, version, path, headers):
            return Resource(200, (("Content-Type", "text/html"),), body.encode()) if path == "/" else None

    with SiteServer(Model()) as server:
        page = browser.new_page()
        try:
            page.goto(server.url("/"))
            chromium = page.evaluate("[...document.querySelectorAll('a')].map(a => a.href)")
        finally:
            page.close()
        strata = [normalize_url(href, server.url("/")) for href in hrefs]
    differ = [(h, c, s) for h, c, s in zip(hrefs, chromium, strata, strict=True) if c != s]
    # Chromium keeps an escape's hex digits as written ("%7c"); Strata uppercases them (same URL).
    assert differ == [("/a%7c?b%7C", server.base_url + "/a%7c?b%7C", server.base_url + "/a%7C?b%7C")]

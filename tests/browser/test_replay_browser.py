"""A snapshot page in headless Chromium (Debian's, driven by Playwright), the live site stopped.

Every image, stylesheet and script the page asks for must come from Strata (none from the live
site, none from anywhere else), the page must show the text of the version harvested in that run,
and a screenshot is saved under ``tests/artifacts/`` for a person to look at.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import lxml.html
import pytest

from demo.sample_site import MARKERS, SampleSite
from tests.conftest import REPO
from tests.support.chromium import launched
from tests.support.served_site import live_site_is_down

pytestmark = pytest.mark.browser

ARTIFACTS = REPO / "tests" / "artifacts"


@pytest.fixture(scope="module")
def browser():
    with launched() as browser:
        yield browser


def latest_titles(version: int) -> list[str]:
    doc = lxml.html.fromstring(SampleSite.resource(version, "/").body)
    return [" ".join(li.text_content().split()) for li in doc.xpath('//ul[@class="latest"]/li')]


@pytest.mark.slow
@pytest.mark.parametrize("run", [0, 2])
def test_snapshot_page_in_chromium(browser, archives, strata_server, run):
    three = archives["three"]
    assert live_site_is_down(three.base_url)
    snapshot = three.snapshots[run]
    version = run + 1
    origin = strata_server.base_url
    requests: list[tuple[str, str]] = []
    failed: list[str] = []
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    page = context.new_page()
    page.on("request", lambda req: requests.append((req.resource_type, req.url)))
    page.on("requestfailed", lambda req: failed.append(req.url))
    response = page.goto(f"{origin}/three/{snapshot}/{three.url('/')}", wait_until="networkidle")
    assert response.status == 200

    # everything came from Strata: the archive, or pywb's and Strata's own static files
    http_requests = [(kind, url) for kind, url in requests if url.startswith(("http:", "https:"))]
    assert http_requests and not failed
    assert all(url.startswith(origin + "/") for _, url in http_requests), http_requests
    subresources = [
        (kind, urlsplit(url).path) for kind, url in http_requests if kind in ("image", "stylesheet", "script")
    ]
    archived = {kind for kind, path in subresources if path.startswith(f"/three/{snapshot}")}
    assert {"image", "stylesheet", "script"} <= archived, subresources
    for kind, path in subresources:
        assert path.startswith((f"/three/{snapshot}", "/static/pywb/", "/static/strata/")), (kind, path)

    # the version harvested in that run, rendered: its latest-news list, its marker, its script ran
    shown = [" ".join(t.split()) for t in page.locator("ul.latest li").all_inner_texts()]
    assert shown == latest_titles(version)
    assert MARKERS["/"] in page.locator("main").inner_text()
    assert page.evaluate("document.documentElement.classList.contains('js')")
    assert page.evaluate("document.querySelector('header img').naturalWidth") > 0
    banner = page.locator("#strata-banner")
    assert "captured" in banner.inner_text() and banner.get_attribute("data-fallback") == "as-of"
    assert banner.get_attribute("data-capture") <= snapshot

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"replay-snapshot-run{run + 1}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert not context.cookies()
    context.close()


def test_following_a_link_stays_in_the_snapshot(browser, archives, strata_server):
    three = archives["three"]
    snapshot = three.snapshots[1]
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{strata_server.base_url}/three/{snapshot}/{three.url('/')}", wait_until="networkidle")
    page.locator("nav a", has_text="About").click()
    page.wait_for_load_state("networkidle")
    assert urlsplit(page.url).path == f"/three/{snapshot}/{three.url('/about.html')}"
    assert MARKERS["/about.html"] in page.locator("main").inner_text()
    context.close()

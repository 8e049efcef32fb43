"""The search histogram on a true time axis, and the publications page, in headless Chromium at
1280 and 390 px (screenshots in tests/artifacts/).

The histogram's collection holds the records office site's pages (extracted by Strata from the
served bytes) with capture dates from 2024-10 to 2026-12 and nothing in between most months: the
chart must draw every month, the empty ones as gaps, with labels that neither overlap nor leave
the page."""

from __future__ import annotations

import shutil

import pytest

from index.collection import Collection
from index.fulltext.documents import Payload
from index.fulltext.rebuild import create
from index.fulltext.text import extract
from tests.conftest import REPO
from tests.support.chromium import launched
from tests.support.meta_site import MetaSite
from tests.support.replay_fixtures import StrataServer

ARTIFACTS = REPO / "tests" / "artifacts"
MONTHS = ("20241003101500", "20241020080000", "20241105120000", "20250214093000", "20261201000000")
WIDTHS = (1280, 390)


def _timeline(root) -> None:
    """A collection whose documents were captured in MONTHS (index only: the axis is under test)."""
    coll = Collection.open(root, "timeline", create=True)
    site = MetaSite()
    docs = []
    for n, (path, (content_type, body)) in enumerate(sorted(site.pages.items())):
        if not content_type.startswith("text/html"):
            continue
        out = extract(body, content_type)
        payload = Payload(mime="text/html", status=200, size=len(body), title=out.title, text=out.text, lang="en")
        stamps = {MONTHS[n % len(MONTHS)], MONTHS[(n + 2) % len(MONTHS)]}
        docs.append((f"http://records.example{path}", f"sha1:{n:032d}", payload, stamps))
    create(coll, docs)


def _labels_fit(page) -> dict:
    return page.evaluate(
        """() => {
        const fig = document.querySelector('#histogram').getBoundingClientRect();
        const boxes = [...document.querySelectorAll('#histogram .axis span')].map(s => s.getBoundingClientRect());
        const overlap = boxes.some((b, i) => i && b.left < boxes[i - 1].right);
        const outside = boxes.some(b => b.left < fig.left - 1 || b.right > fig.right + 1);
        return {overlap, outside, scroll: document.documentElement.scrollWidth, labels: boxes.length};
    }"""
    )


@pytest.mark.slow
@pytest.mark.browser
def test_histogram_time_axis_and_publications_at_1280_and_390(meta_harvest, tmp_path):
    root = tmp_path / "collections"
    shutil.copytree(meta_harvest.root / meta_harvest.name, root / meta_harvest.name)
    _timeline(root)
    ARTIFACTS.mkdir(exist_ok=True)
    server = StrataServer(root, tmp_path / "serve.log")
    try:
        with launched() as browser:
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(server.base_url + "/search?c=timeline&q=harbour")
                page.wait_for_selector("#histogram")
                page.screenshot(path=str(ARTIFACTS / f"search-histogram-{width}.png"), full_page=True)
                figure = page.locator("#histogram")
                assert figure.get_attribute("data-unit") == "month"
                bars = page.locator("#histogram .bar")
                assert bars.count() == 27  # 2024-10 .. 2026-12, every month
                assert page.locator("#histogram .bar.empty").count() == 27 - 4
                ticks = page.locator("#histogram .axis span").all_inner_texts()
                assert ticks[0] == "2024-10" and ticks[-1] == "2026-12" and len(ticks) == 3
                assert page.locator("#histogram .bar.empty").first.get_attribute("title").endswith("no captures")
                fit = _labels_fit(page)
                assert not fit["overlap"] and not fit["outside"], fit
                assert fit["scroll"] <= width, fit  # nothing wider than the screen
                assert "23 without captures" in page.inner_text("#histogram figcaption")
                figure.screenshot(path=str(ARTIFACTS / f"search-histogram-chart-{width}.png"))
                # a bar is a date filter for its month
                page.locator("#histogram a.bar").first.click()
                page.wait_for_selector("#summary")
                assert "2024-10-01" in page.inner_text("#summary")

                # the metadata filters, open on the page when used
                page.goto(f"{server.base_url}/search?c={meta_harvest.name}&q=ledgers&author=Tomas+Reyes&in=main")
                page.wait_for_selector("#hits")
                assert page.locator("#more-filters[open]").count() == 1
                assert page.locator("article.hit").count() == 3
                assert page.locator("article.hit .published").first.inner_text().startswith("published 2024-")
                assert page.evaluate("document.documentElement.scrollWidth") <= width
                page.screenshot(path=str(ARTIFACTS / f"search-filters-{width}.png"), full_page=True)

                page.goto(f"{server.base_url}/{meta_harvest.name}/")
                page.click(f"tr[data-host='{meta_harvest.host}'] a.publications")
                page.wait_for_selector("#publications")
                titles = page.locator("li.publication a.title").all_inner_texts()
                assert titles == ["Annual Report 2023", "Tide Tables of 1923", "scan-0042.pdf"]
                assert page.evaluate("document.documentElement.scrollWidth") <= width
                page.screenshot(path=str(ARTIFACTS / f"publications-{width}.png"), full_page=True)
                with page.expect_response(lambda r: "tide-tables-1923.pdf" in r.url) as answer:
                    page.locator("li.publication a.title").nth(1).click()
                assert answer.value.status == 200
                assert answer.value.header_value("content-type").startswith("application/pdf")
                page.close()
    finally:
        server.stop()

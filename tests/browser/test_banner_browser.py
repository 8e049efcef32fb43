"""The replay banner in headless Chromium: previous/next capture and the snapshot switch work by
clicking, at 1280 and at 390 px; embedded resources shown from a later capture are counted.

Screenshots go to ``tests/artifacts/`` (``banner-*.png``) for a person to look at.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.conftest import REPO
from tests.support.chromium import launched

pytestmark = pytest.mark.browser

ARTIFACTS = REPO / "tests" / "artifacts"
WIDTHS = {"desktop": (1280, 800), "phone": (390, 844)}
SITE = "http://reading.example"
TIMESTAMPS = ("20240110090000", "20240210090000", "20240310090000")


@pytest.fixture(scope="module")
def browser(archives):
    # The harvests behind ``archives`` run their own event loop: before Playwright's starts.
    with launched() as browser:
        yield browser


def open_tab(browser, width: str):
    w, h = WIDTHS[width]
    context = browser.new_context(viewport={"width": w, "height": h}, device_scale_factor=1, is_mobile=width == "phone")
    return context, context.new_page()


def banner_fits(tab) -> None:
    """The banner is as wide as the page shown (the archived page is laid out 980 px wide on a phone,
    having no viewport meta), and its text reads at 12 px or more on the screen at any width."""
    seen = tab.evaluate(
        """() => {
        const host = document.querySelector("strata-banner"), b = host.shadowRoot.getElementById("strata-banner");
        const zoom = parseFloat(getComputedStyle(host).zoom) || 1, scale = visualViewport.scale;
        const r = host.getBoundingClientRect();  // in the page's own (unzoomed) pixels
        return {px: parseFloat(getComputedStyle(b).fontSize) * zoom * scale, right: r.right,
                layout: document.documentElement.clientWidth, overflow: b.scrollWidth - b.clientWidth};
    }"""
    )
    assert 12 <= seen["px"] <= 16, seen  # readable, and not blown up
    assert seen["overflow"] <= 0, seen  # nothing cut off inside the banner
    assert seen["right"] <= seen["layout"] + 1, seen


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_previous_next_and_snapshot_switch_by_clicking(browser, mixed_server, width):
    context, tab = open_tab(browser, width)
    base = mixed_server.base_url
    tab.goto(f"{base}/mixed/{TIMESTAMPS[1]}/{SITE}/", wait_until="networkidle")
    banner = tab.locator("#strata-banner")
    assert banner.get_attribute("data-capture") == TIMESTAMPS[1]
    # the revisit has the same payload as the capture before it, and the next one changed
    assert tab.locator("#strata-prev-diff").inner_text() == "same"
    assert tab.locator("#strata-next-diff").inner_text() == "changed"
    assert "3 captures" in tab.locator("#strata-calendar").inner_text()
    banner_fits(tab)
    ARTIFACTS.mkdir(exist_ok=True)
    tab.screenshot(path=str(ARTIFACTS / f"banner-{width}-middle.png"))

    tab.locator("#strata-next").click()
    tab.wait_for_load_state("networkidle")
    assert urlsplit(tab.url).path == f"/mixed/{TIMESTAMPS[2]}/{SITE}/"
    assert "opens at ten" in tab.locator("main").inner_text()
    assert tab.locator("#strata-banner").get_attribute("data-capture") == TIMESTAMPS[2]
    assert tab.locator("#strata-next").inner_text() == "latest capture"
    banner_fits(tab)  # this version has a viewport <meta>: laid out at the phone's own width
    assert tab.evaluate("document.documentElement.clientWidth") == tab.viewport_size["width"]
    tab.screenshot(path=str(ARTIFACTS / f"banner-{width}-responsive.png"))

    tab.locator("#strata-prev").click()
    tab.wait_for_load_state("networkidle")
    tab.locator("#strata-prev").click()
    tab.wait_for_load_state("networkidle")
    assert urlsplit(tab.url).path == f"/mixed/{TIMESTAMPS[0]}/{SITE}/"
    assert "opens at nine" in tab.locator("main").inner_text()
    assert tab.locator("#strata-prev").inner_text() == "first capture"

    # the snapshot switch: open it, pick the latest snapshot
    tab.locator("#strata-snapshots summary").click()
    latest = tab.locator(f'#strata-snapshots a[data-snapshot="{TIMESTAMPS[2]}"]')
    assert latest.is_visible()
    tab.screenshot(path=str(ARTIFACTS / f"banner-{width}-snapshots.png"))
    menu = tab.locator("#strata-snapshots ol").bounding_box()
    layout = tab.evaluate("document.documentElement.clientWidth")
    assert menu and menu["x"] >= 0 and menu["x"] + menu["width"] <= layout + 1, (menu, layout)
    latest.click()
    tab.wait_for_load_state("networkidle")
    assert urlsplit(tab.url).path == f"/mixed/{TIMESTAMPS[2]}/{SITE}/"
    assert "opens at ten" in tab.locator("main").inner_text()
    context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_embeds_from_a_later_capture_are_counted(browser, mixed_server, width):
    context, tab = open_tab(browser, width)
    tab.goto(f"{mixed_server.base_url}/mixed/{TIMESTAMPS[0]}/{SITE}/", wait_until="networkidle")
    note = tab.locator("#strata-later-embeds")
    note.wait_for(state="visible", timeout=5000)
    assert note.get_attribute("data-count") == "2"
    assert "2 embedded resources" in note.inner_text() and "2024-03-10" in note.inner_text()
    note.locator("summary").click()
    text = note.inner_text()
    assert f"{SITE}/b.png" in text and f"{SITE}/style.css" in text and "a.png" not in text
    assert tab.locator("#strata-banner").get_attribute("data-fallback") == "as-of"  # the page itself is not later
    banner_fits(tab)
    tab.screenshot(path=str(ARTIFACTS / f"banner-{width}-later-embeds.png"))
    # a snapshot that holds them all: nothing to report
    tab.goto(f"{mixed_server.base_url}/mixed/{TIMESTAMPS[2]}/{SITE}/", wait_until="networkidle")
    tab.wait_for_timeout(300)
    assert tab.locator("#strata-later-embeds").is_hidden()
    context.close()


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_compare_from_the_calendar_and_from_the_banner(browser, mixed_server, width):
    context, tab = open_tab(browser, width)
    tab.goto(f"{mixed_server.base_url}/mixed/*/{SITE}/", wait_until="networkidle")
    tab.screenshot(path=str(ARTIFACTS / f"calendar-{width}-compare.png"), full_page=True)
    assert tab.evaluate("document.documentElement.scrollWidth") <= tab.viewport_size["width"]  # the table scrolls
    tab.select_option("#compare-from", TIMESTAMPS[0])
    tab.locator("#compare button").click()
    tab.wait_for_load_state("networkidle")
    assert urlsplit(tab.url).path == f"/mixed/diff/{TIMESTAMPS[0]}/{TIMESTAMPS[2]}/{SITE}/"
    assert tab.locator("#diff-inline del").all_inner_texts() == ["nine"]
    assert tab.locator("#diff-inline ins").all_inner_texts() == ["ten"]
    assert tab.evaluate("document.documentElement.scrollWidth") <= tab.viewport_size["width"]
    tab.screenshot(path=str(ARTIFACTS / f"diff-{width}-inline.png"), full_page=True)
    tab.locator('label[for="view-side"]').click()
    assert tab.locator("#diff-columns").is_visible() and tab.locator("#diff-inline").is_hidden()
    assert tab.locator("#diff-columns .diff-new ins").all_inner_texts() == ["ten"]
    tab.screenshot(path=str(ARTIFACTS / f"diff-{width}-side.png"), full_page=True)

    # the banner's "changed" goes to the same comparison of the capture on screen and the next
    tab.goto(f"{mixed_server.base_url}/mixed/{TIMESTAMPS[1]}/{SITE}/", wait_until="networkidle")
    tab.locator("#strata-next-diff a").click()
    tab.wait_for_load_state("networkidle")
    assert urlsplit(tab.url).path == f"/mixed/diff/{TIMESTAMPS[1]}/{TIMESTAMPS[2]}/{SITE}/"
    assert tab.locator("#diff-inline del").all_inner_texts() == ["nine"]
    context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_changed_image_shows_both_versions(browser, archives, strata_server, width):
    three = archives["three"]
    context, tab = open_tab(browser, width)
    old, new = three.snapshots[0], three.snapshots[1]
    tab.goto(f"{strata_server.base_url}/three/diff/{old}/{new}/{three.url('/img/photo.png')}", wait_until="networkidle")
    images = tab.locator("#diff-images img")
    assert images.count() == 2
    assert all(images.nth(i).evaluate("img => img.naturalWidth") > 0 for i in range(2))
    assert tab.evaluate("document.documentElement.scrollWidth") <= tab.viewport_size["width"]
    tab.screenshot(path=str(ARTIFACTS / f"diff-{width}-image.png"), full_page=True)
    context.close()

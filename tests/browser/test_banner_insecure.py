"""The banner's count of embedded resources from a later capture, on a replay host that is not a
secure context (plain http under a real host name, not localhost), where a browser may leave
``serverTiming`` empty (Firefox does): the banner asks for each resource's headers again, from the
cache. Its own browser: the host name is mapped to 127.0.0.1 by a Chromium flag."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.support.chromium import launched

pytestmark = pytest.mark.browser

SITE = "http://reading.example"


def test_later_embeds_are_counted_outside_a_secure_context(mixed_server):
    port = urlsplit(mixed_server.base_url).port
    with launched(("--host-resolver-rules=MAP archive.test 127.0.0.1",)) as browser:
        tab = browser.new_page()
        tab.goto(f"http://archive.test:{port}/mixed/20240110090000/{SITE}/", wait_until="networkidle")
        assert tab.evaluate("window.isSecureContext") is False
        note = tab.locator("#strata-later-embeds")
        note.wait_for(state="visible", timeout=5000)
        assert note.get_attribute("data-count") == "2"
        assert "2 embedded resources" in note.inner_text()

"""Restricted replay in headless Chromium: a staff member opens an embargoed capture on the restricted
host, and the archived page's script there cannot read the console's cookies, the restricted host's
own cookie, or call the console's API.

One server (``replay.hosts.build_site``, as ``strata serve --staff-host staff.localhost
--restricted-host restricted.localhost`` runs it) answers three host names. The capture is under an
embargo rule (staff only, block for others): the public host answers the 451 notice, in the same
browser that holds a restricted-host session. Screenshots at 1280 and 390 px go to ``tests/artifacts/``.
"""

from __future__ import annotations

import json
import time

import pytest

from demo.site_server import SiteServer
from index.access.rules import AccessRules, Rule
from tests.conftest import REPO, free_port, harvest
from tests.support.chromium import launched
from tests.support.dispatcher import AttackingPage, running_dispatcher
from tests.support.staff_helpers import PASSWORD, USER, add_user

pytestmark = pytest.mark.browser

ARTIFACTS = REPO / "tests" / "artifacts"


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def embargoed(root, port):
    page = AttackingPage(
        f"http://staff.localhost:{port}",
        "/access",
        "/access/embargoed/takedown",
        {"prefix": "http://example.gov/", "reason": "evil"},
        "Embargoed report",
        "Embargoed report mkembargo",
    )
    server = SiteServer(page).start()
    try:
        summary = harvest(root, server, name="embargoed")
        assert summary["status"] == "finished"
    finally:
        server.stop()
    AccessRules(root / "embargoed").add(
        Rule.new(server.base_url + "/", "block", "staff", embargo="1y", reason="publisher embargo", by="ana")
    )
    return server.base_url, summary["snapshot"]


@pytest.fixture
def site(root, port, embargoed):
    add_user(root)
    options = {
        "replay_config": {"staff_url": "http://staff.localhost:{port}"},
        "restricted_host": "restricted.localhost",
        "restricted_url": "http://restricted.localhost:{port}",
    }
    with running_dispatcher(root, port, **options):
        yield {
            "staff": f"http://staff.localhost:{port}",
            "archive": f"http://archive.localhost:{port}",
            "restricted": f"http://restricted.localhost:{port}",
        }


def _shots(page, name: str) -> None:
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(ARTIFACTS / f"access-{name}-{width}.png"), full_page=True)
        if name != "restricted-replay":  # Strata's own pages (an archived page is as it was) fit the width
            wide = page.evaluate(
                "[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > "
                "window.innerWidth + 1 && !e.closest('.wide')).map(e => e.tagName + '.' + e.className).slice(0, 5)"
            )
            assert not wide, (name, width, wide)


@pytest.mark.slow
def test_staff_open_an_embargoed_capture_on_the_restricted_host(root, embargoed, site):
    ARTIFACTS.mkdir(exist_ok=True)
    base_url, snapshot = embargoed
    address = f"/embargoed/{snapshot}/{base_url}/"
    rules_before = (root / "embargoed" / "acl" / "rules.aclj").read_bytes()
    with launched() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        # the public host: a 451 notice naming nothing of the page
        response = page.goto(site["archive"] + address)
        assert response.status == 451 and "mkembargo" not in page.content()
        _shots(page, "blocked")
        # the restricted host without a session: a pointer to the console
        response = page.goto(site["restricted"] + address)
        assert response.status == 403 and "mkembargo" not in page.content()
        _shots(page, "restricted-signin")
        # log in to the console, open the capture on the restricted host from the Access page
        page.goto(f"{site['staff']}/login")
        page.fill("input[name=name]", USER)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.goto(f"{site['staff']}/access/embargoed")
        assert "publisher embargo" in page.inner_text("#rules") and "publisher embargo" in page.inner_text("#audit")
        _shots(page, "console")
        page.fill("#open-restricted input[name=next]", address)
        page.click("#open-restricted button[type=submit]")
        page.wait_for_url(site["restricted"] + address)
        page.wait_for_function(
            "document.getElementById('out') && (JSON.parse(document.getElementById('out').textContent || '{}')"
            ".api !== undefined) && JSON.parse(document.getElementById('out').textContent).post !== undefined",
            timeout=20_000,
        )
        assert "mkembargo" in page.inner_text("h1")
        out = json.loads(page.inner_text("#out"))
        _shots(page, "restricted-replay")
        assert "strata_staff" not in out["cookie"] and "strata_restricted" not in out["cookie"], out
        assert "Access rules" not in out["api"] and "Take down" not in out["api"], out
        # the same from the restricted origin with the rewriter (wombat's fetch) out of the way
        page.goto(site["restricted"] + "/")
        probe = page.evaluate(
            """async (staff) => {
            const out = {cookie: document.cookie};
            try { const r = await fetch(staff + "/access", {credentials: "include"}); out.api = "read " + r.status; }
            catch (e) { out.api = "blocked " + e.name; }
            try { await fetch(staff + "/access/embargoed/takedown", {method: "POST", credentials: "include",
                    mode: "no-cors", body: new URLSearchParams({prefix: "http://example.gov/", reason: "x"})});
                  out.post = "sent"; }
            catch (e) { out.post = "blocked " + e.name; }
            return out;
        }""",
            site["staff"],
        )
        assert probe["api"].startswith("blocked") and probe["cookie"] == "", probe
        cookies = {c["name"]: c for c in context.cookies()}
        restricted = cookies["strata_restricted"]
        assert restricted["domain"] == "restricted.localhost" and restricted["httpOnly"]
        assert restricted["sameSite"] == "Strict" and restricted["expires"] - time.time() < 16 * 60
        assert cookies["strata_staff"]["domain"] == "staff.localhost"
        # the public host, in the same browser with both cookies alive: still the notice
        response = page.goto(site["archive"] + address)
        assert response.status == 451
        context.close()
    assert (root / "embargoed" / "acl" / "rules.aclj").read_bytes() == rules_before  # the POSTs changed nothing

"""A hostile site, harvested by Strata and replayed in headless Chromium, never acts with the
archive's authority (issue 35).

``strata serve`` runs as a deployment would: the archive's pages, a content host, a reading-room host
(this machine is the reading room), a restricted host and the staff console, each a name under
``strata.test`` that Chromium maps to 127.0.0.1 (``--host-resolver-rules``); a collector on another
port stands in for the outside world. A staff member logs in and opens the restricted host, so the
browser holds every grant there is. Then every attacking page of ``tests.support.attack_site`` is
opened through every replay modifier on the content host (and the reading-room host). Afterwards:
no byte has reached the collector, no service worker is registered on any origin, the reading-room
and staff-only words were never read, and the console and Strata's pages work as before.
"""

from __future__ import annotations

import pytest

from demo.site_server import SiteServer
from index.access.rules import AccessRules, Rule
from tests.conftest import free_port, harvest
from tests.support.attack_site import MODS, PAGES, SECRET_ROOM, SECRET_STAFF, AttackSite, Collector
from tests.support.chromium import launched
from tests.support.replay_fixtures import StrataServer
from tests.support.staff_helpers import PASSWORD, USER, add_user

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NAMES = {k: f"{k}.strata.test" for k in ("archive", "content", "room", "restricted", "staff")}


@pytest.fixture
def deployment(root, tmp_path):
    port = free_port()
    hosts = {k: f"{v}:{port}" for k, v in NAMES.items()}
    with Collector() as collector:
        site = AttackSite(f"http://collector.test:{collector.port}", hosts)
        with SiteServer(site) as server:
            site.base = server.base_url
            summary = harvest(root, server, name="hostile", robots="ignore")
            assert summary["status"] == "finished"
        rules = AccessRules(root / "hostile")
        rules.add(Rule.new(server.base_url + "/room/", "allow", "reading-room", reason="legal deposit", by="t"))
        rules.add(Rule.new(server.base_url + "/staff/", "exclude", "staff", reason="staff only", by="t"))
        add_user(root)
        flags = (
            *("--archive-url", f"http://{hosts['archive']}", "--content-host", NAMES["content"]),
            *("--reading-room", "127.0.0.0/8", "--reading-room-host", NAMES["room"]),
            *("--staff-host", NAMES["staff"], "--restricted-host", NAMES["restricted"]),
        )
        strata = StrataServer(root, tmp_path / "serve.log", flags, port=port)
        try:
            yield {"hosts": hosts, "site": server.base_url, "snapshot": summary["snapshot"], "collector": collector}
        finally:
            strata.stop()


def _registrations(page) -> int:
    return page.evaluate("navigator.serviceWorker ? navigator.serviceWorker.getRegistrations().then(r => r.length) : 0")


def test_archived_code_never_acts_with_the_archives_authority(deployment):
    hosts, site, ts = deployment["hosts"], deployment["site"], deployment["snapshot"]
    collector = deployment["collector"]
    resolver = "--host-resolver-rules=MAP * 127.0.0.1"
    # service workers need a secure context: these plain-HTTP origins are taken as one, as HTTPS would be
    secure = "--unsafely-treat-insecure-origin-as-secure=" + ",".join(f"http://{h}" for h in hosts.values())
    with launched((resolver, secure)) as browser:
        context = browser.new_context()
        page = context.new_page()
        # staff: logged in, with a grant on the restricted host
        page.goto(f"http://{hosts['staff']}/login")
        page.fill("input[name=name]", USER)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.goto(f"http://{hosts['staff']}/access/hostile")
        page.fill("#open-restricted input[name=next]", f"/hostile/{ts}/{site}/staff/secret.html")
        page.click("#open-restricted button[type=submit]")
        page.wait_for_url(f"http://{hosts['restricted']}/hostile/**/staff/secret.html")
        page.wait_for_load_state()
        assert SECRET_STAFF in page.content()  # the grant works where it belongs
        reports = {}
        for host in ("content", "room"):
            for path in PAGES:
                for mod in MODS:
                    address = f"http://{hosts[host]}/hostile/{ts}{mod}/{site}{path}"
                    response = page.goto(address)
                    assert response is not None and response.status < 500, address
                    page.wait_for_timeout(150)
                    text = page.inner_text("#out") if page.query_selector("#out") else ""
                    reports[address] = text
                    assert "REGISTERED" not in text and "READ THE SECRET" not in text, (address, text)
                    assert "PWNED" not in page.content(), address
                    for frame in page.frames[1:]:  # a framed restricted capture is refused (frame-ancestors)
                        try:
                            framed = frame.content()
                        except Exception:  # noqa: BLE001 (a frame gone or navigating: nothing shown)
                            continue
                        assert SECRET_STAFF not in framed and SECRET_ROOM not in framed, (address, frame.url)
            page.goto(f"http://{hosts[host]}" + ("/" if host == "room" else f"/hostile/{ts}/{site}/"))
            assert _registrations(page) == 0, host
        # an archived script that got past wombat, on the public content origin (same-site with the
        # restricted host, so the SameSite=Strict grant would be sent): the page's own policy refuses
        # the frame (frame-src falls back to default-src 'self'), and the restricted host would too
        # (frame-ancestors 'self', X-Frame-Options)
        page.goto(f"http://{hosts['content']}/hostile/{ts}/{site}/")
        secret = f"http://{hosts['restricted']}/hostile/{ts}/{site}/staff/secret.html"
        page.set_content(f'<iframe id="f" src="{secret}"></iframe>')
        page.wait_for_timeout(1500)
        for frame in page.frames[1:]:
            assert SECRET_STAFF not in frame.content(), frame.url
        page.wait_for_timeout(1000)  # anything still on its way to the collector
        assert collector.seen == [], collector.seen[:5]
        # every origin: no service worker, Strata's own pages as they are
        for host, path in (("archive", "/"), ("content", f"/hostile/{ts}/{site}/"), ("room", "/")):
            page.goto(f"http://{hosts[host]}{path}")
            assert "PWNED" not in page.content() and _registrations(page) == 0, host
        assert context.service_workers == []
        # the console still works: the parent-domain cookies do not lock staff out
        for path in ("/jobs", "/runs", "/access"):
            response = page.goto(f"http://{hosts['staff']}{path}")
            assert response is not None and response.status == 200 and page.url.endswith(path), path
        # the public archive, in the same browser with every grant alive, shows no restricted word
        response = page.goto(f"http://{hosts['archive']}/hostile/{ts}/{site}/staff/secret.html")
        assert SECRET_STAFF not in page.content() and SECRET_ROOM not in page.content()
        assert reports  # (kept for a failing run's message)
        context.close()

"""The staff console in headless Chromium, on its own origin beside the archive.

One server (the host dispatcher on gevent, as ``strata serve --staff-host`` will run it) answers
``staff.localhost`` with the console and ``archive.localhost`` with replay; ``strata worker`` runs
the harvests. A staff member logs in, creates a job for the sample site, starts a harvest, watches
the progress page reach completion, opens the history chart and the run's snapshot. Then an
archived page whose script goes after the staff API and the cookies runs in the same browser, and
gets nothing. Screenshots go to ``tests/artifacts/``.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from demo.sample_site import MARKERS, serve_sample_site
from demo.site_server import SiteServer
from harvester.jobs.queue import open_queue
from tests.conftest import REPO, VENV_BIN, free_port, harvest
from tests.support.chromium import launched
from tests.support.dispatcher import AttackingPage, running_dispatcher
from tests.support.processes import stop_process
from tests.support.staff_helpers import PASSWORD, USER, add_user

pytestmark = pytest.mark.browser

ARTIFACTS = REPO / "tests" / "artifacts"


@pytest.fixture
def chromium():
    with launched() as browser:
        yield browser


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def evil(root, port) -> SiteServer:
    """The attacking page, harvested into collection ``evil`` (before Playwright runs its loop)."""
    page = AttackingPage(
        f"http://staff.localhost:{port}",
        "/api/runs/1",
        "/jobs/sample/site/harvest",
        {"mode": "full"},
        "Evil",
        "Archived page",
    )
    server = SiteServer(page).start()
    try:
        assert harvest(root, server, name="evil")["status"] == "finished"
    finally:
        server.stop()
    return server


@pytest.fixture
def console(root, port):
    """The dispatcher on a real socket and a worker, over a root holding one staff user."""
    add_user(root)
    worker = subprocess.Popen(
        [str(VENV_BIN / "strata"), "worker", "--root", str(root), "--poll", "0.2", "--allow-network", "127.0.0.1/32"],
        stderr=subprocess.DEVNULL,
    )
    try:
        with running_dispatcher(root, port, staff_config={"allow_networks": ["127.0.0.1/32"]}):
            yield {
                "staff": f"http://staff.localhost:{port}",
                "archive": f"http://archive.localhost:{port}",
                "port": port,
            }
    finally:
        stop_process(worker)


def _queue_count(root) -> int:
    queue = open_queue(root)
    try:
        return len(queue.entries())
    finally:
        queue.close()


@pytest.mark.slow
def test_staff_flow_and_isolation_in_chromium(root, evil, console, chromium):
    ARTIFACTS.mkdir(exist_ok=True)
    staff, archive = console["staff"], console["archive"]

    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    with serve_sample_site(1) as site:
        # log in
        page.goto(f"{staff}/jobs")
        assert page.url.startswith(f"{staff}/login")
        page.fill("input[name=name]", USER)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{staff}/jobs")
        # create a job for the sample site
        page.click("#new-job")
        page.fill("input[name=new_collection]", "sample")  # a new collection, beside the picker
        page.fill("input[name=name]", "site")
        page.fill("#in-seeds", site.base_url + "/")
        page.click("#group-politeness > summary")  # folded until opened: nothing in it differs yet
        page.fill("#in-delay", "0")
        page.fill("#in-depth", "5")
        page.screenshot(path=str(ARTIFACTS / "staff-1-new-job.png"), full_page=True)
        page.click("#save-job")
        page.wait_for_url(f"{staff}/jobs/sample/site?notice=created")
        assert "Job created." in page.inner_text("#notice")
        # start a harvest and watch it finish without reloading
        page.click("#harvest-full")
        page.wait_for_url(f"{staff}/runs/*")
        run_url = page.url
        page.wait_for_selector("#progress[data-final='1']", timeout=60_000)
        assert page.url == run_url
        assert page.inner_text("#status") == "finished"
        done = int(page.inner_text("#f-done"))
        assert done > 40 and int(page.inner_text("#c-new")) > 40
        assert page.inner_text("#f-bytes_stored").endswith("kB")
        page.screenshot(path=str(ARTIFACTS / "staff-2-progress.png"), full_page=True)
        # the history chart, then the run's snapshot in replay
        page.click("#history-link")
        page.wait_for_selector("#chart-storage svg a rect.bar-stored")
        assert page.locator("#chart-classes svg rect.seg-new").count() == 1
        page.screenshot(path=str(ARTIFACTS / "staff-3-history.png"), full_page=True)
        # fifteen columns of history scroll inside their box; the page itself does not widen
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        snapshot_link = page.locator("#runs a.snapshot")
        assert snapshot_link.get_attribute("href").startswith(f"{archive}/sample/")
        snapshot_link.click()
        page.wait_for_load_state("networkidle")
        assert page.url.startswith(f"{archive}/sample/")
        assert MARKERS["/"] in page.inner_text("body")
        page.screenshot(path=str(ARTIFACTS / "staff-4-snapshot.png"), full_page=True)

    # isolation: the staff session is live in this browser; an archived page goes after it
    entries_before = _queue_count(root)
    staff_cookies = [c for c in context.cookies() if c["name"] == "strata_staff"]
    assert staff_cookies and staff_cookies[0]["domain"] == "staff.localhost" and staff_cookies[0]["httpOnly"]
    evil_page = context.new_page()
    evil_page.goto(f"{archive}/evil/{time.strftime('%Y%m%d%H%M%S', time.gmtime())}/{evil.base_url}/")
    evil_page.wait_for_function(
        "document.getElementById('out') && "
        "JSON.parse(document.getElementById('out').textContent || '{}').api !== undefined "
        "&& JSON.parse(document.getElementById('out').textContent).post !== undefined",
        timeout=20_000,
    )
    out = json.loads(evil_page.inner_text("#out"))
    evil_page.screenshot(path=str(ARTIFACTS / "staff-5-archived-attack.png"), full_page=True)
    assert "strata_staff" not in out["cookie"]
    assert "requested_by" not in out["api"] and '"status"' not in out["api"], out

    # the same attempts from the archive's origin with the rewriter out of the way
    probe = context.new_page()
    probe.goto(f"{archive}/")
    escaped = probe.evaluate(
        """async (staff) => {
        const out = {cookie: document.cookie};
        try { const r = await fetch(staff + "/api/runs/1", {credentials: "include"}); out.api = "read " + r.status; }
        catch (e) { out.api = "blocked " + e.name; }
        try { const r = await fetch(staff + "/jobs/sample/site/harvest", {method: "POST", credentials: "include",
                mode: "no-cors", body: new URLSearchParams({mode: "full"})}); out.post = "sent " + r.type; }
        catch (e) { out.post = "blocked " + e.name; }
        return out;
    }""",
        staff,
    )
    assert escaped["api"].startswith("blocked") and "strata_staff" not in escaped["cookie"], escaped
    # a top-level form POST from the archive's origin: the browser goes, the console refuses
    probe.evaluate(
        """(staff) => {
        const f = document.createElement("form"); f.method = "POST";
        f.action = staff + "/jobs/sample/site/harvest";
        const i = document.createElement("input"); i.name = "mode"; i.value = "full"; f.appendChild(i);
        document.body.appendChild(f); f.submit();
    }""",
        staff,
    )
    probe.wait_for_url(f"{staff}/jobs/sample/site/harvest")
    assert "does not answer requests sent by other sites" in probe.inner_text(
        "body"
    ) or "security token" in probe.inner_text("body")
    probe.screenshot(path=str(ARTIFACTS / "staff-6-cross-origin-post.png"), full_page=True)
    assert _queue_count(root) == entries_before
    context.close()

"""Every public and staff page in headless Chromium at 1280 and 390 px: no element wider than the
window (outside a box of its own that scrolls), its key elements visible, and axe-core (npm, loaded
into the page) finding no serious or critical violation. The calendar, the site map, the holdings
and the changes views are kept as screenshots under tests/artifacts/pages/ (not committed) to look at.

The pages are those of one server as ``strata serve --staff-host`` runs it, over a root holding the
collection whose captures are known (described, indexed for search), the reading-room collection
of the diff tests, a staff user, a job and a queued run. Replayed archive pages are not checked:
their content is the archived site's."""

from __future__ import annotations

import json

import pytest

from harvester.jobs.queue import open_queue
from index.collection import Collection
from index.collection_meta import update_metadata
from index.fulltext.rebuild import rebuild
from tests.conftest import REPO, free_port
from tests.support.banner_fixtures import PAGE, TIMESTAMPS, write_mixed
from tests.support.chromium import launched
from tests.support.dispatcher import running_dispatcher
from tests.support.history_fixtures import SITE, write_known
from tests.support.staff_helpers import PASSWORD, USER, add_user, write_job

pytestmark = pytest.mark.browser
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
ARTIFACTS = REPO / "tests" / "artifacts" / "pages"
WIDTHS = (1280, 390)
SHOTS = {"calendar", "sitemap", "holdings", "changes", "diff-rendered", "diff-image"}

PUBLIC = {
    "home": ("/", "#collections"),
    "collection": ("/known/", "#sites"),
    "calendar": (f"/known/*/{SITE}/", "#months"),
    "calendar-day": (f"/known/20240305*/{SITE}/news/a.html", "#captures"),
    "prefix": (f"/known/*/{SITE}/news/*", "#urls"),
    "sitemap": ("/known/sitemap/site.test?since=2024-01-01", "#treemap"),
    "sitemap-folder": ("/known/sitemap/site.test?folder=/news/", "#entries"),
    "holdings": ("/known/holdings", "#months-chart"),
    "changes": (f"/known/changes/{SITE}/", "#changes"),
    "diff-text": (f"/mixed/diff/{TIMESTAMPS[0]}/{TIMESTAMPS[2]}/{PAGE}", "#diff-inline"),
    "diff-rendered": (f"/mixed/diff/{TIMESTAMPS[0]}/{TIMESTAMPS[2]}/{PAGE}#rendered", "#diff-rendered"),
    "search": ("/search?q=word30", "#hits .hit"),
    "search-empty": ("/search", "#search-form"),
    "publications": ("/known/publications/site.test", "h1"),
    "not-archived": (f"/known/*/{SITE}/nowhere.html", "h1"),
}
STAFF = {
    "login": ("/login", "form"),
    "jobs": ("/jobs", "#jobs"),
    "job": ("/jobs/known/weekly", "h1"),
    "job-new": ("/jobs/new", "#job-form"),
    "job-edit": ("/jobs/known/weekly/edit", "#group-basics"),
    "runs": ("/runs", "h1"),
    "run": ("/runs/1", "h1"),
    "access": ("/access", "h1"),
    "access-collection": ("/access/known", "h1"),
    "collections": ("/collections", "#collections"),
    "describe": ("/collections/known", "#collection-form"),
}

# elements wider than the window that are not inside a box that scrolls on its own
OVERFLOW = """(width) => {
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= width + 1) continue;
    let boxed = false;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') { boxed = true; break; }
    }
    if (!boxed) out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + Math.round(r.right));
  }
  return out.slice(0, 10);
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if not AXE.is_file():
        pytest.fail("node_modules/axe-core is missing: run npm ci (.ci/run does)")
    root = tmp_path_factory.mktemp("pages") / "collections"
    root.mkdir()
    known = write_known(root)
    update_metadata(
        known,
        {
            "title": "Two test sites",
            "description": "Sites whose every capture is known.",
            "curator": "A. Curator",
            "organisation": "Test Library",
            "rights": "CC BY 4.0",
            "subjects": ["tests", "新闻"],
            "language": "en",
        },
    )
    rebuild(known)
    write_mixed(root)
    add_user(root)
    write_job(root, "known", "weekly", seeds=[SITE + "/"], min_interval="7d")
    open_queue(root).enqueue("known", "weekly", "full", reason="manual", requested_by=USER)
    assert Collection(root, "known").job_path("weekly").is_file()
    port = free_port()
    with running_dispatcher(root, port):
        yield {"archive": f"http://archive.localhost:{port}", "staff": f"http://staff.localhost:{port}"}


@pytest.fixture(scope="module")
def browser():
    with launched() as chromium:
        yield chromium


def _check(tab, name: str, path: str, key: str, width: int) -> list[str]:
    problems = []
    if path.endswith("#rendered"):
        tab.locator("label[for=view-rendered]").click()
        tab.locator("#rendered-new").scroll_into_view_if_needed()
        tab.wait_for_timeout(800)
    if not tab.locator(key).first.is_visible():
        problems.append(f"{name} at {width}: {key} is not visible")
    wide = tab.evaluate(OVERFLOW, width)
    if wide or tab.evaluate("document.documentElement.scrollWidth") > width:
        problems.append(f"{name} at {width}: wider than the window: {wide}")
    tab.add_script_tag(path=str(AXE))
    found = tab.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations")
    for v in found:
        if v["impact"] in ("serious", "critical"):
            where = [n["target"] for n in v["nodes"][:3]]
            problems.append(f"{name} at {width}: axe {v['id']} ({v['impact']}): {v['help']} {json.dumps(where)}")
    if name in SHOTS:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
        for frame in ("rendered-old", "rendered-new") if name == "diff-rendered" else ():
            # a full-page capture leaves frames outside the window blank: each frame on its own too
            tab.locator(f"#{frame}").screenshot(path=str(ARTIFACTS / f"{name}-{width}-{frame}.png"))
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_every_public_page(site, browser, width):
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    tab = context.new_page()
    problems = []
    for name, (path, key) in PUBLIC.items():
        response = tab.goto(site["archive"] + path.split("#")[0], wait_until="networkidle")
        assert response is not None and response.status in (200, 404), (name, response and response.status)
        problems += _check(tab, name, path, key, width)
    context.close()
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_every_staff_page(site, browser, width):
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    tab = context.new_page()
    problems = _check(tab, "login", "/login", "form", width) if tab.goto(site["staff"] + "/login") else []
    tab.fill("input[name=name]", USER)
    tab.fill("input[name=password]", PASSWORD)
    tab.locator("form button[type=submit]").click()
    tab.wait_for_load_state("networkidle")
    for name, (path, key) in STAFF.items():
        if name == "login":
            continue
        response = tab.goto(site["staff"] + path, wait_until="networkidle")
        assert response is not None and response.status == 200, (name, response and response.status)
        problems += _check(tab, name, path, key, width)
    context.close()
    assert not problems, "\n".join(problems)


def test_the_calendar_from_the_keyboard(site, browser):
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    tab.goto(site["archive"] + f"/known/*/{SITE}/", wait_until="networkidle")
    days = tab.locator("#months td a")
    assert days.count() == 3 and [days.nth(i).get_attribute("tabindex") for i in range(3)] == ["0", "-1", "-1"]
    days.nth(0).focus()

    def focused() -> str:
        return tab.evaluate("document.activeElement.getAttribute('aria-label')")

    assert focused().startswith("Monday 15 January 2024: 1 capture: 1 changed")
    tab.keyboard.press("ArrowRight")
    assert focused().startswith("Tuesday 5 March 2024: 1 capture: 1 unchanged")
    tab.keyboard.press("End")
    assert focused().startswith("Wednesday 20 March 2024")
    tab.keyboard.press("ArrowUp")  # a week back: the nearest earlier day with captures
    assert focused().startswith("Tuesday 5 March 2024")
    with tab.expect_navigation():
        tab.keyboard.press("Enter")
    assert "/known/20240305*/" in tab.url
    assert " ".join(tab.locator("#table-title").inner_text().split()) == "5 March 2024: 1 capture"
    tab.close()

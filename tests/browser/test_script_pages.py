"""Pages that JavaScript builds, end to end before the harvest is wired to the browser: the portal of
``demo/script_site.py`` in two versions, captured through ``harvester.browser`` (every request
fetched over HTTP and written with warcio by ``tests/support/browser_capture.py``), indexed by
``strata index rebuild``, then replayed in Chromium with the live site stopped, searched, and
checked by ``strata qa``; beside it an HTTP-only harvest of the same site, which QA must find
lacking what a browser would have needed.

What Chromium itself asks for on the live pages (its own network stack, the same behaviours) is
recorded first: the browser capture must ask for exactly that.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from cli import cli
from demo.script_site import ScriptSite, changed, json_word
from demo.site_server import SiteServer
from harvester.browser.settings import BrowserSettings
from index.collection import Collection
from index.storage.state import HarvestState
from replay.fuzzy import without_cache_busters
from replay.qa import store
from replay.qa.server import QaReplayServer
from tests.conftest import harvest
from tests.support.browser_capture import capture_pages, record_live
from tests.support.chromium import launched
from tests.support.served_site import live_site_is_down
from tests.support.staff_helpers import add_user, csrf_from, log_in, make_client

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SETTINGS = BrowserSettings(click_selectors=ScriptSite.CLICK_SELECTORS, quiet=0.3, media_time=0.3)
ARTICLES = 3  # article 3 changes in version 2; two articles a list page: one "load more" click


class Built:
    def __init__(self, root: Path, base_url: str, site: ScriptSite):
        self.root, self.base_url, self.site = root, base_url, site
        self.live: dict = {}
        self.captures: dict[int, list] = {}
        self.resolves: dict[int, object] = {}
        self.served: dict[int, set[tuple[str, str]]] = {}  # what the live site answered during each capture
        self.snapshots: dict[int, str] = {}
        self.runs: dict[int, str] = {}


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    root = tmp_path_factory.mktemp("script") / "collections"
    root.mkdir()
    site = ScriptSite(ARTICLES, per_page=2)
    coll = Collection.open(root, "js", create=True)
    with SiteServer(site) as server:
        out = Built(root, server.base_url, site)
        urls = [server.url(p) for p in site.pages()]
        out.live = asyncio.run(record_live(urls, SETTINGS))
        for version in (1, 2):
            server.version = version
            server.reset_counters()
            captures, resolve = asyncio.run(capture_pages(coll, f"browser-v{version}.warc.gz", urls, SETTINGS))
            out.served[version] = {(r.method, server.base_url + r.path) for r in server.request_log}
            out.captures[version], out.resolves[version] = captures, resolve
        server.version = 1
        # the HTTP harvest is given every page (their links are made by script: it would find none)
        harvest(root, server, name="http", seeds=urls)
    result = CliRunner().invoke(cli, ["index", "rebuild", "js", "--root", str(root)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with HarvestState(coll.db_path) as state:
        for run in state.runs():
            version = int(run["run_id"][len("browser-v")])
            out.snapshots[version], out.runs[version] = run["snapshot"], run["run_id"]
    return out


def same(url: str) -> str:
    """A URL as the cache-buster rule sees it (``_=<Date.now()>`` differs on every load)."""
    return without_cache_busters(url) or url


# -- capture -------------------------------------------------------------------------------------------
def test_the_capture_asks_for_everything_chromium_asks_for_and_nothing_else(built):
    for capture in built.captures[1]:
        live = {(m, same(u)) for m, u in built.live[capture.url]}
        # Chromium's favicon request comes from the browser, not the page: its own network stack
        # does not report it to the page, interception sees (and archives) it
        asked = {(r.method, same(r.url)) for r in capture.requests if not r.url.endswith("/favicon.ico")}
        assert asked == live, capture.url
        assert all(r.outcome == "fulfilled" for r in capture.requests), capture.url


def test_nothing_reached_the_site_but_what_resolve_fetched(built):
    for version in (1, 2):
        fetched = {(r.method, r.url) for r in built.resolves[version].asked}
        assert built.served[version] <= fetched
        assert {u for _, u in built.served[version]} >= {c.url for c in built.captures[version]}


def test_what_only_scripts_show_is_captured(built):
    home = next(c for c in built.captures[1] if c.url == built.base_url + "/")
    assert built.base_url + "/hidden.html" in home.links  # a link made by script
    assert {built.base_url + f"/article/{n}.html" for n in range(1, ARTICLES + 1)} <= set(home.links)
    assert home.behaviours.clicks == 1  # "load more" until it went away
    for version in (1, 2):
        article = next(c for c in built.captures[version] if c.url.endswith("/article/3.html"))
        assert json_word(3, version) in article.text
        kinds = {(r.resource_type, urlsplit(r.url).path) for r in article.requests}
        assert {
            ("xhr", "/api/article/3.json"),  # text by XMLHttpRequest
            ("image", "/img/photo-3-800.svg"),  # the srcset candidate script picked
            ("image", "/img/observed-3.svg"),  # IntersectionObserver
            ("image", "/img/native-3.svg"),  # loading=lazy
            ("image", "/img/bg.svg"),  # background set by script
            ("media", "/media/clip.wav"),
        } <= kinds
    news = next(c for c in built.captures[2] if c.url.endswith("/news.html"))
    assert "News item 12 (updated)" in news.text  # the third chunk, by infinite scroll


# -- replay --------------------------------------------------------------------------------------------
def test_replay_in_chromium_renders_each_versions_text_and_nothing_leaves(built):
    assert live_site_is_down(built.base_url)
    with QaReplayServer(built.root) as server, launched() as browser:
        for version in (1, 2):
            elsewhere: list[str] = []
            failed: list[tuple[int, str]] = []
            context = browser.new_context(service_workers="block")

            def route(r, elsewhere=elsewhere):
                if r.request.url.startswith(server.base_url + "/"):
                    r.continue_()
                else:
                    elsewhere.append(r.request.url)
                    r.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("response", lambda resp, failed=failed: failed.append((resp.status, resp.url)))
            for path, expected in (
                ("/", "Article 1 (revised)" if version == 2 else "Article 1"),
                ("/article/3.html", json_word(3, version)),
                ("/news.html", "News item 12 (updated)" if version == 2 else "News item 12\n"),
            ):
                page.goto(f"{server.base_url}/js/{built.snapshots[version]}mp_/{built.base_url}{path}")
                for _ in range(12):  # scroll to the end, as the capture did
                    page.mouse.wheel(0, 800)
                    page.wait_for_timeout(150)
                page.wait_for_load_state("networkidle")
                assert expected in page.evaluate("document.body.innerText + '\\n'"), (version, path)
            context.close()
            assert elsewhere == []
            # nothing the live page loaded answers an error (the site has no favicon: its 404 is archived)
            assert [f for f in failed if f[0] >= 400 and not f[1].endswith("/favicon.ico")] == []


def test_a_cache_busted_xhr_is_matched_by_the_rule_as_of_the_snapshot(built):
    from replay import create_app

    client = create_app(built.root).test_client()
    asked = f"{built.base_url}/api/list.json?page=1&_=1999999999999"
    for version in (1, 2):
        response = client.get(f"/js/{built.snapshots[version]}mp_/{asked}")
        assert response.status_code == 302
        target = response.headers["Location"]
        assert re.search(r"/api/list\.json\?page=1&_=\d+$", target)
        followed = client.get(target)
        assert followed.status_code == 200
        assert ("(revised)" in followed.get_data(as_text=True)) == (version == 2)
    # another parameter's value is another resource: never matched by the rule
    nowhere = client.get(f"/js/{built.snapshots[2]}id_/{built.base_url}/api/list.json?page=9&_=1999999999999")
    assert nowhere.status_code == 404


# -- search --------------------------------------------------------------------------------------------
def test_search_finds_words_only_json_carried(built):
    for n in range(1, ARTICLES + 1):
        for version in (1, 2) if changed(n) else (1,):
            found = cli_json("search", "js", json_word(n, version), "--root", str(built.root))
            hits = [(h["url"], h["captures"]) for h in found["hits"]]
            assert [url for url, _ in hits] == [f"{built.base_url}/article/{n}.html"], json_word(n, version)
            run_start = built.snapshots[version][:8]
            assert all(ts[:8] == run_start for ts in hits[0][1])


# -- QA ------------------------------------------------------------------------------------------------
def test_qa_of_the_browser_run_finds_nothing_missing(built):
    report = cli_json("qa", "js", "--run", built.runs[2], "--click", "#more", "--root", str(built.root))
    summary = report["summary"]
    assert summary["pages_checked"] == len(built.site.pages())
    assert summary["missing_by_kind"] == {} and summary["failed_by_reason"] == {}
    for page in report["pages"]:
        assert page["captured_by"] == "browser"
        assert page["text"] >= 0.95, page["url"]
        assert page["screenshot"] >= 0.9, page["url"]
        assert page["capture_requests"]["bad"] <= 1  # the site has no favicon: 404 at capture too
    assert summary["pages_with_problems"] == 0


def test_qa_of_the_http_run_names_what_a_browser_would_have_needed(built):
    with HarvestState(Collection(built.root, "http").db_path) as state:
        run_id = state.runs()[0]["run_id"]
    report = cli_json("qa", "http", "--run", run_id, "--patch", "--root", str(built.root))
    kinds = report["summary"]["missing_by_kind"]
    assert kinds.get("xhr", 0) >= ARTICLES + 2  # each article's JSON, the list's, the news's
    missing = {(f["kind"], urlsplit(f["url"]).path) for p in report["pages"] for f in p["failed"]}
    assert {("xhr", "/api/article/3.json"), ("xhr", "/api/list.json"), ("xhr", "/api/news.json")} <= missing
    assert ("image", "/img/bg.svg") in missing  # named in a script only
    # lazy images named in data-src / data-srcset: Strata's HTTP harvest finds those attributes too
    assert ("image", "/img/observed-3.svg") not in missing
    assert ("image", "/img/photo-3-800.svg") not in missing
    assert all(p["captured_by"] == "http" and p["screenshot"] is None for p in report["pages"])
    queued = {item["url"] for item in store.read_patch(Collection(built.root, "http"), run_id)}
    assert built.base_url + "/api/article/3.json" in queued
    assert report["patch_queued"] == len(queued)


def test_the_console_shows_the_report_and_queues_a_patch(built):
    from replay.staff import create_staff_app
    from tests.support.staff_helpers import STAFF_HOST

    add_user(built.root)
    app = create_staff_app(built.root, {"staff_hosts": [STAFF_HOST]})
    staff = log_in(make_client(app))
    run_id = built.runs[1]
    coll = Collection(built.root, "js")
    store.write_report(
        coll,
        run_id,
        {
            "collection": "js",
            "run": run_id,
            "checked": "2024-01-01T00:00:00Z",
            "pages": [
                {
                    "url": built.base_url + "/",
                    "timestamp": built.snapshots[1],
                    "status": 200,
                    "error": None,
                    "resources": 3,
                    "failed": [
                        {"url": built.base_url + "/api/x.json", "kind": "xhr", "status": 404, "reason": "missing"}
                    ],
                    "screenshot": 0.5,
                    "text": 0.8,
                    "score": 0.5,
                    "problems": True,
                    "captured_by": "browser",
                    "capture_requests": None,
                    "seconds": 1.0,
                }
            ],
            "summary": {"pages_checked": 1, "pages_with_problems": 1, "missing_by_kind": {"xhr": 1}},
        },
    )
    page = staff.get(f"/qa/js/{run_id}")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert 'id="pages-with-problems">1<' in html and "/api/x.json" in html
    token = csrf_from(html)
    queued = staff.post(f"/qa/js/{run_id}/patch", data={"csrf_token": token, "url": [built.base_url + "/api/x.json"]})
    assert queued.status_code == 302
    assert [i["url"] for i in store.read_patch(coll, run_id)] == [built.base_url + "/api/x.json"]
    reviewed = staff.post(
        f"/qa/js/{run_id}/review", data={"csrf_token": token, "page": built.base_url + "/", "status": "bad"}
    )
    assert reviewed.status_code == 302
    assert store.reviews(coll, run_id)[built.base_url + "/"]["status"] == "bad"
    assert staff.get("/qa/js/..%2f..%2fetc").status_code == 404

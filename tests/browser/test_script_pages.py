"""Pages that JavaScript builds, end to end through the CLI: the portal of ``demo/script_site.py``
harvested by ``strata harvest --job`` with ``capture = "browser"`` (``harvester.browser.visitor``:
every request a page makes through the run's one request path), in version 1 (a full run) then
version 2 (an incremental run: conditional requests, 304s, revisits), then replayed in Chromium
with the live site stopped, searched, and checked by ``strata qa``; beside it an HTTP-only
harvest of the same site, which QA must find lacking what a browser would have needed.

What Chromium itself makes the live site serve (its own network stack, the same behaviours) is
recorded first: the browser harvest must ask the site for exactly that, and for robots.txt.
One module-scoped pair of runs serves every assertion; the SIGKILL test has a run of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import time
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner
from warcio.archiveiterator import ArchiveIterator

from cli import cli
from demo.script_site import ScriptSite, changed, json_word
from demo.site_server import SiteServer
from harvester.browser.keeper import naming
from harvester.browser.settings import BrowserSettings
from index.collection import Collection
from index.storage.state import HarvestState
from replay.fuzzy import without_cache_busters
from replay.qa import store
from replay.qa.server import QaReplayServer
from strata.errors import ConfigError
from strata.pageuris import PAGEINFO, TEXT, VIEW, page_uri
from tests.conftest import VENV_BIN, harvest
from tests.support.browser_capture import record_live
from tests.support.chromium import launched, left_behind
from tests.support.served_site import live_site_is_down
from tests.support.staff_helpers import add_user, csrf_from, log_in, make_client

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SETTINGS = BrowserSettings(click_selectors=ScriptSite.CLICK_SELECTORS, quiet=0.3, media_time=0.3)
ARTICLES = 3  # article 3 changes in version 2; two articles a list page: one "load more" click
JOB = """seeds = ["{base}/", "{base}/news.html"]
capture = "browser"
click_selectors = ["#more"]
delay = 0
depth = 3
"""


class Built:
    def __init__(self, root: Path, base_url: str, site: ScriptSite):
        self.root, self.base_url, self.site = root, base_url, site
        self.live: set[tuple[str, str]] = set()  # (method, URL) the live site served Chromium
        self.served: dict[int, list] = {}  # the live site's request log during each browser run
        self.summaries: dict[int, dict] = {}
        self.snapshots: dict[int, str] = {}
        self.runs: dict[int, str] = {}


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def same(url: str) -> str:
    """A URL as the cache-buster rule sees it (``_=<Date.now()>`` differs on every load)."""
    return without_cache_busters(url) or url


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    root = tmp_path_factory.mktemp("script") / "collections"
    root.mkdir()
    site = ScriptSite(ARTICLES, per_page=2)
    coll = Collection.open(root, "js", create=True)
    with SiteServer(site) as server:
        out = Built(root, server.base_url, site)
        urls = [server.url(p) for p in site.pages()]
        asyncio.run(record_live(urls, SETTINGS))
        out.live = {(r.method, same(server.base_url + r.path)) for r in server.request_log}
        coll.job_path("site").write_text(JOB.format(base=server.base_url))
        for version in (1, 2):
            server.version = version
            server.reset_counters()
            out.summaries[version] = summary = cli_json(
                "harvest", "js", "--job", "site", "--wait-for-index", "--root", str(root)
            )
            out.served[version] = server.request_log
            out.snapshots[version], out.runs[version] = summary["snapshot"], summary["run_id"]
        server.version = 1
        # the HTTP harvest is given every page (their links are made by script: it would find none)
        harvest(root, server, name="http", seeds=urls)
    return out


def records_of(built: Built, version: int) -> list[tuple[str, str, dict, bytes]]:
    """(type, target URI, WARC headers, payload) of every record the run wrote, in order."""
    out = []
    for name in built.summaries[version]["warc_files"]:
        with open(Collection(built.root, "js").archive_dir / name, "rb") as fh:
            for record in ArchiveIterator(fh):
                headers = dict(record.rec_headers.headers)
                out.append(
                    (record.rec_type, headers.get("WARC-Target-URI", ""), headers, record.content_stream().read())
                )
    return out


# -- capture -------------------------------------------------------------------------------------------
def test_the_browser_run_asks_the_site_for_what_chromium_asks_for_and_nothing_else(built):
    assert built.summaries[1]["status"] == "finished" and built.summaries[1]["errors"] == 0
    served = {(r.method, same(built.base_url + r.path)) for r in built.served[1]}
    robots = ("GET", built.base_url + "/robots.txt")
    assert served - {robots} == built.live
    # each URL once: a second page asking for the stylesheet is answered from what the run stored
    paths = [r.path for r in built.served[1] if not r.path.startswith("/api/list.json")]
    assert len(paths) == len(set(paths))


def test_what_only_scripts_show_is_captured(built):
    with HarvestState(Collection(built.root, "js").db_path) as state:
        captured = {c["url"] for c in state.captures(run_id=built.runs[1])}
    pages = {built.base_url + p for p in built.site.pages()}
    assert pages <= captured  # /hidden.html: a link made by script; article 3: after a "load more" click
    infos = {
        uri[len("urn:pageinfo:") :]: json.loads(body)
        for kind, uri, _h, body in records_of(built, 1)
        if kind == "resource" and uri.startswith("urn:pageinfo:")
    }
    assert set(infos) == pages
    home = infos[built.base_url + "/"]
    assert home["behaviours"]["clicks"] == 1 and home["links"] >= ARTICLES + 1
    for url, info in infos.items():
        navigation = [r for r in info["requests"] if r["top_level"]]
        assert [r["url"] for r in navigation] == [url] and navigation[0]["status"] == 200
        assert all(r["outcome"] == "fulfilled" for r in info["requests"]), url
    kinds = {
        (r["resource_type"], urlsplit(r["url"]).path) for r in infos[built.base_url + "/article/3.html"]["requests"]
    }
    assert {
        ("xhr", "/api/article/3.json"),  # text by XMLHttpRequest
        ("image", "/img/photo-3-800.svg"),  # the srcset candidate script picked
        ("image", "/img/observed-3.svg"),  # IntersectionObserver
        ("image", "/img/native-3.svg"),  # loading=lazy
        ("image", "/img/bg.svg"),  # background set by script
        ("media", "/media/clip.wav"),
    } <= kinds


def test_each_page_has_its_screenshot_text_and_page_info_dated_as_its_navigation(built):
    records = records_of(built, 2)
    by_id = {h["WARC-Record-ID"]: (kind, uri, h) for kind, uri, h, _b in records}
    texts = {uri: body.decode() for kind, uri, _h, body in records if uri.startswith("urn:text:")}
    for path in built.site.pages():
        url = built.base_url + path
        for kind in (VIEW, TEXT, PAGEINFO):
            (headers,) = [h for k, u, h, _b in records if k in ("resource", "revisit") and u == page_uri(kind, url)]
            navigation = by_id[headers["WARC-Concurrent-To"]]
            assert navigation[1] == url and navigation[0] in ("response", "revisit")
            assert navigation[2]["WARC-Date"] == headers["WARC-Date"]
    assert "News item 12 (updated)" in texts[page_uri(TEXT, built.base_url + "/news.html")]  # by infinite scroll
    assert json_word(3, 2) in texts[page_uri(TEXT, built.base_url + "/article/3.html")]


# -- the second run ------------------------------------------------------------------------------------
def _unchanged(site: ScriptSite, url: str) -> bool | None:
    """Whether the site answers ``url`` with the same payload in both versions (None: it has no such
    resource, its 404 is stored whole as HTTP capture stores an error)."""
    parts = urlsplit(url)
    target = parts.path + ("?" + parts.query if parts.query else "")
    one, two = site.resolve(1, target), site.resolve(2, target)
    if one is None or two is None:
        return None
    return one.body == two.body


def test_the_second_run_stores_revisits_for_everything_unchanged_and_downloads_nothing_that_answered_304(built):
    summary = built.summaries[2]
    assert summary["mode"] == "incremental" and summary["status"] == "finished" and summary["errors"] == 0
    with HarvestState(Collection(built.root, "js").db_path) as state:
        first = {c["url"] for c in state.captures(run_id=built.runs[1])}
        second = state.captures(run_id=built.runs[2])
    assert {same(c["url"]) for c in second} == {same(u) for u in first}  # the same pages asked for the same
    script_loaded = 0
    for capture in second:
        url, unchanged = capture["url"], _unchanged(built.site, capture["url"])
        if unchanged is None:
            assert capture["status"] == 404, url  # the site has no favicon
        elif unchanged:
            assert capture["record_type"] == "revisit", url
            # with validators from the first run: a 304; a new cache-busting URL (and robots.txt, asked
            # for without validators as in HTTP capture): an identical payload, by its digest
            expected = "not_modified" if url in first and not url.endswith("/robots.txt") else "unchanged"
            assert capture["class"] == expected, url
            script_loaded += "/api/" in url or "/img/" in url or "/media/" in url
        else:
            assert capture["record_type"] == "response" and capture["class"] in ("changed", "new"), url
    assert script_loaded >= 3 * ARTICLES
    for request in built.served[2]:  # every URL the first run held validators for was asked for conditionally
        url = built.base_url + request.path
        if url in first and _unchanged(built.site, url) is not None and not url.endswith("/robots.txt"):
            assert request.header("If-None-Match") or request.header("If-Modified-Since"), url
            assert request.status == (304 if _unchanged(built.site, url) else 200), url
    changed_urls = {c["url"] for c in second if c["record_type"] == "response"}
    assert {urlsplit(u).path for u in changed_urls} >= {"/api/article/3.json", "/img/bg.svg", "/api/news.json"}


@pytest.mark.parametrize("version", (1, 2))
def test_the_runs_figures_equal_their_warc_records(built, version):
    summary = built.summaries[version]
    records = records_of(built, version)

    def count(kinds: tuple[str, ...], page: bool) -> int:
        return sum(1 for kind, uri, *_ in records if kind in kinds and uri.startswith("urn:") == page)

    assert count(("response", "revisit"), page=False) == summary["urls_fetched"]
    assert count(("revisit",), page=False) + count(("revisit",), page=True) == summary["revisits"]
    assert count(("request",), page=False) == summary["request_records"]
    assert count(("resource", "revisit"), page=True) == summary["page_records"] == 3 * summary["pages_rendered"]
    assert count(("revisit",), page=True) == summary["page_revisits"]
    assert summary["pages_rendered"] == len(built.site.pages())
    classes = ("new", "changed", "soft", "unchanged", "not_modified", "deleted", "redirect")
    assert sum(summary[c] for c in classes) == summary["urls_fetched"]
    archive = Collection(built.root, "js").archive_dir
    assert summary["bytes_stored"] == sum((archive / name).stat().st_size for name in summary["warc_files"])


def test_an_unchanged_page_s_text_and_screenshot_are_revisits_of_the_first_run_s(built):
    first = {uri: h for kind, uri, h, _b in records_of(built, 1) if kind == "resource"}
    second = {uri: (kind, h) for kind, uri, h, _b in records_of(built, 2) if uri.startswith("urn:")}
    # version 2: new titles and texts in the JSON of /, /news.html, articles 1 and 3; a new background
    # image on every page with a script (a screenshot changes); /hidden.html has no script
    same = {TEXT: {"/hidden.html", "/article/2.html"}, VIEW: {"/hidden.html"}}
    for path in built.site.pages():
        url = built.base_url + path
        for kind in (TEXT, VIEW):
            uri = page_uri(kind, url)
            record_type, headers = second[uri]
            assert record_type == ("revisit" if path in same[kind] else "resource"), uri
            if record_type == "revisit":
                assert headers["WARC-Refers-To"] == first[uri]["WARC-Record-ID"]
                assert headers["WARC-Payload-Digest"] == first[uri]["WARC-Payload-Digest"]
        assert second[page_uri(PAGEINFO, url)][0] == "resource"  # when and how long: new every time


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


def test_the_wacz_lists_each_page_once_with_what_it_showed(built, tmp_path):
    out = tmp_path / "js.wacz"
    cli_json("export", "wacz", "js", "--run", built.runs[2], "--out", str(out), "--root", str(built.root))
    with zipfile.ZipFile(out) as wacz:
        lines = [json.loads(line) for line in wacz.read("pages/pages.jsonl").splitlines()[1:]]
    assert sorted(p["url"] for p in lines) == sorted(built.base_url + p for p in built.site.pages())
    by_url = {p["url"]: p for p in lines}
    article = by_url[built.base_url + "/article/3.html"]
    assert json_word(3, 2) in article["text"] and "Loading..." not in article["text"]  # rendered, not the shell
    assert article["title"] == "Article 3"
    assert "News item 12 (updated)" in by_url[built.base_url + "/news.html"]["text"]


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


def test_a_patch_captures_what_qa_queued_as_a_follow_up_of_the_run(built):
    coll = Collection(built.root, "http")
    with HarvestState(coll.db_path) as state:
        (run,) = state.runs()
    base = built.base_url
    wanted = {base + "/api/article/3.json": "/article/3.html", base + "/img/bg.svg": "/"}
    store.queue_patch(coll, run["run_id"], [{"url": u, "page": base + p, "kind": "xhr"} for u, p in wanted.items()])
    queued = {item["url"] for item in store.read_patch(coll, run["run_id"])}
    assert set(wanted) <= queued
    with SiteServer(built.site, port=urlsplit(base).port) as server:  # the live site back, as it was
        summary = cli_json("harvest", "http", "--patch", run["run_id"], "--delay", "0", "--root", str(built.root))
        asked = {server.base_url + r.path for r in server.request_log}
    assert summary["status"] == "finished" and summary["patch_of"] == run["run_id"]
    assert summary["mode"] == "incremental" and summary["pages_rendered"] == 0
    assert asked == queued | {base + "/robots.txt"}  # each queued resource once, nothing else
    assert store.read_patch(coll, run["run_id"]) == []  # captured: off the queue
    with HarvestState(coll.db_path) as state:
        assert state.run(summary["run_id"])["figures"]["patch_of"] == run["run_id"]
    from replay import create_app

    client = create_app(built.root).test_client()
    patched = client.get(f"/http/{summary['snapshot']}id_/{base}/api/article/3.json")
    assert patched.status_code == 200 and json_word(3, 1) in patched.get_data(as_text=True)
    assert client.get(f"/http/{run['snapshot']}id_/{base}/api/article/3.json").status_code == 404
    # a run that is no longer the latest cannot be patched: the follow-up came after it
    again = CliRunner().invoke(cli, ["harvest", "http", "--patch", run["run_id"], "--root", str(built.root)])
    assert isinstance(again.exception, ConfigError) and "is not the latest run" in again.exception.message


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
    # "capture the patch" starts strata harvest --patch in the background: run 1 is not the latest, so it
    # says why and the queue stays
    assert 'id="capture-patch"' in staff.get(f"/qa/js/{run_id}").get_data(as_text=True)
    started = staff.post(f"/qa/js/{run_id}/capture-patch", data={"csrf_token": token})
    assert started.status_code == 302
    folder = store.run_dir(coll, run_id)
    pid = int((folder / "patch.pid").read_text())
    deadline = time.monotonic() + 60
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    assert "is not the latest run of js" in (folder / "patch.log").read_text()
    assert [i["url"] for i in store.read_patch(coll, run_id)] == [built.base_url + "/api/x.json"]
    reviewed = staff.post(
        f"/qa/js/{run_id}/review", data={"csrf_token": token, "page": built.base_url + "/", "status": "bad"}
    )
    assert reviewed.status_code == 302
    assert store.reviews(coll, run_id)[built.base_url + "/"]["status"] == "bad"
    assert staff.get("/qa/js/..%2f..%2fetc").status_code == 404


# -- a killed run ----------------------------------------------------------------------------------------
def test_a_sigkilled_browser_harvest_leaves_no_chromium_and_the_next_command_recovers(tmp_path):
    root = tmp_path / "collections"
    root.mkdir()
    state_dir = Collection(root, "k").state_dir
    with SiteServer(ScriptSite(ARTICLES, per_page=2)) as server:
        command = [str(VENV_BIN / "strata"), "harvest", "k", "--seed", server.base_url + "/", "--depth", "0"]
        harvest_cmd = subprocess.Popen(
            [*command, "--capture", "browser", "--delay", "0", "--root", str(root)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            workdir, deadline = None, time.monotonic() + 120
            while time.monotonic() < deadline and harvest_cmd.poll() is None:  # until its Chromium renders a page
                found = list(state_dir.glob("strata-chromium-*")) if state_dir.is_dir() else []
                if found and len(naming(str(found[0]))) >= 3:
                    workdir = str(found[0])
                    break
                time.sleep(0.05)
            assert workdir is not None, "the harvest ended before its browser was seen"
        finally:
            harvest_cmd.send_signal(signal.SIGKILL)
            harvest_cmd.wait()
        assert left_behind(workdir) == []
        assert any(name.endswith(".open") for name in os.listdir(Collection(root, "k").archive_dir))

        # the next harvest recovers first, as after a killed HTTP run, then runs in the browser
        again = subprocess.run(
            [*command, "--capture", "browser", "--delay", "0", "--json", "--root", str(root)],
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["status"] == "finished"
    runs = {r["run_id"]: r["status"] for r in cli_json("runs", "k", "--root", str(root))}
    assert sorted(runs.values()) == ["finished", "interrupted"]
    assert not [n for n in os.listdir(Collection(root, "k").archive_dir) if n.endswith(".open")]
    assert list(state_dir.glob("strata-chromium-*")) == []
    verified = CliRunner().invoke(cli, ["verify", "k", "--root", str(root)])
    assert verified.exit_code == 0, verified.output

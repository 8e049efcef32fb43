"""The seam a browser visitor plugs into (``harvester.visit``): a visitor of the job's ``capture``
kind visits each page, and every request the page makes goes through ``RequestPath.answer``:
scope, robots.txt, politeness, the conditional fetch, the decision and the recorder, once per URL
and run, answered with the bytes as stored (a 304: the stored original's).

No browser here: a scripted visitor asks for what a page would, over real HTTP to a real server,
and the harvest writes real WARCs."""

from __future__ import annotations

import asyncio
import gzip
from urllib.parse import urlsplit

import pytest

from demo.site_server import Resource, SiteServer
from harvester import visit
from harvester.frontier import Item
from index.collection import Collection
from index.storage.state import HarvestState
from tests.conftest import harvest

CSS = b"body { color: #123 }\n" * 40
HTML = b'<html><head><link rel="stylesheet" href="/style.css"></head><body><a href="/next.html">n</a></body></html>'


class Pages:
    def resolve(self, version, path, headers=None):
        html = (("Content-Type", "text/html; charset=utf-8"),)
        if path == "/robots.txt":
            return Resource(200, (("Content-Type", "text/plain"),), b"User-agent: *\nDisallow: /private/\n")
        if path == "/":
            return Resource(200, html, HTML, etag='"home"')
        if path == "/next.html":
            return Resource(200, html, b"<p>next</p>", etag='"next"')
        if path == "/style.css":
            return Resource(200, (("Content-Type", "text/css"),), CSS, gzip=True, etag='"css"')
        if path.startswith("/private/"):
            return Resource(200, (("Content-Type", "text/javascript"),), b"secret()")
        return None


class ScriptedVisitor:
    """Stands in for a browser: loading the seed, it asks for the page, its stylesheet (twice at
    once, as two frames would), a script robots.txt disallows, a POST and an address off the site."""

    asked: dict[str, object] = {}

    def __init__(self, path: visit.RequestPath):
        self.path = path

    async def visit(self, item: Item) -> None:
        if item.kind != "seed":
            await self.path.request(item, follow=True)
            return
        base = item.url.rstrip("/")
        answer, path = self.path.answer, self.path
        page, css1, css2, private, post, offsite = await asyncio.gather(
            answer(item.url, "GET", item, navigation=True),
            answer(base + "/style.css", "GET", item, navigation=False),
            answer(base + "/style.css", "GET", item, navigation=False),
            answer(base + "/private/app.js", "GET", item, navigation=False),
            answer(base + "/form", "POST", item, navigation=False),
            answer("http://offsite.invalid/x.png", "GET", item, navigation=False),
        )
        again = await path.answer(base + "/style.css", "GET", item, navigation=False)  # read back
        ScriptedVisitor.asked = dict(
            page=page, css1=css1, css2=css2, private=private, post=post, offsite=offsite, again=again
        )

    async def close(self) -> None:
        pass


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setitem(visit.VISITORS, "http", ScriptedVisitor)
    return ScriptedVisitor


def _requests(server, path):
    return [r for r in server.request_log if urlsplit(r.path).path == path]


def test_a_page_s_requests_go_through_the_harvest_s_path_once_each(root, scripted):
    with SiteServer(Pages(), version=1) as server:
        summary = harvest(root, server, name="b", embeds_offsite=False)
        asked = scripted.asked
        assert summary["status"] == "finished", summary
        assert asked["page"].status == 200 and asked["page"].body == HTML
        css = asked["css1"]
        assert css.status == 200 and ("Content-Encoding", "gzip") in css.headers
        assert gzip.decompress(css.body) == CSS  # the payload as stored: still gzip, as its headers say
        assert asked["css2"] == css and asked["again"] == css
        assert asked["private"] is None and asked["post"] is None and asked["offsite"] is None
        assert len(_requests(server, "/style.css")) == 1  # two askers at once, a third later: one fetch
        assert _requests(server, "/private/app.js") == [] and _requests(server, "/form") == []
        assert len(_requests(server, "/next.html")) == 1  # the page's own links are followed

        with HarvestState(Collection(root, "b").db_path) as state:
            classes = {urlsplit(c["url"]).path: c["class"] for c in state.captures(run_id=summary["run_id"])}
            checks = {urlsplit(c["url"]).path: c["outcome"] for c in state.checks(summary["run_id"])}
            style = state.url(server.base_url + "/style.css")
        assert classes == {"/robots.txt": "new", "/": "new", "/style.css": "new", "/next.html": "new"}
        assert checks == {"/private/app.js": "skipped"}
        assert style["found_on"] == server.base_url + "/" and style["link_kind"] == "embed"

        # the next run: an unchanged stylesheet answers 304, and the browser gets the stored original
        summary2 = harvest(root, server, name="b", embeds_offsite=False, mode="incremental")
        asked2 = scripted.asked
        (second,) = _requests(server, "/style.css")[1:]
        assert second.status == 304 and second.header("If-None-Match")
        assert asked2["css1"] == css and asked2["css2"] == css and asked2["again"] == css
        assert asked2["page"].status == 200 and asked2["page"].body == HTML
        with HarvestState(Collection(root, "b").db_path) as state:
            classes2 = {urlsplit(c["url"]).path: c["class"] for c in state.captures(run_id=summary2["run_id"])}
        assert classes2["/style.css"] == "not_modified" and classes2["/"] == "not_modified"


def test_the_job_s_capture_setting_chooses_the_visitor():
    from harvester.job import validate_job

    job = validate_job("j", {"seeds": ["http://example.org/"]})
    assert job.capture == "http" and visit.VISITORS["http"] is visit.HttpVisitor

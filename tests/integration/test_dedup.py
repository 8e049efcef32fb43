"""Dedup across URLs and files: a payload already archived under another URL becomes a revisit that
pywb resolves to the other URL's record; WARC files roll over by size, each sealed and indexed."""

from __future__ import annotations

import asyncio

import httpx

from demo.site_server import Resource, SiteServer
from harvester.job import validate_job
from harvester.run import Harvest
from index.collection import Collection
from index.state import HarvestState

SHARED = b"<html><body><p>" + b"the same report, published twice. " * 200 + b"</p></body></html>"


class Mirrors:
    """v1: / links /a.html. v2: / also links /copy.html, whose payload equals /a.html's."""

    def resolve(self, version, path, headers=None):
        html = (("Content-Type", "text/html"),)
        if path == "/":
            links = '<a href="/a.html">a</a>' + ('<a href="/copy.html">c</a>' if version >= 2 else "")
            return Resource(200, html, links.encode())
        if path == "/a.html" or (path == "/copy.html" and version >= 2):
            return Resource(200, html, SHARED)
        return None


def run(root, server, **overrides):
    job = validate_job("t", {"seeds": [server.base_url + "/"], "delay": 0.0, "robots": "ignore", **overrides})
    return asyncio.run(Harvest(Collection.open(root, "m", create=True), job).run())


def test_payload_of_another_url_becomes_a_revisit_that_pywb_resolves(root, wayback_factory):
    with SiteServer(Mirrors(), version=1) as server:
        run(root, server)
        server.version = 2
        second = run(root, server)
    with HarvestState(Collection.open(root, "m").db_path) as state:
        copy = state.captures(url=server.base_url + "/copy.html")[0]
    assert (copy["record_type"], copy["class"]) == ("revisit", "new")
    assert copy["refers_to_uri"] == server.base_url + "/a.html"
    wayback = wayback_factory(root)
    resp = httpx.get(f"{wayback.base_url}/m/{second['snapshot']}id_/{server.base_url}/copy.html", timeout=10)
    assert resp.status_code == 200 and resp.content == SHARED


def test_warc_files_roll_over_and_each_is_sealed_and_indexed(site, root):
    from tests.conftest import harvest

    summary = harvest(root, site, warc_max_size=20_000)
    assert len(summary["warc_files"]) >= 3
    coll = Collection.open(root, "sample")
    assert sorted(summary["warc_files"]) == coll.warc_files()
    with HarvestState(coll.db_path) as state:
        assert {w["filename"]: w["state"] for w in state.warcs()} == dict.fromkeys(summary["warc_files"], "indexed")
    indexed_files = {line.split('"filename": "')[1].split('"')[0] for line in coll.cdxj_path.read_text().splitlines()}
    assert indexed_files == set(summary["warc_files"])
    for name in summary["warc_files"]:
        assert name.startswith("sample-") and name.endswith(".warc.gz")

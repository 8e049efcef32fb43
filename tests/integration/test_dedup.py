"""Dedup across URLs and files: a payload already archived under another URL becomes a revisit that
pywb resolves to the other URL's record; WARC files roll over by size, each sealed and indexed."""

from __future__ import annotations

import asyncio

import httpx

from demo.site_server import Resource, SiteServer
from harvester.job import validate_job
from harvester.run import Harvest
from index.collection import Collection
from index.storage.state import HarvestState

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
    # the URL's first capture, but a payload the collection holds: unchanged, as the README's table says
    assert (copy["record_type"], copy["class"]) == ("revisit", "unchanged")
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


class Twins:
    """One page linking two URLs whose payloads are the same bytes (a report published under two
    addresses), and an image reachable under two paths."""

    def resolve(self, version, path, headers=None):
        html = (("Content-Type", "text/html"),)
        if path == "/":
            return Resource(200, html, b'<a href="/a.html">a</a> <a href="/b.html">b</a> <img src="/i/1.png">')
        if path in ("/a.html", "/b.html"):
            return Resource(200, html, SHARED + b'<img src="/i/2.png">')
        if path in ("/i/1.png", "/i/2.png"):
            return Resource(200, (("Content-Type", "image/png"),), b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
        return None


def test_same_run_copies_are_revisits_of_the_first_and_both_replay(root, wayback_factory):
    from replay import create_app

    with SiteServer(Twins(), version=1) as server:
        first = run(root, server)
        second = run(root, server)  # nothing changed: every URL, the copies too, unchanged or not modified
        base = server.base_url
    assert first["mode"] == "full" and second["mode"] == "incremental"
    assert (second["new"], second["changed"]) == (0, 0)
    _figures_equal_the_warcs(root, second)
    with HarvestState(Collection.open(root, "m").db_path) as state:
        by_url = {c["url"]: c for c in state.captures(run_id=first["run_id"])}
    for pair in (("/a.html", "/b.html"), ("/i/1.png", "/i/2.png")):
        # the fetches run concurrently: whichever of the two was written first is the original
        original, copy = sorted((by_url[base + path] for path in pair), key=lambda c: (c["warc"], c["offset"]))
        assert copy["record_type"] == "revisit" and copy["class"] == "unchanged"
        assert (copy["refers_to_uri"], copy["warc"]) == (original["url"], original["warc"])
        assert original["record_type"] == "response" and original["offset"] < copy["offset"]
    assert first["bytes_saved"] == len(SHARED) + len(b'<img src="/i/2.png">') + 8 + 256 * 8
    _figures_equal_the_warcs(root, first)

    wayback = wayback_factory(root)
    client = create_app(root).test_client()
    for path in ("/a.html", "/b.html", "/i/1.png", "/i/2.png"):
        expected = Twins().resolve(1, path).body
        unmodified = httpx.get(f"{wayback.base_url}/m/{first['snapshot']}id_/{base}{path}", timeout=10)
        assert (unmodified.status_code, unmodified.content) == (200, expected), path
        strata = client.get(f"/m/{first['snapshot']}id_/{base}{path}")
        assert (strata.status_code, strata.data) == (200, expected), path


def _figures_equal_the_warcs(root, summary: dict) -> None:
    """The run's figures are what its records are: revisits are its unchanged and not-modified
    captures, its other captures are responses (README, "How a run decides what to write")."""
    with HarvestState(Collection.open(root, "m").db_path) as state:
        rows = state.captures(run_id=summary["run_id"])
    revisits = [c for c in rows if c["record_type"] == "revisit"]
    assert summary["revisits"] == len(revisits) == summary["unchanged"] + summary["not_modified"]
    written = sum(summary[k] for k in ("new", "changed", "soft", "deleted", "redirect"))
    assert written == len(rows) - len(revisits) == len([c for c in rows if c["record_type"] == "response"])

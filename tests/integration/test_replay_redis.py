"""Several ``strata serve`` processes over one root and one real ``redis-server`` (issue 12).

Both servers read the collection's CDX from its sorted set in Redis (``index.cdx.capture_index``): they
answer every URL of a harvested collection (v1, then v2 incremental with revisits) identically, and
from Redis (they keep answering with the local ``index.cdxj`` moved away); a run harvested after
they started is visible on both as soon as its files are sealed (and so is one more file, written by
warcio, once sealed); with Redis stopped they keep
answering the same from the local index file, and read Redis again once it is back; access rules
apply on top of what they read.
"""

from __future__ import annotations

import hashlib
import time
from urllib.parse import quote

import httpx
import pytest
from click.testing import CliRunner

from cli import cli
from index.capture.seal import index_sealed_file
from index.cdx.cdxj import iter_index
from index.collection import Collection
from index.storage import redisdb
from index.storage.statestore import open_harvest_state
from tests.conftest import harvest
from tests.support.replay_fixtures import StrataServer
from tests.support.warc_makers import Cap, write_warc


def _answer(http: httpx.Client, server: StrataServer, path: str) -> tuple:
    """What a reader gets, with the server's own address taken out of the headers."""
    resp = http.get(server.base_url + path)
    headers = {
        name: resp.headers.get(name, "").replace(server.base_url, "")
        for name in ("Memento-Datetime", "Link", "Location", "Content-Type")
    }
    body = resp.content.replace(server.base_url.encode(), b"")  # timemaps name the server
    return resp.status_code, hashlib.sha256(body).hexdigest(), headers


def _paths(coll: Collection, snapshots: list[str]) -> list[str]:
    """For every archived URL: its raw bytes at each run's snapshot, and its timemap; some pages as a
    reader sees them (rewritten, with the banner's capture list) and their calendars; a CDX API answer."""
    urls = sorted({line["url"] for line in iter_index(coll.cdxj_path) if not line["url"].startswith("urn:")})
    paths = [f"/{coll.name}/{snap}id_/{url}" for url in urls for snap in snapshots]
    pages = [url for url in urls if url.endswith((".html", "/"))][:12]
    paths += [f"/{coll.name}/{snapshots[-1]}/{url}" for url in pages]  # with the banner (index.cdx.versions)
    paths += [f"/{coll.name}/*/{url}" for url in pages[:4]] + [f"/api/captures/{coll.name}/{pages[0]}"]  # calendar
    return paths + [f"/{coll.name}/timemap/link/{url}" for url in urls] + [f"/{coll.name}/cdx?url={quote(urls[0])}"]


def _answers(servers: list[StrataServer], paths: list[str]) -> list[list[tuple]]:
    with httpx.Client(timeout=20.0) as http:
        return [[_answer(http, server, path) for path in paths] for server in servers]


@pytest.mark.slow
def test_two_replay_servers_over_one_redis(tmp_path, root, site, redis_url, redis_server, monkeypatch):
    monkeypatch.setenv("STRATA_REDIS", redis_url)  # the servers inherit it
    runs = [harvest(root, site)]
    site.version = 2
    runs.append(harvest(root, site))
    coll = Collection(root, "sample")
    servers = [StrataServer(root, tmp_path / f"serve-{n}.log") for n in (1, 2)]
    try:
        snapshots = [run["snapshot"] for run in runs]
        paths = _paths(coll, snapshots)
        first, second = _answers(servers, paths)
        assert first == second
        statuses = [answer[0] for answer in first]
        assert statuses.count(200) >= 90, statuses  # the archived pages themselves, not error pages
        assert not [p for p, a in zip(paths, first, strict=True) if a[0] >= 500]
        assert runs[1]["revisits"] >= 10

        # the answers come from Redis: the same with the local index file moved away
        hidden = coll.cdxj_path.with_name("index.cdxj.aside")
        coll.cdxj_path.rename(hidden)
        try:
            assert _answers(servers, paths) == [first, first]
        finally:
            hidden.rename(coll.cdxj_path)

        # a run harvested while both serve: visible on both once its files are sealed, no restart
        site.version = 3
        runs.append(harvest(root, site))
        new_paths = _paths(coll, [runs[2]["snapshot"]])
        on_one, on_two = _answers(servers, new_paths)
        assert on_one == on_two
        new_page = next(i for i, p in enumerate(new_paths) if p.endswith("/news/article-0015.html"))  # only in v3
        assert on_one[new_page][0] == 200

        # one more file sealed (written by warcio, indexed as the harvester seals): on both at once
        warc = coll.archive_dir / "sealed-later.warc.gz"
        write_warc(warc, [Cap("http://sealed.example/page.html", "2030-01-02T03:04:05Z", b"<html>sealed</html>")])
        with open_harvest_state(coll) as state:
            index_sealed_file(coll, state, warc.name)
        sealed = "/sample/20300102030405id_/http://sealed.example/page.html"
        with httpx.Client(timeout=20.0) as http:
            for server in servers:
                resp = http.get(server.base_url + sealed)
                assert (resp.status_code, resp.content) == (200, b"<html>sealed</html>")

        # Redis stopped: the same answers, from the local index.cdxj (which holds every line Redis holds)
        every = paths + new_paths + [sealed]
        before = _answers(servers, every)
        redis_server.stop()
        try:
            during = _answers(servers, every)
        finally:
            redis_server.start()
        assert during == before
        for server in servers:
            assert "replay reads the local index files" in server.log_path.read_text()
            assert "Traceback" not in server.log_path.read_text()

        # Redis back: read from it again (the local file moved away once more)
        coll.cdxj_path.rename(hidden)
        try:
            client = redisdb.connect(redis_url)
            assert client.zcard(redisdb.cdxj_key("sample")) > 0
            client.close()
            time.sleep(5.5)  # past the retry delay (index.cdx.redis_cdx.RETRY_AFTER)
            assert _answers(servers, every) == [before[0], before[0]]
        finally:
            hidden.rename(coll.cdxj_path)

        # access rules apply on top of the Redis-read index, on both servers alike
        for prefix, access in (("/about.html", "exclude"), ("/contact.html", "block")):
            added = CliRunner().invoke(
                cli, ["access", "sample", "add", site.base_url + prefix, "--access", access, "--root", str(root)]
            )
            assert added.exit_code == 0, added.output
        ruled = [p for p in every if "/about.html" in p or "/contact.html" in p]
        one, two = _answers(servers, ruled)
        assert one == two
        assert {a[0] for p, a in zip(ruled, one, strict=True) if "/about.html" in p} == {404}
        assert {a[0] for p, a in zip(ruled, one, strict=True) if "/contact.html" in p and "id_/" in p} == {451}
        cdx = _answers(servers, [f"/sample/cdx?url={quote(site.base_url + '/about.html')}"])
        assert cdx[0] == cdx[1] and cdx[0][0][:2] == (200, hashlib.sha256(b"").hexdigest())  # no lines
    finally:
        for server in servers:
            server.stop()

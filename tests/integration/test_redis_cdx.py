"""The CDX index in Redis, in the form pywb reads natively: an unmodified pywb whose only index is
that sorted set replays a harvested collection, revisits included."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from demo.sample_site import SampleSite
from index.collection import Collection
from index.state import HarvestState
from index.storage import redisdb
from tests.conftest import harvest


def test_unmodified_pywb_replays_from_the_redis_cdx(tmp_path, root, site, redis_url, monkeypatch, wayback_factory):
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    harvest(root, site)
    site.version = 2
    run2 = harvest(root, site)
    client = redisdb.connect(redis_url)
    coll = Collection(root, "sample")
    file_lines = [line.rstrip(b"\n").decode() for line in coll.cdxj_path.read_bytes().splitlines() if line.strip()]
    assert client.zrangebylex(redisdb.cdxj_key("sample"), "-", "+") == file_lines  # same lines, same order
    client.close()

    # pywb with no collection directory at all: its one collection reads Redis and the WARC files
    alone = tmp_path / "pywb-only" / "collections"
    alone.mkdir(parents=True)
    (alone.parent / "config.yaml").write_text(
        f"collections:\n  shared:\n    index: {redis_url}/pywb:sample:cdxj\n    archive_paths: {coll.archive_dir}/\n"
    )
    wayback = wayback_factory(alone)
    with HarvestState(coll.db_path) as state:
        caps = state.captures(run_id=run2["run_id"])
    checked = revisits = 0
    with httpx.Client(timeout=10.0) as http:
        for cap in caps:
            path = urlsplit(cap["url"]).path or "/"
            resource = SampleSite.resource(2, path)
            if resource is None or cap["status"] in (404, 410) or cap["status"] is None:
                continue
            resp = http.get(f"{wayback.base_url}/shared/{run2['snapshot']}id_/{cap['url']}")
            assert resp.status_code == resource.status, path
            if resource.status < 300:
                assert resp.content == resource.body, path
            checked += 1
            revisits += cap["record_type"] == "revisit"
        missing = http.get(f"{wayback.base_url}/shared/{run2['snapshot']}id_/{site.base_url}/never-harvested")
    assert checked >= 45 and revisits >= 10
    assert missing.status_code == 404

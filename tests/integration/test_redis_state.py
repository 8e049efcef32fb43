"""Per-URL harvest state and the digest index in Redis: an incremental run reads them from there."""

from __future__ import annotations

import json
import sqlite3
from urllib.parse import urlsplit

from index.collection import Collection
from index.state import HarvestState
from index.storage import redisdb
from tests.conftest import harvest


def _classes(root, run_id):
    with HarvestState(Collection(root, "sample").db_path) as state:
        return {urlsplit(r["url"]).path: (r["record_type"], r["class"]) for r in state.captures(run_id=run_id)}


def _v1_then_v2(root, site, between=None):
    site.version = 1
    first = harvest(root, site)
    if between:
        between()
    site.version = 2
    second = harvest(root, site)
    return first, second


def test_an_incremental_run_reads_url_state_and_digests_from_redis(tmp_path, site, redis_url, monkeypatch):
    baseline_root = tmp_path / "baseline" / "collections"
    baseline_root.mkdir(parents=True)
    _, base2 = _v1_then_v2(baseline_root, site)  # SQLite: the reference

    monkeypatch.setenv("STRATA_REDIS", redis_url)
    root = tmp_path / "redis" / "collections"
    root.mkdir(parents=True)
    client = redisdb.connect(redis_url)
    db = Collection(root, "sample").db_path

    def forget_locally():
        # What Redis holds equals the file's rows; then the file forgets them: all that the
        # incremental run knows of URLs and payloads must come from Redis.
        with HarvestState(db) as state:
            local = {row["url"]: row for row in state.known_urls()}
            digests = dict(state.digest_rows())
        held = {url: json.loads(raw) for url, raw in client.hgetall(redisdb.urls_key("sample")).items()}
        assert held.keys() == local.keys() and len(held) > 40
        for url, row in local.items():
            assert {k: held[url].get(k) for k in row} == row, url
        assert client.scard(redisdb.job_urls_key("sample", "test")) == len(local)
        assert client.hlen(redisdb.digests_key("sample")) == len(digests) > 0
        assert client.smembers(redisdb.indexed_key("sample"))
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("DELETE FROM urls")
            conn.execute("DELETE FROM url_jobs")
            conn.execute("DELETE FROM digests")
        conn.close()

    _, run2 = _v1_then_v2(root, site, forget_locally)
    assert run2["mode"] == "incremental"
    assert _classes(root, run2["run_id"]) == _classes(baseline_root, base2["run_id"])
    assert run2["revisits"] == base2["revisits"] > 0 and run2["bytes_saved"] == base2["bytes_saved"]
    client.close()


def test_a_rebuild_refreshes_what_redis_holds(root, site, redis_url, monkeypatch):
    from index.capture.rebuild import rebuild_state

    monkeypatch.setenv("STRATA_REDIS", redis_url)
    harvest(root, site)
    client = redisdb.connect(redis_url)
    held = client.hgetall(redisdb.urls_key("sample"))
    lines = client.zcard(redisdb.cdxj_key("sample"))
    client.flushall()  # Redis lost everything (no persistence)
    rebuild_state(Collection(root, "sample"))
    assert client.hlen(redisdb.urls_key("sample")) == len(held) > 40
    assert client.zcard(redisdb.cdxj_key("sample")) == lines > 40
    assert client.hlen(redisdb.digests_key("sample")) > 0 and client.scard(redisdb.indexed_key("sample")) > 0
    client.close()


def test_a_held_url_is_read_from_redis_once_and_read_again_after_release(tmp_path, redis_url):
    from index.storage.redisstate import RedisHarvestState

    db = tmp_path / "harvest.sqlite"
    url = "http://example.org/a"
    writer = RedisHarvestState(db, "held", redis_url)
    other = RedisHarvestState(tmp_path / "other.sqlite", "held", redis_url)  # another worker's process
    client = redisdb.connect(redis_url)
    try:
        writer.see_url(url, "example.org", "r1", "2026-01-01T00:00:00Z", None, 0, "navigation", job="j")
        writer.hold(url)
        assert writer.url(url)["checks"] == 0
        reads = int(client.info("stats")["total_commands_processed"])
        writer.update_url(url, checks=1)
        row = writer.url(url)
        assert row["checks"] == 1
        row["checks"] = 99  # a caller's copy: the held row is not changed through it
        assert writer.url(url)["checks"] == 1
        # update_url wrote once, and neither it nor the two reads went back to Redis for the row
        assert int(client.info("stats")["total_commands_processed"]) - reads == 2  # HSET, and this INFO
        assert json.loads(client.hget(redisdb.urls_key("held"), url))["checks"] == 1
        writer.release(url)
        other.update_url(url, checks=5)
        assert writer.url(url)["checks"] == 5  # released: Redis is read again
    finally:
        writer.close()
        other.close()
        client.close()


def test_a_row_made_by_another_worker_after_the_lease_is_not_hidden(tmp_path, redis_url):
    """Worker B leases a URL before worker A, which queued it, has made its row: B's visit must write
    to the row A then makes, not drop its writes as to a URL with no row."""
    from index.storage.redisstate import RedisHarvestState

    url = "http://example.org/late"
    a = RedisHarvestState(tmp_path / "a.sqlite", "late", redis_url)
    b = RedisHarvestState(tmp_path / "b.sqlite", "late", redis_url)
    try:
        b.hold(url)
        assert b.url(url) is None  # not made yet
        a.see_url(url, "example.org", "r1", "2026-01-01T00:00:00Z", None, 1, "embed", job="j")
        b.update_url(url, checks=1, digest="sha1:ABC")
        assert a.url(url)["digest"] == "sha1:ABC" and a.url(url)["depth"] == 1
        b.release(url)
    finally:
        a.close()
        b.close()


def test_on_a_redis_root_the_collection_file_uses_a_rollback_journal(tmp_path, root, site, redis_url, monkeypatch):
    """WAL keeps its index in shared memory, which no network file system shares: on a root that
    several machines may share (Redis backend) harvest.sqlite uses a rollback journal instead."""
    harvest(root, site)  # a SQLite root: WAL
    db = Collection(root, "sample").db_path

    def mode():
        conn = sqlite3.connect(db)
        try:
            return conn.execute("PRAGMA journal_mode").fetchone()[0]
        finally:
            conn.close()

    assert mode() == "wal"
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    reader = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)  # a replay server's connection
    reader.execute("SELECT count(*) FROM urls").fetchone()
    with HarvestState(db):
        assert mode() == "wal"  # not while another process has it open: it waits for the next open
    reader.close()
    site.version = 2
    run2 = harvest(root, site)
    assert mode() == "delete" and run2["status"] == "finished"
    assert not db.with_name(db.name + "-wal").exists()


def test_a_worker_waits_for_sqlite_s_lock_as_long_as_for_redis(tmp_path, redis_url):
    """Another worker's transaction may hold the collection file's lock while one of its Redis calls
    waits out an outage: this worker's writes then wait that long too, not SQLite's usual 30 s."""
    from index.storage.redisstate import SQLITE_LOCK_MARGIN, RedisHarvestState

    state = RedisHarvestState(tmp_path / "harvest.sqlite", "patient", redis_url, patience=120.0)
    try:
        waits_ms = state.conn.execute("PRAGMA busy_timeout").fetchone()[0]
    finally:
        state.close()
    assert waits_ms == (120.0 + SQLITE_LOCK_MARGIN) * 1000 > 120.0 * 1000

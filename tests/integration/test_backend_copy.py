"""`strata backend copy --to redis://...` and back: counts checked, and the copy is what the other
backend then works from."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from datetime import UTC, datetime

import httpx
import pytest
from click.testing import CliRunner

from cli import cli
from harvester.jobs.queue import ScheduleEntry, open_queue
from index.cdx.cdxj import iter_index
from index.collection import Collection
from index.state import HarvestState
from index.storage import redisdb
from index.storage.backend import settings_path
from strata.errors import ConfigError
from tests.conftest import harvest
from tests.support.replay_fixtures import StrataServer


def _copy(root, *args):
    return CliRunner().invoke(cli, ["backend", "copy", *args, "--root", str(root)])


def test_copy_to_redis_and_back(root, site, redis_url, monkeypatch):
    harvest(root, site)
    queue = open_queue(root)  # SQLite
    entry, _ = queue.enqueue("sample", "test", "full")
    queue.save_schedule(ScheduleEntry("sample", "test", "daily", datetime(2030, 1, 1, tzinfo=UTC), None, False))
    queue.close()
    db = Collection(root, "sample").db_path
    with HarvestState(db) as state:
        urls = {row["url"]: row for row in state.known_urls()}

    out = _copy(root, "--to", redis_url)
    assert out.exit_code == 0, out.output
    assert "DIFFERENT" not in out.output and out.output.count(" ok") == 7
    assert "Now set STRATA_REDIS=" in out.output
    client = redisdb.connect(redis_url)
    assert {u: json.loads(r) for u, r in client.hgetall(redisdb.urls_key("sample")).items()} == urls
    assert client.zcard(redisdb.cdxj_key("sample")) == len(
        Collection(root, "sample").cdxj_path.read_bytes().splitlines()
    )

    monkeypatch.setenv("STRATA_REDIS", redis_url)  # switched: the root now works from Redis
    queue = open_queue(root)
    assert queue.get(entry.id).status == "queued" and queue.schedule("sample", "test").frequency == "daily"
    assert queue.enqueue("sample", "other")[0].id == entry.id + 1  # ids go on after the copied ones
    queue.close()
    conn = sqlite3.connect(db)  # the file forgets; the next run's digests and URL state come from Redis
    with conn:
        conn.execute("DELETE FROM urls")
        conn.execute("DELETE FROM url_jobs")
        conn.execute("DELETE FROM digests")
    conn.close()
    site.version = 2
    run2 = harvest(root, site)
    assert run2["mode"] == "incremental" and run2["revisits"] > 0

    monkeypatch.delenv("STRATA_REDIS")
    back = _copy(root, "--to", "sqlite", "--from", redis_url)
    assert back.exit_code == 0, back.output
    assert "DIFFERENT" not in back.output and back.output.count(" ok") == 7
    with HarvestState(db) as state:
        again = {row["url"]: row for row in state.known_urls()}
        assert len(again) == client.hlen(redisdb.urls_key("sample")) >= len(urls)
        assert dict(state.digest_rows()).keys() == client.hgetall(redisdb.digests_key("sample")).keys()
    client.close()


def test_bad_targets_are_one_line(root):
    bad = _copy(root, "--to", "http://x/")
    assert isinstance(bad.exception, ConfigError) and "--to: 'http://x/' is not a Redis URL" in str(bad.exception)
    unsaid = _copy(root, "--to", "sqlite")
    assert isinstance(unsaid.exception, ConfigError) and "give --from redis://host:port/db" in str(unsaid.exception)


@pytest.mark.slow
def test_the_collection_is_served_throughout_a_copy_and_the_switch(tmp_path, root, site, redis_url, monkeypatch):
    """A running `strata serve` answers every capture the same while the root is copied to Redis,
    switched to it (its settings file), and copied back and switched back."""
    monkeypatch.delenv("STRATA_REDIS", raising=False)
    run = harvest(root, site)
    coll = Collection(root, "sample")
    paths = [
        f"/sample/{run['snapshot']}id_/{line['url']}"
        for line in iter_index(coll.cdxj_path)
        if not line["url"].startswith("urn:")
    ]
    server = StrataServer(root, tmp_path / "serve.log")
    wrong: list[tuple] = []
    rounds = [0]
    stop = threading.Event()
    try:
        with httpx.Client(timeout=20.0) as http:
            expected = {p: _digest(http, server, p) for p in paths}
            assert sum(status == 200 for status, _ in expected.values()) >= 20

            def poll() -> None:
                with httpx.Client(timeout=20.0) as reader:
                    while not stop.is_set() and rounds[0] < 500:
                        for p in paths:
                            got = _digest(reader, server, p)
                            if got != expected[p]:
                                wrong.append((p, got, expected[p]))
                        rounds[0] += 1

            poller = threading.Thread(target=poll)
            poller.start()
            settings = settings_path(root)
            out = _copy(root, "--to", redis_url)
            assert out.exit_code == 0 and "DIFFERENT" not in out.output, out.output
            settings.parent.mkdir(parents=True, exist_ok=True)
            settings.write_text(f'redis = "{redis_url}"\n')  # switched: replay reads the CDX from Redis now
            seen = rounds[0]
            _wait_rounds(rounds, seen + 2)
            back = _copy(root, "--to", "sqlite", "--from", redis_url)
            assert back.exit_code == 0 and "DIFFERENT" not in back.output, back.output
            settings.unlink()  # and back
            _wait_rounds(rounds, rounds[0] + 2)
            stop.set()
            poller.join(timeout=60)
    finally:
        stop.set()
        server.stop()
    assert rounds[0] >= 4 and wrong == []


def _digest(http, server, path):
    resp = http.get(server.base_url + path)
    return resp.status_code, hashlib.sha256(resp.content).hexdigest()


def _wait_rounds(rounds, at_least, timeout=60.0):
    deadline = time.monotonic() + timeout
    while rounds[0] < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rounds[0] >= at_least

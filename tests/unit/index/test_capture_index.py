"""Where a collection's captures are read from (``index.cdx.capture_index``, ``index.cdx.redis_cdx``), over a
real ``redis-server``: the sorted set on a Redis root, the files when it has no set or is down."""

from __future__ import annotations

import logging
import time

from index.cdx.capture_index import capture_lines, index_parts
from index.cdx.redis_cdx import RedisCdx, shared_cdx
from index.collection import Collection
from index.storage import redisdb

A = b'org,example)/a 20240101000000 {"url": "http://example.org/a", "filename": "one.warc.gz"}'
B = b'org,example)/b 20240101000000 {"url": "http://example.org/b", "filename": "one.warc.gz"}'
B2 = b'org,example)/b 20240201000000 {"url": "http://example.org/b", "filename": "two.warc.gz"}'
C = b'org,example)/c 20240101000000 {"url": "http://example.org/c", "filename": "other.warc.gz"}'
EXACT_B = (b"org,example)/b ", b"org,example)/b!")


def _collection(root, file_lines: list[bytes], other_lines: list[bytes] = ()) -> Collection:
    coll = Collection(root, "c")
    coll.create()
    coll.cdxj_path.write_bytes(b"".join(line + b"\n" for line in file_lines))
    if other_lines:  # an index file Strata did not write (wb-manager's): never in Redis
        (coll.indexes_dir / "autoindex.cdxj").write_bytes(b"".join(line + b"\n" for line in other_lines))
    return coll


def _fill(redis_url: str, lines: list[bytes]) -> None:
    client = redisdb.connect(redis_url)
    client.zadd(redisdb.cdxj_key("c"), {line.decode(): 0 for line in lines})
    client.close()


def test_a_sqlite_root_reads_its_files(tmp_path, monkeypatch):
    monkeypatch.delenv("STRATA_REDIS", raising=False)
    coll = _collection(tmp_path, [A, B], [B2, C])
    assert list(capture_lines(coll, *EXACT_B)) == [B, B2]


def test_a_redis_root_reads_the_set_for_index_cdxj_and_other_files_from_disk(tmp_path, redis_url, monkeypatch):
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    shared_cdx.cache_clear()  # a reader another test left waiting out an outage would read the file
    coll = _collection(tmp_path, [A], [B2, C])  # the file lacks B: only the set has it
    _fill(redis_url, [A, B])
    assert list(capture_lines(coll, *EXACT_B)) == [B, B2]
    assert list(capture_lines(coll, b"org,example)/", b"org,example)0")) == [A, B, B2, C]


def test_no_set_for_the_collection_reads_its_file(tmp_path, redis_url):
    coll = _collection(tmp_path, [A, B])
    redis = RedisCdx(redis_url)
    assert redis.lines("c", *EXACT_B) is None
    assert [list(p.lines(*EXACT_B)) for p in index_parts(coll, redis)] == [[B]]
    redis.close()


def test_a_key_that_is_no_sorted_set_reads_the_file(tmp_path, redis_url):
    coll = _collection(tmp_path, [A, B])
    client = redisdb.connect(redis_url)
    client.set(redisdb.cdxj_key("c"), "not a sorted set")
    client.close()
    redis = RedisCdx(redis_url)
    (part,) = index_parts(coll, redis)
    assert list(part.lines(*EXACT_B)) == [B]
    assert redis.available  # not an outage
    redis.close()


def test_redis_down_reads_the_file_and_tries_again_later(tmp_path, redis_url, redis_server, caplog):
    coll = _collection(tmp_path, [A, B])
    _fill(redis_url, [A, B, B2])
    redis = RedisCdx(redis_url, retry_after=0.3)
    (part,) = index_parts(coll, redis)
    assert list(part.lines(*EXACT_B)) == [B, B2]
    redis_server.stop()
    try:
        with caplog.at_level(logging.WARNING, logger="index.cdx.redis_cdx"):
            assert list(part.lines(*EXACT_B)) == [B]  # the file
            assert not redis.available  # no connection attempt per lookup while it is down
            assert list(part.lines(*EXACT_B)) == [B]
        assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
        assert "replay reads the local index files" in caplog.records[0].message
    finally:
        redis_server.start()
    time.sleep(0.35)  # past retry_after
    assert redis.available
    assert list(part.lines(*EXACT_B)) == [B, B2]  # read from the set again
    redis.close()

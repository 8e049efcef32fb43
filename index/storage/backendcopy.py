"""``strata backend copy``, the collection part: a collection's URL state, job URL sets, digest index,
indexed files and CDX lines, from its SQLite file (and index.cdxj) to the root's Redis, or back.

To Redis, each key is written beside the live one and renamed over it (one atomic RENAME per key),
so readers, pywb among them, see the old set or the new one, never half of one: the collection is
served throughout. Back to SQLite, rows are upserted into the collection's file and Redis's CDX
lines merged into index.cdxj (a merge of lines already there adds nothing). Each direction returns
(what the source holds, what the target holds after) per kind, for the caller to compare.
"""

from __future__ import annotations

import json
from typing import Any

from index.cdx import cdxj
from index.collection import Collection
from index.state import HarvestState, Original
from index.storage import redisdb

BATCH = 2000
Counts = dict[str, tuple[int, int]]


def _swap(client: Any, key: str, fill) -> None:
    """Fill ``<key>:copy`` with ``fill(tmp_key)``, then RENAME it over ``key`` (or delete ``key`` when empty)."""
    tmp = key + ":copy"
    client.delete(tmp)
    fill(tmp)
    if client.exists(tmp):
        client.rename(tmp, key)
    else:
        client.delete(key)


def _hset_all(client: Any, key: str, items: list[tuple[str, str]]) -> None:
    for i in range(0, len(items), BATCH):
        client.hset(key, mapping=dict(items[i : i + BATCH]))


def to_redis(collection: Collection, client: Any) -> Counts:
    name = collection.name
    with HarvestState(collection.db_path) as state:
        urls = [(row["url"], json.dumps(row, ensure_ascii=False)) for row in state.known_urls()]
        pairs = state.url_job_pairs()
        digests = [(d, json.dumps([o.url, o.warc_date, o.record_id, o.warc])) for d, o in state.digest_rows()]
        indexed = [w["filename"] for w in state.warcs("indexed")]
    lines = _file_lines(collection)
    _swap(client, redisdb.urls_key(name), lambda tmp: _hset_all(client, tmp, urls))
    by_job: dict[str, list[str]] = {}
    for job, url in pairs:
        by_job.setdefault(job, []).append(url)
    for stale in client.scan_iter(match=redisdb.job_urls_key(name, "*")):
        if stale.removeprefix(redisdb.job_urls_key(name, "")) not in by_job and not stale.endswith(":copy"):
            client.delete(stale)
    for job, members in by_job.items():
        _swap(client, redisdb.job_urls_key(name, job), lambda tmp, m=members: client.sadd(tmp, *m))
    _swap(client, redisdb.digests_key(name), lambda tmp: _hset_all(client, tmp, digests))
    _swap(client, redisdb.indexed_key(name), lambda tmp: indexed and client.sadd(tmp, *indexed))
    _swap(client, redisdb.cdxj_key(name), lambda tmp: _zadd_lines(client, tmp, lines))
    return {
        "urls": (len(urls), client.hlen(redisdb.urls_key(name))),
        "job URLs": (len(pairs), sum(client.scard(redisdb.job_urls_key(name, j)) for j in by_job)),
        "digests": (len(digests), client.hlen(redisdb.digests_key(name))),
        "indexed files": (len(indexed), client.scard(redisdb.indexed_key(name))),
        "CDX lines": (len(set(lines)), client.zcard(redisdb.cdxj_key(name))),
    }


def _zadd_lines(client: Any, key: str, lines: list[bytes]) -> None:
    for i in range(0, len(lines), BATCH):
        batch = {line.rstrip(b"\r\n").decode("utf-8"): 0 for line in lines[i : i + BATCH]}
        batch.pop("", None)
        if batch:
            client.zadd(key, batch)


def _file_lines(collection: Collection) -> list[bytes]:
    if not collection.cdxj_path.exists():
        return []
    with open(collection.cdxj_path, "rb") as fh:
        return [line for line in fh if line.strip()]


def to_sqlite(collection: Collection, client: Any) -> Counts:
    name = collection.name
    held = client.hgetall(redisdb.urls_key(name))
    digests = client.hgetall(redisdb.digests_key(name))
    indexed = sorted(client.smembers(redisdb.indexed_key(name)))
    jobs = {
        key.removeprefix(redisdb.job_urls_key(name, "")): sorted(client.smembers(key))
        for key in client.scan_iter(match=redisdb.job_urls_key(name, "*"))
        if not key.endswith(":copy")
    }
    lines = [m.encode("utf-8") + b"\n" for m in client.zrangebylex(redisdb.cdxj_key(name), "-", "+")]
    collection.create()
    with HarvestState(collection.db_path) as state:
        columns = set(state.url_columns())
        with state.transaction():
            for raw in held.values():
                row = {k: v for k, v in json.loads(raw).items() if k in columns}
                state.put_url_fields(row)
            for job, urls in jobs.items():
                for url in urls:
                    state.add_url_job(url, job)
            for digest, raw in digests.items():
                state.add_digest(digest, Original(*json.loads(raw)))
            for filename in indexed:
                path = collection.archive_dir / filename
                if path.is_file():
                    state.add_warc(filename, "indexed", path.stat().st_size)
                    state.warc_state(filename, "indexed")
        cdxj.merge_lines(collection.cdxj_path, lines)
        pairs = set(state.url_job_pairs())
        have_digests = {d for d, _ in state.digest_rows()}
        have_indexed = {w["filename"] for w in state.warcs("indexed")}
        counts = {  # what the source holds, and how much of it the target now holds
            "urls": (len(held), sum(1 for url in held if state.url(url) is not None)),
            "job URLs": (
                sum(len(u) for u in jobs.values()),
                sum((j, u) in pairs for j, us in jobs.items() for u in us),
            ),
            "digests": (len(digests), len(have_digests & set(digests))),
            "indexed files": (len(indexed), len(have_indexed & set(indexed))),
        }
    file_lines = set(_file_lines(collection))
    counts["CDX lines"] = (len(lines), len(file_lines & set(lines)))
    return counts

"""Harvest state with the per-URL state and the digest index in the root's Redis (``index.storage.backend``).

``RedisHarvestState`` is ``HarvestState`` (``index.state``, the one owner of harvest.sqlite) whose
URL-state and digest-index questions are answered by Redis, so every worker and every machine of
the root reads the same: what an incremental run rechecks (``job_urls``, ``url``), where a payload
is already held (``lookup_digest``). Every write still goes to the collection's SQLite file too
(write-through): the run's reports, the console's charts and replay's read-only questions keep
their SQL, and ``index.capture.rebuild`` re-derives that file from the WARCs as before; ``strata backend
copy`` fills Redis from it (or the other way).

A digest entry is usable only once its WARC file is in the collection's ``indexed`` set, exactly
as the SQLite index joins on ``warcs.state='indexed'``: a revisit never points at a record a crash
could still take away. Redis calls wait out an outage (``index.storage.redisdb.patiently``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from index.state import HarvestState, Original
from index.storage import redisdb

SQLITE_LOCK_MARGIN = 30.0  # seconds past Redis's patience that a worker waits for SQLite's write lock


def _order(row: dict) -> tuple:
    return (row.get("depth") if row.get("depth") is not None else 1 << 30, row.get("first_seen") or "", row["url"])


CDX_BATCH = 5000


def add_cdxj_lines(client: Any, coll: str, lines: Iterable[bytes], do: Callable[[Callable[[], Any]], Any]) -> int:
    """ZADD CDXJ lines (score 0, ordered by their bytes as pywb's ``zrangebylex`` reads them) in
    batches, each batch one MULTI block; the number of lines given. Adding a line twice is a no-op."""
    key, count = redisdb.cdxj_key(coll), 0
    batches: list[dict[str, int]] = [{}]
    for line in lines:
        member = line.rstrip(b"\r\n").decode("utf-8")
        if member:
            if len(batches[-1]) >= CDX_BATCH:
                batches.append({})
            batches[-1][member] = 0
            count += 1

    def adder(batch: dict[str, int]) -> Callable[[], Any]:
        return lambda: client.zadd(key, batch)

    for batch in batches:
        if batch:
            do(adder(batch))
    return count


class RedisHarvestState(HarvestState):
    def __init__(self, db_path: Path, collection: str, url: str, client: Any = None, patience: float = 300.0):
        super().__init__(db_path)
        self.collection = collection
        self.redis_url = url
        self.r = client if client is not None else redisdb.connect(url)
        self.patience = patience
        # A write transaction here may hold SQLite's lock while a Redis call inside it waits out an
        # outage (up to ``patience``); the other workers on this file then wait for the lock as long
        # as they would for Redis itself, not SQLite's usual 30 s (after which a run failed with
        # "database is locked" while Redis was merely away).
        self.conn.execute(f"PRAGMA busy_timeout={int((patience + SQLITE_LOCK_MARGIN) * 1000)}")
        self.on_wait: Callable[[str], None] | None = None
        self._columns = self.url_columns()
        self._urls = redisdb.urls_key(collection)
        self._digests = redisdb.digests_key(collection)
        self._indexed = redisdb.indexed_key(collection)
        # Rows of the URLs this process holds the lease of (``hold``): no other worker writes them
        # meanwhile, so they are read from Redis once and written without reading back.
        self._held: dict[str, dict] = {}
        self._held_count: dict[str, int] = {}
        # WARC files known to be indexed: a file once indexed stays so (``forget_warc`` drops it).
        self._indexed_here: set[str] = set()

    def close(self) -> None:
        super().close()
        self.r.close()

    def _do(self, call: Callable[[], Any]) -> Any:
        return redisdb.patiently(self.redis_url, call, self.patience, self.on_wait)

    # -- URL state ---------------------------------------------------------------------------------
    def _row(self, raw: str | None) -> dict | None:
        if not raw:
            return None
        return {c: None for c in self._columns} | json.loads(raw)

    def hold(self, url: str) -> None:
        """This process works on ``url`` now (it holds its lease) until ``release``: its row is kept."""
        self._held_count[url] = self._held_count.get(url, 0) + 1

    def release(self, url: str) -> None:
        left = self._held_count.get(url, 0) - 1
        if left > 0:
            self._held_count[url] = left
        else:
            self._held_count.pop(url, None)
            self._held.pop(url, None)

    def url(self, url: str) -> dict | None:
        if url in self._held:
            return dict(self._held[url])
        row = self._row(self._do(lambda: self.r.hget(self._urls, url)))
        # Only a row that exists is kept: the worker that queued the URL may create it (``see_url``)
        # after this one leased it, and a kept "none" would then hide that row from the visit's writes.
        if row is not None and url in self._held_count:
            self._held[url] = dict(row)
        return row

    def _merge(self, url: str, fields: dict, create: bool) -> None:
        """Set ``fields`` on the URL's row in Redis (a row of Nones first when ``create``). One URL is
        written by one worker at a time (it holds the URL's lease), so read-then-write is safe."""
        row = self.url(url)
        if row is None:
            if not create:
                return
            row = {c: None for c in self._columns} | {"checks": 0, "changes": 0, "url": url}
        row.update(fields)
        self._do(lambda: self.r.hset(self._urls, url, json.dumps(row, ensure_ascii=False)))
        if url in self._held_count:
            self._held[url] = row

    def see_url(self, url, host, run_id, at, found_on, depth, link_kind, page_kind=None, job=None) -> bool:
        super().see_url(url, host, run_id, at, found_on, depth, link_kind, page_kind, job)
        row = {c: None for c in self._columns} | {
            "url": url,
            "host": host,
            "first_seen": at,
            "first_run": run_id,
            "found_on": found_on,
            "depth": depth,
            "link_kind": link_kind,
            "page_kind": page_kind,
            "checks": 0,
            "changes": 0,
        }

        def write() -> bool:
            pipe = self.r.pipeline(transaction=True)
            pipe.hsetnx(self._urls, url, json.dumps(row, ensure_ascii=False))
            pipe.sadd(redisdb.job_urls_key(self.collection, job), url)
            return bool(pipe.execute()[0])

        self._held.pop(url, None)  # a held row is read again: this may have created it
        return self._do(write)

    def put_url_fields(self, fields: dict) -> None:
        super().put_url_fields(fields)
        self._merge(fields["url"], {k: v for k, v in fields.items() if k != "url"}, create=True)

    def update_url(self, url: str, **fields) -> None:
        super().update_url(url, **fields)
        self._merge(url, fields, create=False)

    def _all_urls(self) -> list[dict]:
        rows = [self._row(raw) for raw in self._do(lambda: self.r.hvals(self._urls))]
        return sorted((r for r in rows if r), key=_order)

    def known_urls(self) -> Iterator[dict]:
        yield from self._all_urls()

    def job_urls(self, job: str | None) -> Iterator[dict]:
        urls = sorted(self._do(lambda: self.r.smembers(redisdb.job_urls_key(self.collection, job))))
        if not urls:
            return
        raws = self._do(lambda: self.r.hmget(self._urls, urls))
        yield from sorted((r for r in map(self._row, raws) if r), key=_order)

    # -- digest index ------------------------------------------------------------------------------
    def add_digest(self, digest: str, original: Original) -> None:
        super().add_digest(digest, original)
        value = json.dumps([original.url, original.warc_date, original.record_id, original.warc])
        self._do(lambda: self.r.hset(self._digests, digest, value))

    def lookup_digest(self, digest: str, open_warc: str | None = None) -> Original | None:
        """As ``HarvestState.lookup_digest``: an original in an indexed file, or earlier in the file
        the caller is writing."""
        raw = self._do(lambda: self.r.hget(self._digests, digest))
        if not raw:
            return None
        url, warc_date, record_id, warc = json.loads(raw)
        if not warc or (warc != open_warc and not self._is_indexed(warc)):
            return None
        return Original(url, warc_date, record_id, warc)

    def _is_indexed(self, warc: str) -> bool:
        if warc in self._indexed_here:
            return True
        if self._do(lambda: self.r.sismember(self._indexed, warc)):
            self._indexed_here.add(warc)
            return True
        return False

    # -- CDX index pywb reads ----------------------------------------------------------------------
    def cdx_indexed(self, lines: list[bytes]) -> None:
        """Add a sealed file's CDXJ lines to the collection's sorted set (``pywb:<coll>:cdxj``)."""
        add_cdxj_lines(self.r, self.collection, lines, self._do)

    # -- WARC files (which digests are usable) -----------------------------------------------------
    def warc_state(self, filename: str, state: str, size: int | None = None) -> None:
        super().warc_state(filename, state, size)
        if state == "indexed":
            self._do(lambda: self.r.sadd(self._indexed, filename))
        else:
            self._indexed_here.discard(filename)
            self._do(lambda: self.r.srem(self._indexed, filename))

    def put_warc(self, filename: str, run_id: str | None, state: str, size: int) -> None:
        super().put_warc(filename, run_id, state, size)
        self.warc_state(filename, state)

    def forget_warc(self, filename: str) -> None:
        super().forget_warc(filename)
        self._indexed_here.discard(filename)
        self._do(lambda: self.r.srem(self._indexed, filename))

    def forget_records(self, filename: str, good_end: int) -> None:
        """As ``HarvestState.forget_records``, and the same in Redis: digest entries of the lost
        records, and the URL state that pointed at them."""
        lost = set(self.record_ids_from(filename, good_end))
        super().forget_records(filename, good_end)
        if not lost:
            return
        entries = self._do(lambda: self.r.hgetall(self._digests))
        gone = [digest for digest, raw in entries.items() if json.loads(raw)[2] in lost]
        if gone:
            self._do(lambda: self.r.hdel(self._digests, *gone))
        cleared = dict.fromkeys(
            ("digest", "orig_uri", "orig_date", "orig_record_id", "orig_warc", "etag", "last_modified")
        )
        self._held.clear()
        for row in self._all_urls():
            if row.get("orig_record_id") in lost:
                self._merge(row["url"], cleared, create=False)

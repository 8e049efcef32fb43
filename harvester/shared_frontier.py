"""The frontier of a run that several workers share, in Redis: the same interface as
``harvester.frontier.Frontier``, with leases.

Keys, under ``strata:<coll>:run:<run_id>:``:

    seen        set of the URLs queued in the run (a URL is queued once per run, by any worker)
    q:<host>    list of queued items (JSON), embeds first as in the local frontier
    ready       sorted set: hosts with queued items, score = when the next request may start (ms)
    next        hash host -> when the next request may start, for hosts with nothing queued
    delay       hash host -> seconds between request starts (the job's delay, or Crawl-delay)
    inflight    hash host -> items leased out now
    leases      sorted set: lease id -> expiry (ms)
    leased      hash lease id -> "<host>\\t<item JSON>"
    queued      number of items queued
    expired     leases that expired (their URL handed out again), and ``expired_urls`` (set)

Every step is one Lua script, so two workers never take the same item and a host's politeness
(at most ``per_host`` leases at once, request starts ``delay`` apart) holds across all of them. A
worker that dies keeps its leases until they expire; any worker then puts them back (``reclaim``)
and counts them. The run is settled when nothing is queued and nothing is leased.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from harvester.frontier import Item
from index.storage import redisdb
from strata.urls import url_host

_ADD = """
local seen, ready, nxt, queued = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local url, host, item, front = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local max_urls, now = tonumber(ARGV[5]), tonumber(ARGV[6])
if redis.call('SCARD', seen) >= max_urls then return 0 end
if redis.call('SADD', seen, url) == 0 then return 0 end
local q = KEYS[5] .. host
if front == '1' then redis.call('LPUSH', q, item) else redis.call('RPUSH', q, item) end
redis.call('INCR', queued)
if not redis.call('ZSCORE', ready, host) then
  local at = tonumber(redis.call('HGET', nxt, host) or '0')
  if at < now then at = now end
  redis.call('ZADD', ready, at, host)
end
return 1
"""

# Release the leases named in ARGV[FIRST..] (a worker's URLs done): the locals leases, leased and
# inflight are the keys of those names.
_RELEASE = """
for i = FIRST, #ARGV do
  local value = redis.call('HGET', leased, ARGV[i])
  if value then
    redis.call('HDEL', leased, ARGV[i])
    redis.call('ZREM', leases, ARGV[i])
    redis.call('HINCRBY', inflight, string.match(value, '^([^\\t]*)'), -1)
  end
end
"""

_TAKE = (
    """
local ready, nxt, delay, inflight = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local leases, leased, queued, seq = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local now, per_host, default_delay = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local lease_ms, worker = tonumber(ARGV[4]), ARGV[5]
"""
    + _RELEASE.replace("FIRST", "6")
    + """
local hosts = redis.call('ZRANGEBYSCORE', ready, '-inf', now)
for _, host in ipairs(hosts) do
  if tonumber(redis.call('HGET', inflight, host) or '0') < per_host then
    local q = KEYS[9] .. host
    local item = redis.call('LPOP', q)
    if item then
      redis.call('DECR', queued)
      redis.call('HINCRBY', inflight, host, 1)
      local d = tonumber(redis.call('HGET', delay, host) or default_delay)
      local at = now + d
      redis.call('HSET', nxt, host, at)
      if redis.call('LLEN', q) > 0 then redis.call('ZADD', ready, at, host) else redis.call('ZREM', ready, host) end
      local lease = worker .. '|' .. redis.call('INCR', seq)
      redis.call('ZADD', leases, now + lease_ms, lease)
      redis.call('HSET', leased, lease, host .. '\\t' .. item)
      return {lease, item, '', '', ''}
    else
      redis.call('ZREM', ready, host)
    end
  end
end
local first = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
local left, out = redis.call('GET', queued) or '0', redis.call('ZCARD', leases)
return {'', '', first[2] or '', left, out}
"""
)

_DONE = """
local leases, leased, inflight = KEYS[1], KEYS[2], KEYS[3]
""" + _RELEASE.replace("FIRST", "1")

_RECLAIM = """
local leases, leased, inflight, ready = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local nxt, queued, expired, expired_urls = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local now = tonumber(ARGV[1])
local gone = redis.call('ZRANGEBYSCORE', leases, '-inf', now)
for _, lease in ipairs(gone) do
  local value = redis.call('HGET', leased, lease)
  redis.call('ZREM', leases, lease)
  if value then
    redis.call('HDEL', leased, lease)
    local host, item = string.match(value, '^([^\\t]*)\\t(.*)$')
    redis.call('HINCRBY', inflight, host, -1)
    redis.call('LPUSH', KEYS[9] .. host, item)
    redis.call('INCR', queued)
    redis.call('INCR', expired)
    redis.call('SADD', expired_urls, cjson.decode(item)['url'])
    if not redis.call('ZSCORE', ready, host) then
      local at = tonumber(redis.call('HGET', nxt, host) or '0')
      if at < now then at = now end
      redis.call('ZADD', ready, at, host)
    end
  end
end
return #gone
"""


def run_key(coll: str, run_id: str, *parts: str) -> str:
    return redisdb.key(coll, "run", run_id, *parts)


def _ms() -> int:
    return int(time.time() * 1000)


class SharedFrontier:
    """``Frontier``'s interface over Redis (see the module's docstring)."""

    def __init__(
        self,
        client: Any,
        coll: str,
        run_id: str,
        worker: str,
        delay: float,
        per_host: int,
        max_urls: int,
        lease_seconds: float = 120.0,
        poll: float = 0.05,
        do=None,
        per_worker: int = 1 << 30,
    ):
        self.r = client
        self.worker = worker
        self.delay = delay
        self.per_host = max(1, per_host)
        self.per_worker = max(1, per_worker)  # leases this worker holds at once, at most
        self.max_urls = max_urls
        self.lease_ms = int(lease_seconds * 1000)
        self.poll = poll
        self._do = do or (lambda call: call())
        names = ("seen", "ready", "next", "delay", "inflight", "leases", "leased", "queued", "seq", "expired")
        self.keys = {name: run_key(coll, run_id, name) for name in (*names, "expired_urls")}
        self.q_prefix = run_key(coll, run_id, "q") + ":"
        self._add = client.register_script(_ADD)
        self._take = client.register_script(_TAKE)
        self._done = client.register_script(_DONE)
        self._reclaim = client.register_script(_RECLAIM)
        self._lease_of: dict[int, str] = {}
        # Leases done, released with this worker's next take (one round trip for both) or ``flush``.
        self._done_leases: list[str] = []
        # URLs known to be in ``seen``: the set only grows during a run, so a URL once seen (queued
        # here, or answered so by Redis) is never asked again. Nav links repeat on every page.
        self._seen_here: set[str] = set()
        self._stopping = False
        self.handed_out = 0
        # Expired leases are looked for now and then, not on every hand-out; a lease released here
        # wakes this worker's own waiters at once (others' releases are seen at the next poll).
        self._reclaim_every = min(1.0, max(0.25, lease_seconds / 4))
        self._last_reclaim = -1e9
        self._wake: asyncio.Event | None = None

    # -- as Frontier -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self._do(lambda: self.r.get(self.keys["queued"])) or 0)

    @property
    def in_flight(self) -> int:
        return int(self._do(lambda: self.r.zcard(self.keys["leases"])))

    def seen(self, url: str) -> bool:
        if url in self._seen_here:
            return True
        if self._do(lambda: self.r.sismember(self.keys["seen"], url)):
            self._seen_here.add(url)
            return True
        return False

    def add_seen(self, url: str) -> None:
        if url not in self._seen_here:
            self._do(lambda: self.r.sadd(self.keys["seen"], url))
            self._seen_here.add(url)

    def add(self, item: Item) -> bool:
        if self._stopping:
            return False
        item.host = item.host or url_host(item.url)
        value = json.dumps(
            {"url": item.url, "depth": item.depth, "kind": item.kind, "via": item.via, "host": item.host}
        )
        k = self.keys
        added = self._do(
            lambda: self._add(
                keys=[k["seen"], k["ready"], k["next"], k["queued"], self.q_prefix],
                args=[item.url, item.host, value, "1" if item.kind == "embed" else "0", self.max_urls, _ms()],
            )
        )
        if added:
            self._seen_here.add(item.url)
            if self._wake is not None:
                self._wake.set()
        return bool(added)

    async def get(self) -> Item | None:
        k = self.keys
        keys = [k["ready"], k["next"], k["delay"], k["inflight"], k["leases"], k["leased"], k["queued"], k["seq"]]
        args = [self.per_host, int(self.delay * 1000), self.lease_ms, self.worker]
        if self._wake is None:
            self._wake = asyncio.Event()
        while not self._stopping:
            if len(self._lease_of) >= self.per_worker:
                # A URL in hand waiting for this worker's connection would hold its host's lease from
                # the other workers: this worker leases no more than it has connections.
                self._wake.clear()
                await self._wake.wait()
                continue
            now = _ms()
            if now - self._last_reclaim >= self._reclaim_every * 1000:
                self._last_reclaim = now
                self.reclaim(now)
            done, self._done_leases = self._done_leases, []
            try:
                lease, value, next_at, queued, leased = self._do(
                    lambda now=now, done=done: self._take(keys=[*keys, self.q_prefix], args=[now, *args, *done])
                )
            except BaseException:
                self._done_leases = done + self._done_leases  # not released: the next call does
                raise
            if lease:
                d = json.loads(value)
                item = Item(d["url"], d["depth"], d["kind"], d.get("via"), d.get("host") or "")
                self._lease_of[id(item)] = lease
                self.handed_out += 1
                return item
            if int(queued or 0) <= 0 and int(leased or 0) == 0:
                return None  # settled: nothing queued, nothing leased, by anyone
            wait = self.poll
            if next_at and float(next_at) > now:  # a host rests (its delay): wake when it may be asked again
                wait = min(max((float(next_at) - now) / 1000.0, 0.002), self.poll * 4)
            self._wake.clear()
            try:
                async with asyncio.timeout(wait):
                    await self._wake.wait()
            except TimeoutError:
                pass
        return None

    async def done(self, item: Item) -> None:
        """The item's lease is released with this worker's next ``get`` (the harvest's loop asks for
        the next URL at once), or by ``flush`` when the worker stops asking."""
        lease = self._lease_of.pop(id(item), None)
        if lease is None:
            return
        self._done_leases.append(lease)
        if self._wake is not None:
            self._wake.set()

    def flush(self) -> None:
        """Release the leases done and not yet released (the worker asks for no more URLs)."""
        if not self._done_leases:
            return
        k, done = self.keys, list(self._done_leases)
        self._do(lambda: self._done(keys=[k["leases"], k["leased"], k["inflight"]], args=done))
        del self._done_leases[: len(done)]

    def set_host_delay(self, host: str, seconds: float, since: float | None = None) -> None:
        """A host's own delay (Crawl-delay), for every worker: request starts to it spaced by ``seconds``."""
        if seconds <= self.delay:
            return
        k = self.keys
        first = _ms() + int(seconds * 1000)

        def write() -> None:
            pipe = self.r.pipeline(transaction=True)
            pipe.hset(k["delay"], host, int(seconds * 1000))
            pipe.execute()
            if float(self.r.hget(k["next"], host) or 0) < first:
                self.r.hset(k["next"], host, first)
            score = self.r.zscore(k["ready"], host)
            if score is not None and score < first:
                self.r.zadd(k["ready"], {host: first}, xx=True)

        self._do(write)

    def paced(self, host: str) -> bool:
        return False  # spacing is in the hand-out itself (the ``ready`` scores), for all workers at once

    async def pace(self, host: str) -> None:
        return None

    async def stop(self) -> None:
        self._stopping = True
        self.flush()
        if self._wake is not None:
            self._wake.set()

    # -- shared state ------------------------------------------------------------------------------
    def reclaim(self, now: int | None = None) -> int:
        """Put the items of expired leases back (a dead worker's); how many."""
        k = self.keys
        return int(
            self._do(
                lambda: self._reclaim(
                    keys=[
                        k["leases"],
                        k["leased"],
                        k["inflight"],
                        k["ready"],
                        k["next"],
                        k["queued"],
                        k["expired"],
                        k["expired_urls"],
                        self.q_prefix,
                    ],
                    args=[now or _ms()],
                )
            )
        )

    def settled(self) -> bool:
        """Nothing queued and nothing leased: the run's URLs are all done."""
        k = self.keys

        def read() -> bool:
            pipe = self.r.pipeline(transaction=False)
            pipe.get(k["queued"])
            pipe.zcard(k["leases"])
            queued, leased = pipe.execute()
            return int(queued or 0) == 0 and int(leased) == 0

        return self._do(read)

    def expired(self) -> tuple[int, list[str]]:
        """(leases that expired, the URLs handed out again because of them)."""
        k = self.keys
        return int(self.r.get(k["expired"]) or 0), sorted(self.r.smembers(k["expired_urls"]))

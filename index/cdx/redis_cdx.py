"""Reading a collection's CDXJ lines from the root's Redis (``pywb:<coll>:cdxj``), for replay.

On a root that uses Redis (``index.storage.backend``) every sealed file's lines go to the collection's
``indexes/index.cdxj`` and then to its sorted set (``index.capture.seal``), so the set holds what the file
holds and every replay server sees a new run as soon as its files are sealed, whatever its view of
a shared file system. ``RedisCdx.lines`` answers one key range from the set (``ZRANGEBYLEX``, as
pywb's ``RedisIndexSource`` reads it) or ``None`` when the caller must read the file instead:

- the set does not exist: a collection whose state was never copied (``strata backend copy``
  fills it; ``strata import`` and ``strata index rebuild`` do too);
- the key is not a sorted set (a Redis error other than an outage): the same, with a log line;
- Redis cannot be reached: replay keeps serving from the file, which holds every line Redis holds
  (it is written first). Redis is tried again ``retry_after`` seconds later, not on every lookup,
  so an outage costs one connection timeout, not one per request. Each change of state is logged
  once.

The key test and the range read go in one pipeline: one round trip per lookup.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import Any

import valkey
import valkey.exceptions

from index.storage import redisdb

log = logging.getLogger(__name__)

RETRY_AFTER = 5.0  # seconds of reading the files after Redis failed, before trying it again
CONNECT_TIMEOUT = 1.0
READ_TIMEOUT = 2.0


class RedisCdx:
    """The CDX sorted sets of one Redis database, read with a fallback signal (``None``)."""

    def __init__(self, url: str, client: Any = None, retry_after: float = RETRY_AFTER):
        self.url = url
        # bytes in and out: CDXJ lines go to pywb's parsers and binary-search comparisons as bytes
        self.client = client or valkey.Valkey.from_url(
            url, socket_timeout=READ_TIMEOUT, socket_connect_timeout=CONNECT_TIMEOUT
        )
        self.retry_after = retry_after
        self._down_until = 0.0
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        """False while an outage is being waited out (lookups read the files)."""
        return time.monotonic() >= self._down_until

    def lines(self, coll: str, key: bytes, end_key: bytes) -> list[bytes] | None:
        """The set's lines ``key <= line < end_key`` (pywb's range), in order; ``None``: read the
        collection's ``index.cdxj`` instead (no set for it, or Redis unreachable)."""
        if not self.available:
            return None
        zkey = redisdb.cdxj_key(coll)
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.exists(zkey)
            pipe.zrangebylex(zkey, b"[" + key, b"(" + end_key)
            exists, found = pipe.execute()
        except redisdb.unavailable_errors() as exc:
            self._went_down(exc)
            return None
        except valkey.exceptions.ValkeyError as exc:  # e.g. WRONGTYPE: the key holds something else
            log.warning("Redis key %s cannot be read as CDX (%s); replay reads %s's index files", zkey, exc, coll)
            return None
        self._came_back()
        return list(found) if exists else None

    def _went_down(self, exc: BaseException) -> None:
        with self._lock:
            first = self._down_until == 0.0
            self._down_until = time.monotonic() + self.retry_after
        if first:
            log.warning(
                "Redis at %s cannot be reached (%s); replay reads the local index files until it answers",
                redisdb.shown(self.url),
                exc,
            )

    def _came_back(self) -> None:
        if self._down_until:
            with self._lock:
                self._down_until = 0.0
            log.warning("Redis at %s answers again; replay reads the CDX from it", redisdb.shown(self.url))

    def close(self) -> None:
        self.client.close()


@functools.lru_cache(maxsize=16)
def shared_cdx(redis_url: str) -> RedisCdx:
    """One reader (one connection pool) per Redis URL in this process, built on first use."""
    return RedisCdx(redis_url)

"""The Redis database of a root that uses one (``index.storage.backend``): the client and the key layout.

Every key Strata writes starts with ``strata:`` except the CDX index, which takes the name an
unmodified pywb is pointed at (``index: redis://host:port/db/pywb:<coll>:cdxj`` in its config):

    strata:queue:seq                INCR: the next queue entry id
    strata:queue:ids                sorted set of entry ids (score = id)
    strata:queue:entry:<id>         JSON of one queue entry (the SQLite row's fields)
    strata:queue:lock               held around every queue change (the SQLite BEGIN IMMEDIATE)
    strata:schedule                 hash "<collection>\\t<job>" -> JSON schedule entry
    strata:<coll>:urls              hash URL -> JSON of its state row (``index.state`` ``urls``)
    strata:<coll>:jobs:<job>        set of the URLs a job queued ('' for --seed runs)
    strata:<coll>:digests           hash payload digest -> JSON original (the dedup index)
    strata:<coll>:indexed           set of WARC files sealed and indexed (a digest is usable once
                                    its file is here)
    pywb:<coll>:cdxj                sorted set of CDXJ lines, score 0 (pywb's RedisIndexSource)
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from strata.errors import BackendUnavailable

T = TypeVar("T")
PREFIX = "strata"


@functools.cache
def unavailable_errors() -> tuple[type[Exception], ...]:
    """What a lost connection, a refused one or a Redis still loading its data raises. A function,
    so that a root on SQLite never imports the client (valkey: 35 ms of every harvest's start):
    an ``except`` clause calls it only when something is raised."""
    import valkey.exceptions

    return (valkey.exceptions.ConnectionError, valkey.exceptions.TimeoutError, valkey.exceptions.BusyLoadingError)


def connect(url: str, check: bool = True) -> Any:
    """A client for ``url`` (strings in and out). With ``check``, one PING now: an unreachable
    Redis is a ``BackendUnavailable`` saying where it was looked for."""
    import valkey

    client = valkey.Valkey.from_url(
        url, decode_responses=True, socket_timeout=10.0, socket_connect_timeout=3.0, health_check_interval=15
    )
    if check:
        try:
            client.ping()
        except unavailable_errors() as exc:
            client.close()
            raise unavailable(url, exc) from None
    return client


def shown(url: str) -> str:
    """A Redis URL without its password, as messages show it."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.split('@')[-1]}" if sep else url


def unavailable(url: str, exc: BaseException) -> BackendUnavailable:
    where = shown(url)
    return BackendUnavailable(f"Redis at {where} cannot be reached ({exc}); start it, or check STRATA_REDIS")


def key(*parts: str) -> str:
    return ":".join((PREFIX, *parts))


def urls_key(coll: str) -> str:
    return key(coll, "urls")


def job_urls_key(coll: str, job: str | None) -> str:
    return key(coll, "jobs", job or "")


def digests_key(coll: str) -> str:
    return key(coll, "digests")


def indexed_key(coll: str) -> str:
    return key(coll, "indexed")


def cdxj_key(coll: str) -> str:
    """The sorted set pywb reads a collection's CDXJ lines from."""
    return f"pywb:{coll}:cdxj"


def patiently(
    url: str, call: Callable[[], T], patience: float = 300.0, on_wait: Callable[[str], None] | None = None
) -> T:
    """``call()``, retried with backoff (0.2 s doubling to 5 s) while Redis is unreachable, for up to
    ``patience`` seconds; then ``BackendUnavailable``. ``on_wait`` hears each wait (a worker's log,
    its progress). A write that failed is sent again whole: every write Strata makes to Redis is a
    single command or a MULTI block, so none is left half done."""
    delay, waited = 0.2, 0.0
    while True:
        try:
            return call()
        except unavailable_errors() as exc:
            if waited >= patience:
                raise unavailable(url, exc) from None
            if on_wait is not None:
                on_wait(f"Redis at {shown(url)} cannot be reached ({exc}); waiting, next try in {delay:.1f} s")
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, 5.0)


class Guarded:
    """A client whose every command raises ``BackendUnavailable`` (one clear line) instead of the
    client's connection errors: for callers that report and go on (the console, the worker loop)."""

    def __init__(self, client: Any, url: str):
        self._client = client
        self._url = url

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            try:
                return attr(*args, **kwargs)
            except unavailable_errors() as exc:
                raise unavailable(self._url, exc) from None

        return call

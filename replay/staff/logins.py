"""Login attempts: where their password hash runs, and how fast one client or one account may try.

A password check is one scrypt (``replay.staff.users``: ~0.2 s of CPU and 32 MiB). ``strata serve``
runs every request on one gevent loop, so a check run in the loop stops every reader for as long:
a flood of four clients raised replay's median from 3 ms to 315 ms. Here:

- **Off the loop** (``HashRunner``): the hash runs in a thread of its own (``hashlib.scrypt``
  releases the GIL), one at a time, so a flood takes at most one core; at most ``MAX_WAITING``
  attempts wait for it, any more are answered at once ("busy", 503) without hashing.
- **Per client address** (``LoginThrottle``): after ``CLIENT_FAILURES`` failures within ``WINDOW``
  seconds, that address is answered 429 (with ``Retry-After``) until its oldest failure leaves the
  window. Only that address: a stranger locks out nobody but themself.
- **Per account**: failures on an account, from anywhere, slow its next attempts down, never lock
  them: after ``ACCOUNT_FREE`` failures within the window, each attempt waits ``2 ** (n - free)``
  seconds (at most ``MAX_DELAY``) before its password is checked, outside the loop too. Guessing
  one account from many addresses is slowed; its owner waits seconds at worst.

The counts are kept in memory, per server process (a restart forgets them).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from strata.errors import StrataError

WINDOW = 15 * 60
CLIENT_FAILURES = 10
ACCOUNT_FREE = 5
MAX_DELAY = 8.0
MAX_WAITING = 8


class TooManyAttempts(StrataError):
    """This client failed too often: answered 429 until ``retry_after`` seconds have passed."""

    http_status = 429

    def __init__(self, retry_after: int):
        super().__init__(f"Too many failed logins from this address; try again in {retry_after} seconds.")
        self.retry_after = retry_after


class Busy(StrataError):
    """Too many logins are being checked at once."""

    http_status = 503


class LoginThrottle:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._clients: dict[str, deque[float]] = {}
        self._accounts: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, table: dict[str, deque[float]], key: str) -> deque[float]:
        times = table.get(key)
        if times is None:
            return deque()
        cutoff = self.clock() - WINDOW
        while times and times[0] <= cutoff:
            times.popleft()
        if not times:
            del table[key]
        return times

    def check_client(self, client: str) -> None:
        """Raise ``TooManyAttempts`` when ``client`` may not try now."""
        with self._lock:
            times = self._recent(self._clients, client)
            if len(times) >= CLIENT_FAILURES:
                raise TooManyAttempts(max(1, int(times[0] + WINDOW - self.clock()) + 1))

    def account_delay(self, name: str) -> float:
        """Seconds an attempt on ``name`` waits before its password is checked."""
        with self._lock:
            extra = len(self._recent(self._accounts, name)) - ACCOUNT_FREE
        return 0.0 if extra < 0 else min(MAX_DELAY, float(2**extra))

    def failed(self, client: str, name: str) -> None:
        now = self.clock()
        with self._lock:
            for table, key in ((self._clients, client), (self._accounts, name)):
                times = table.setdefault(key, deque())
                times.append(now)
                while len(times) > 1000:  # bounded memory whatever a flood sends
                    times.popleft()
            while len(self._clients) > 100_000:
                self._clients.pop(next(iter(self._clients)))

    def succeeded(self, client: str, name: str) -> None:
        with self._lock:
            self._clients.pop(client, None)


class HashRunner:
    """Runs a password check in one worker thread, outside the server's gevent loop."""

    def __init__(self):
        self._pool: Any = None
        self._waiting = 0

    def run(self, fn: Callable[..., Any], *args: Any, delay: float = 0.0) -> Any:
        import gevent
        from gevent.threadpool import ThreadPool

        if self._waiting >= MAX_WAITING:
            raise Busy("Too many logins are being checked right now; try again in a moment.")
        self._waiting += 1
        try:
            if delay:
                gevent.sleep(delay)
            if self._pool is None:
                self._pool = ThreadPool(1)
            return self._pool.apply(fn, args)
        finally:
            self._waiting -= 1

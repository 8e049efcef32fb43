"""Politeness where a request leaves: requests to one host are sent at least ``interval`` seconds
apart, counted from the moment the previous one was actually sent, not from when it was planned.

The frontier hands URLs out spaced by the host's delay (``harvester.frontier``), but a URL handed
out is sent later, after its robots check, its state lookup, a wait for a connection, and, in a run
with a fetch process, a pipe and the other process's turn; on a loaded machine a wake-up comes late.
Counted from the plan, two requests could leave closer together than the delay (0.87 s apart under
``Crawl-delay: 1`` was seen). So the process that sends a request first passes its host's gate: it
waits until ``interval`` after the last request that process sent to the host, and the moment the
gate opens, just before the request is written, is that host's last send.

- ``HostGate``: one process's (the fetch process's, or the harvest's when it fetches itself), on
  the monotonic clock;
- ``harvester.shared_frontier.SharedFrontier.before_send``: across the workers of a shared run, the
  same rule over Redis (its clock), claimed by each worker just before it sends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class HostGate:
    """Per host: the moment the last request was sent, and a lock so that two waiting for one host
    go one after the other."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._last: dict[str, float] = {}
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}  # while someone waits: lock, users

    async def open(self, host: str, interval: float) -> float:
        """Wait for ``host``'s turn, then take it: the moment the request may be sent (now)."""
        now = self.clock()
        if interval <= 0 or (host not in self._locks and now >= self._last.get(host, now - interval) + interval):
            self._last[host] = now
            return now
        lock, users = self._locks.setdefault(host, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                while True:
                    now = self.clock()
                    ready = self._last.get(host, now - interval) + interval
                    if now >= ready:
                        self._last[host] = now
                        return now
                    await asyncio.sleep(ready - now)
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[host]  # a broad crawl keeps no lock per host it ever met


__all__ = ["HostGate"]

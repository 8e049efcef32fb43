"""The frontier: URLs waiting to be fetched in this run, per host, with politeness.

Each host gets at most ``per_host`` fetches at once and request starts at least ``delay`` seconds
apart. ``get()`` hands out the next URL whose host is ready, waits when every host is resting, and
returns ``None`` once nothing is queued or in flight (or the run is stopping).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import time

from strata.urls import url_host


@dataclasses.dataclass
class Item:
    url: str
    depth: int
    kind: str                  # seed | navigation | embed | refresh | redirect | recheck | robots
    via: str | None = None
    host: str = ""


class Frontier:
    def __init__(self, delay: float, per_host: int, max_urls: int):
        self.delay = delay
        self.per_host = max(per_host, 1)
        self.max_urls = max_urls
        self._queues: dict[str, collections.deque[Item]] = {}
        self._in_flight: dict[str, int] = collections.defaultdict(int)
        self._next_start: dict[str, float] = collections.defaultdict(float)
        self._seen: set[str] = set()
        self._cond = asyncio.Condition()
        self._stopping = False
        self.handed_out = 0

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues.values())

    @property
    def in_flight(self) -> int:
        return sum(self._in_flight.values())

    def seen(self, url: str) -> bool:
        return url in self._seen

    def add_seen(self, url: str) -> None:
        """Mark ``url`` as dealt with in this run without fetching it."""
        self._seen.add(url)

    def add(self, item: Item) -> bool:
        """Queue ``item`` unless its URL was queued before in this run or the URL budget is spent."""
        if item.url in self._seen or self._stopping:
            return False
        if len(self._seen) >= self.max_urls:
            return False
        self._seen.add(item.url)
        item.host = item.host or url_host(item.url)
        queue = self._queues.setdefault(item.host, collections.deque())
        if item.kind == "embed":
            queue.appendleft(item)   # a page's resources before more pages: snapshots complete early
        else:
            queue.append(item)
        self._notify()
        return True

    def _notify(self) -> None:
        async def wake():
            async with self._cond:
                self._cond.notify_all()

        try:
            asyncio.get_running_loop().create_task(wake())
        except RuntimeError:
            pass

    async def get(self) -> Item | None:
        async with self._cond:
            while True:
                if self._stopping:
                    return None
                now = time.monotonic()
                wait = None
                for host, queue in self._queues.items():
                    if not queue or self._in_flight[host] >= self.per_host:
                        continue
                    ready_at = self._next_start[host]
                    if ready_at <= now:
                        item = queue.popleft()
                        self._in_flight[host] += 1
                        self._next_start[host] = now + self.delay
                        self.handed_out += 1
                        return item
                    wait = ready_at - now if wait is None else min(wait, ready_at - now)
                if wait is None and not any(self._queues.values()) and self.in_flight == 0:
                    return None
                # Not asyncio.wait_for: it runs cond.wait() as a task of its own, and when that task is
                # cancelled (a timeout, a stop) it may take the lock back after wait_for has given up:
                # the lock then belongs to nobody who will release it, and every worker hangs on it.
                try:
                    async with asyncio.timeout(wait if wait is not None else 1.0):
                        await self._cond.wait()
                except TimeoutError:
                    pass

    async def done(self, item: Item) -> None:
        async with self._cond:
            self._in_flight[item.host] -= 1
            self._cond.notify_all()

    async def stop(self) -> None:
        async with self._cond:
            self._stopping = True
            self._cond.notify_all()

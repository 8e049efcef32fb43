"""The frontier: URLs waiting to be fetched in this run, per host, with politeness.

Each host gets at most ``per_host`` fetches at once and request starts at least ``delay`` seconds
apart. ``get()`` hands out the next URL whose host is ready, waits when every host is resting, and
returns ``None`` once nothing is queued or in flight (or the run is stopping).

A host whose robots.txt asks for a longer ``Crawl-delay`` gets its own delay (``set_host_delay``).
That is learnt only once the first URLs of the host may already be handed out, so for such a host
hand-outs are spaced by its delay and each fetch also waits for its turn (``pace``), counted from
the robots.txt request itself. Hosts without one never reach ``pace``: the per-request path is
unchanged for them. Whatever the frontier plans, the process that sends a request spaces it from
the previous one actually sent to the host (``harvester.hostgate``).
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
    kind: str  # seed | navigation | embed | refresh | redirect | recheck | robots
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
        self._host_delay: dict[str, float] = {}  # hosts that asked for more than `delay`
        self._next_fetch: dict[str, float] = {}  # their next request start
        self._seen: set[str] = set()
        self._cond = asyncio.Condition()
        self._stopping = False
        self._wake_pending = False
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
            queue.appendleft(item)  # a page's resources before more pages: snapshots complete early
        else:
            queue.append(item)
        self._notify()
        return True

    def _notify(self) -> None:
        # One wake-up for all the URLs queued before it runs (a page queues dozens at once), not a
        # task, a lock round and every worker woken per URL.
        if self._wake_pending:
            return
        try:
            asyncio.get_running_loop().create_task(self._wake())
        except RuntimeError:
            return
        self._wake_pending = True

    async def _wake(self) -> None:
        self._wake_pending = False  # a URL queued from here on asks for a wake-up of its own
        async with self._cond:
            self._cond.notify_all()

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
                        self._next_start[host] = now + self._host_delay.get(host, self.delay)
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

    def set_host_delay(self, host: str, seconds: float, since: float | None = None) -> None:
        """Space request starts to ``host`` by ``seconds`` (when more than ``delay``), the first one
        ``seconds`` after ``since`` (a ``time.monotonic()`` of the last request to it; default now)."""
        if seconds <= self.delay:
            return
        first = (time.monotonic() if since is None else since) + seconds
        self._host_delay[host] = seconds
        self._next_fetch[host] = max(self._next_fetch.get(host, 0.0), first)
        self._next_start[host] = max(self._next_start[host], first)

    def paced(self, host: str) -> bool:
        """Whether fetches from ``host`` must wait for their turn (``pace``)."""
        return host in self._host_delay

    async def pace(self, host: str) -> None:
        """Wait for this fetch's turn on a host with a delay of its own, and book the next turn: from
        when this one goes on (a late wake-up moves it), not from when it was planned. The exact
        spacing is the sending process's ``harvester.hostgate``; this keeps workers from queueing there."""
        now = time.monotonic()
        start = max(now, self._next_fetch[host])
        self._next_fetch[host] = start + self._host_delay[host]
        if start > now:
            await asyncio.sleep(start - now)
            self._next_fetch[host] = max(self._next_fetch[host], time.monotonic() + self._host_delay[host])

    def interval(self, host: str) -> float:
        """Seconds between requests to ``host``: its own delay (Crawl-delay), else the job's."""
        return self._host_delay.get(host, self.delay)

    async def before_send(self, host: str) -> None:
        """Nothing here: in one process the sending process's gate spaces the requests
        (``harvester.hostgate``); a shared run's frontier claims the host in Redis."""

    async def done(self, item: Item) -> None:
        async with self._cond:
            self._in_flight[item.host] -= 1
            self._cond.notify_all()

    async def stop(self) -> None:
        async with self._cond:
            self._stopping = True
            self._cond.notify_all()

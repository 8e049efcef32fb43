"""Politeness where a request leaves: requests to one host are sent at least ``interval`` seconds
apart, counted from the moment the previous one was actually written to its connection, not from
when it was planned.

The frontier hands URLs out spaced by the host's delay (``harvester.frontier``), but a URL handed
out is sent later, after its robots check, its state lookup, a wait for a connection, and, in a run
with a fetch process, a pipe and the other process's turn; on a loaded machine a wake-up comes late.
Counted from the plan, two requests could leave closer together than the delay (0.87 s apart under
``Crawl-delay: 1`` was seen). Counted from the moment the gate opened, a connection that took long
to make shortened the next gap by as much (0.96 s was seen). So the process that sends a request
first takes its host's turn (``HostGate.turn``): it waits until ``interval`` after the last request
that process wrote to the host, holds the host while its connection is made, and the moment the
request is written (``sent()``, called by the fetch just before it writes) is that host's last send.

- ``HostGate``: one process's (the fetch process's, or the harvest's when it fetches itself), on
  the monotonic clock;
- ``harvester.shared_frontier.SharedFrontier.before_send``: across the workers of a shared run, the
  same rule over Redis (its clock), claimed by each worker just before it sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

#: Called by a fetch the moment it writes its request (``HostGate.turn``).
Sent = Callable[[], None]


def _nothing() -> None:
    pass


class HostGate:
    """Per host: the moment the last request was written, and a lock so that requests to one host
    go one after the other, each holding it from its turn until it is written."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._last: dict[str, float] = {}
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}  # while someone holds or waits: lock, users

    @contextlib.asynccontextmanager
    async def turn(self, host: str, interval: float) -> AsyncIterator[Sent]:
        """Wait for ``host``'s turn and take it: inside, the request may be sent; call the ``sent``
        this yields the moment it is written (that moment is the host's last send, and the next
        request's wait starts then). A turn that ends without ``sent`` (its connection failed)
        counts from its end. ``interval`` <= 0: no wait, nothing held."""
        if interval <= 0:
            yield _nothing
            return
        lock, users = self._locks.setdefault(host, (asyncio.Lock(), [0]))
        users[0] += 1
        held = False

        def sent() -> None:
            nonlocal held
            if held:
                self._last[host] = self.clock()
                held = False
                lock.release()

        try:
            await lock.acquire()
            try:
                while (wait := self._last.get(host, -interval) + interval - self.clock()) > 0:
                    await asyncio.sleep(wait)
            except BaseException:  # cancelled while waiting: nothing was sent
                lock.release()
                raise
            held = True
            yield sent
        finally:
            sent()  # taken, not written (the connection failed): counted from now
            users[0] -= 1
            if not users[0]:
                del self._locks[host]  # a broad crawl keeps no lock per host it ever met


__all__ = ["HostGate", "Sent"]

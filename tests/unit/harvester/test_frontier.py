"""The frontier under cancellation: a worker cancelled while it waits must not take the lock with it."""

from __future__ import annotations

import asyncio
import random

from harvester.frontier import Frontier, Item


def test_workers_cancelled_while_waiting_leave_the_frontier_usable():
    async def go() -> int:
        rng = random.Random(7)
        frontier = Frontier(delay=0.002, per_host=1, max_urls=10_000)
        for i in range(400):
            frontier.add(Item(f"http://h{i % 3}.example/{i}", 0, "navigation"))
        fetched = 0

        async def worker() -> None:
            nonlocal fetched
            while True:
                item = await frontier.get()
                if item is None:
                    return
                try:
                    await asyncio.sleep(rng.random() * 0.002)
                    fetched += 1
                finally:
                    await frontier.done(item)

        # Workers waiting for a host's delay sit in the frontier's condition; cancel some of them
        # there, again and again, as a stopping harvest does, and start fresh ones.
        tasks = [asyncio.create_task(worker()) for _ in range(6)]
        for _ in range(60):
            await asyncio.sleep(rng.random() * 0.003)
            victim = rng.choice(tasks)
            victim.cancel()
            tasks.remove(victim)
            tasks.append(asyncio.create_task(worker()))
        async with asyncio.timeout(20):
            results = await asyncio.gather(*tasks, return_exceptions=True)
        assert not [r for r in results if isinstance(r, BaseException)]
        return fetched

    fetched = asyncio.run(go())
    assert fetched >= 400 - 60  # each cancelled worker may lose the item it held

"""The shared frontier in a real Redis: one URL once per run, per-host limits across workers, leases."""

from __future__ import annotations

import asyncio
import time

from harvester.frontier import Item
from harvester.shared_frontier import SharedFrontier
from index.storage import redisdb


def _pair(redis_url, **kw):
    client = redisdb.connect(redis_url)
    opts = {"delay": 0.0, "per_host": 1, "max_urls": 100, **kw}
    return client, SharedFrontier(client, "c", "r1", "w1", **opts), SharedFrontier(client, "c", "r1", "w2", **opts)


def test_two_workers_share_one_queue_and_one_host_limit(redis_url):
    client, a, b = _pair(redis_url)
    for i in range(3):
        assert a.add(Item(f"http://one.test/{i}", 1, "navigation"))
    assert not b.add(Item("http://one.test/0", 1, "navigation"))  # queued once per run, whoever queues it
    assert b.add(Item("http://two.test/x", 1, "embed"))
    assert len(a) == 4 and b.seen("http://one.test/2")

    async def take():
        first = await a.get()
        second = await b.get()  # one.test has its one lease out: b gets two.test
        return first, second

    first, second = asyncio.run(take())
    assert {first.host, second.host} == {"one.test", "two.test"} and a.in_flight == 2

    async def blocked():
        # the host with items queued is busy with first's lease: nothing for b until it is done
        host_busy = next(i for i in (first, second) if i.host == "one.test")
        owner = a if host_busy is first else b
        waiter = asyncio.create_task(b.get())
        await asyncio.sleep(0.2)
        assert not waiter.done()
        await owner.done(host_busy)
        owner.flush()  # the owner's next take would release it too
        return await asyncio.wait_for(waiter, 2)

    third = asyncio.run(blocked())
    assert third.host == "one.test"
    client.close()


def test_request_starts_are_spaced_across_workers(redis_url):
    client, a, b = _pair(redis_url, delay=0.3, per_host=4)
    for i in range(3):
        a.add(Item(f"http://one.test/{i}", 1, "navigation"))

    async def take():
        times = []
        for frontier in (a, b, a):
            await frontier.get()
            times.append(time.monotonic())
        return times

    times = asyncio.run(take())
    # each gap may be short by the time a get took to return after its grant (see below)
    assert times[1] - times[0] >= 0.24 and times[2] - times[1] >= 0.24
    assert times[2] - times[0] >= 0.55
    client.close()


def test_an_expired_lease_comes_back_counted_and_the_run_settles(redis_url):
    client, a, b = _pair(redis_url, lease_seconds=0.3)
    a.add(Item("http://one.test/a", 1, "navigation"))

    async def go():
        lost = await a.get()  # "a" dies holding it
        assert not b.settled()
        again = await asyncio.wait_for(b.get(), 3)
        assert again.url == lost.url
        await b.done(again)
        await a.done(lost)  # too late: the lease was reclaimed; nothing is counted twice
        return await asyncio.wait_for(b.get(), 2)

    assert asyncio.run(go()) is None
    assert b.settled() and b.expired() == (1, ["http://one.test/a"])
    client.close()


def test_a_crawl_delay_learnt_by_one_worker_paces_the_others(redis_url):
    client, a, b = _pair(redis_url, per_host=4)
    for i in range(3):
        a.add(Item(f"http://one.test/{i}", 1, "navigation"))
    a.set_host_delay("one.test", 0.3)  # a read robots.txt: Crawl-delay 0.3

    async def take():
        times = []
        for frontier in (b, b, a):
            await frontier.get()
            times.append(time.monotonic())
        return times

    started = time.monotonic()
    times = asyncio.run(take())
    assert times[0] - started >= 0.25  # the first request waits a delay after the robots.txt request
    # handouts are planned a delay apart from the moment each lease was granted, which is before
    # ``get`` returns by however long the return took on a loaded machine (20 ms was seen): each gap
    # may be short by that, not the two together; the send itself is paced in Redis by ``before_send``
    # from the moment of the claim
    assert times[1] - times[0] >= 0.24 and times[2] - times[1] >= 0.24
    assert times[2] - times[0] >= 0.55
    client.close()


def test_a_url_known_seen_is_not_asked_of_redis_again(redis_url):
    client, a, b = _pair(redis_url)
    assert a.add(Item("http://one.test/", 0, "navigation"))
    assert not b.seen("http://one.test/new") and b.seen("http://one.test/")  # b asks Redis, once
    before = int(client.info("stats")["total_commands_processed"])
    for _ in range(50):  # a nav link on every page: answered here
        assert a.seen("http://one.test/") and b.seen("http://one.test/")
    assert int(client.info("stats")["total_commands_processed"]) - before == 1  # the INFO call itself
    assert not b.seen("http://one.test/new")  # not seen yet: still asked, as another worker may queue it
    a.add(Item("http://one.test/new", 1, "navigation"))
    assert b.seen("http://one.test/new")
    client.close()


def test_a_lease_done_is_released_by_the_workers_next_take_in_the_same_round_trip(redis_url):
    client, a, b = _pair(redis_url)
    a.add(Item("http://one.test/1", 1, "navigation"))
    a.add(Item("http://one.test/2", 1, "navigation"))

    async def go():
        first = await a.get()
        await a.done(first)
        assert client.hget(a.keys["inflight"], "one.test") == "1"  # not yet: with the next take
        before = client.info("commandstats")
        second = await a.get()  # releases first's lease, then leases one.test again
        after = client.info("commandstats")
        calls = {name: after[name]["calls"] - before.get(name, {"calls": 0})["calls"] for name in after}
        assert second.url.endswith("/2") and client.hget(a.keys["inflight"], "one.test") == "1"
        await a.done(second)
        a.flush()
        assert client.hget(a.keys["inflight"], "one.test") == "0" and a.in_flight == 0
        return calls

    calls = asyncio.run(go())
    sent = {name: n for name, n in calls.items() if n and name not in ("cmdstat_info",)}
    assert sent.get("cmdstat_evalsha") == 1 and "cmdstat_hdel" in sent  # the release ran inside the one script
    client.close()


def test_a_worker_holds_no_more_leases_than_its_connections(redis_url):
    """Two URLs in hand on one connection would hold two hosts from the other workers."""
    client, a, b = _pair(redis_url, per_worker=1)
    for host in ("one.test", "two.test"):
        a.add(Item(f"http://{host}/", 1, "navigation"))

    async def go():
        first = await a.get()
        second = asyncio.create_task(a.get())  # a's second coroutine: waits for a's connection
        await asyncio.sleep(0.2)
        assert not second.done()
        other = await asyncio.wait_for(b.get(), 2)  # the other host is b's
        assert {first.host, other.host} == {"one.test", "two.test"}
        await a.done(first)
        await b.done(other)
        b.flush()  # b asks for no more
        return await asyncio.wait_for(second, 2)

    assert asyncio.run(go()) is None  # both taken, both done: settled
    client.close()


def test_a_request_is_claimed_across_workers_from_the_last_one_sent(redis_url):
    """``before_send``: each worker claims the host just before sending, on Redis's clock, spaced from
    the last request any worker sent (a Crawl-delay another worker learnt included)."""
    client, a, b = _pair(redis_url, delay=0.0)
    a.set_host_delay("one.test", 0.4)
    b.set_host_delay("one.test", 0.4)

    async def claims():
        times = []
        for frontier in (a, b, a, b):
            await frontier.before_send("one.test")
            times.append(time.monotonic())
            await asyncio.sleep(0.05)  # the request goes; the next is asked for sooner than the delay
        return times

    times = asyncio.run(claims())
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.4 - 0.01, gaps
    client.close()

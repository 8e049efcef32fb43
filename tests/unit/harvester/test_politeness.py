"""Politeness: a robots.txt ``Crawl-delay`` spaces request starts to its host, timed from the
fixture server's own request log."""

from __future__ import annotations

import asyncio
import time

import pytest

from demo.site_server import Resource, SiteServer
from harvester.job import validate_job
from harvester.robots import effective_delay
from harvester.run import Harvest
from index.collection import Collection


class _Empty:
    def resolve(self, version, path, headers):
        return None


class DelaySite:
    """robots.txt asking for a Crawl-delay, a home page and two linked pages; logs request arrivals."""

    def __init__(self, robots: bytes, pages: int = 1):
        self.robots = robots
        self.pages = pages
        self.log: list[tuple[float, str]] = []

    def __call__(self, path: str) -> Resource | None:
        self.log.append((time.monotonic(), path))
        html = (("Content-Type", "text/html; charset=utf-8"),)
        if path == "/robots.txt":
            return Resource(200, (("Content-Type", "text/plain"),), self.robots)
        if path == "/":
            links = "".join(f'<a href="/p{i}.html">p{i}</a>' for i in range(self.pages))
            return Resource(200, html, f"<!DOCTYPE html><title>home</title>{links}".encode())
        if path.startswith("/p"):
            return Resource(200, html, b"<!DOCTYPE html><title>page</title><p>text</p>")
        return None


def _harvest(root, server, **fields):
    job = validate_job(
        "polite",
        {"seeds": [server.base_url + "/"], "delay": 0.0, "depth": 2, "timeout": 10.0, "fulltext": False, **fields},
    )
    coll = Collection.open(root, "polite", create=True)
    return asyncio.run(Harvest(coll, job).run())


def _gaps(log):
    starts = [t for t, _ in log]
    return [b - a for a, b in zip(starts, starts[1:], strict=False)]


@pytest.mark.slow
def test_crawl_delay_spaces_request_starts_with_no_delay_in_the_job(root):
    site = DelaySite(b"User-agent: *\nCrawl-delay: 2\nDisallow: /private/\n")
    with SiteServer(_Empty(), routes=site) as server:
        summary = _harvest(root, server)
    assert [path for _, path in site.log] == ["/robots.txt", "/", "/p0.html"]
    assert summary["urls_fetched"] == 3 and summary["errors"] == 0
    assert min(_gaps(site.log)) >= 2.0 - 0.1, _gaps(site.log)
    assert any("spaced 2 s apart" in note for note in summary["notes"])


def test_without_crawl_delay_the_job_s_zero_delay_holds(root):
    site = DelaySite(b"User-agent: *\nDisallow: /private/\n", pages=3)
    with SiteServer(_Empty(), routes=site) as server:
        started = time.monotonic()
        summary = _harvest(root, server)
    assert summary["urls_fetched"] == 5
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "asked, delay, cap, expected",
    [
        (None, 1.0, 30.0, 1.0),  # no Crawl-delay: the job's delay
        (2.0, 0.0, 30.0, 2.0),  # the larger of the two
        (0.5, 1.0, 30.0, 1.0),
        (120.0, 0.0, 30.0, 30.0),  # capped by max_crawl_delay
        (120.0, 60.0, 30.0, 60.0),  # the job's own delay is never cut by the cap
        (0.0, 0.0, 30.0, 0.0),
    ],
)
def test_effective_delay(asked, delay, cap, expected):
    assert effective_delay(asked, delay, cap) == expected


def test_max_crawl_delay_caps_what_a_site_asks(root):
    site = DelaySite(b"User-agent: *\nCrawl-delay: 3600\n")
    with SiteServer(_Empty(), routes=site) as server:
        summary = _harvest(root, server, max_crawl_delay=1.0)
    assert [path for _, path in site.log] == ["/robots.txt", "/", "/p0.html"]
    assert 1.0 - 0.1 <= min(_gaps(site.log)) and max(_gaps(site.log)) < 2.5
    assert any("capped by max_crawl_delay" in note for note in summary["notes"])


# -- spaced from the request actually sent, on a busy machine -------------------------------------


@pytest.fixture
def busy_machine():
    """A process that keeps a core busy: the harvest's processes wake late from their sleeps."""
    import subprocess
    import sys

    from tests.support.processes import stop_process

    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield proc
    finally:
        stop_process(proc)


@pytest.mark.slow
@pytest.mark.parametrize("fetch_process", [True, False], ids=["fetch process", "in-process"])
def test_crawl_delay_is_counted_from_the_request_actually_sent(root, busy_machine, fetch_process):
    """With ``Crawl-delay: 1``, no two requests reach the host less than a second apart, by its own
    log, though the machine is loaded (a late wake-up used to shorten the next gap: 0.87 s was seen)."""
    site = DelaySite(b"User-agent: *\nCrawl-delay: 1\n", pages=4)
    with SiteServer(_Empty(), routes=site) as server:
        summary = _harvest(root, server, fetch_process=fetch_process)
    assert summary["urls_fetched"] == 6 and summary["errors"] == 0
    gaps = _gaps(site.log)
    # measured where the requests arrive: what is left is the loopback and the server's own thread
    assert min(gaps) >= 1.0 - 0.03, gaps


def _turn(gate, host, interval, written_after=0.0, now=None):
    """A request through the gate: its turn taken, written ``written_after`` seconds later."""

    async def request():
        async with gate.turn(host, interval) as sent:
            taken = gate.clock()
            if now is not None:
                now[0] += written_after  # its connection took that long
            sent()
            return taken

    return request()


def test_the_gate_counts_from_when_it_opened_not_from_the_plan():
    """``HostGate``: a wait that ends late moves the next turn with it."""
    from harvester.hostgate import HostGate

    now = [100.0]
    gate = HostGate(clock=lambda: now[0])

    async def run():
        assert await _turn(gate, "h", 1.0) == 100.0
        now[0] = 100.4  # asked again 0.4 s later: waits the rest of the second
        waiting = asyncio.create_task(_turn(gate, "h", 1.0))
        await asyncio.sleep(0)
        assert not waiting.done()
        now[0] = 101.25  # it woke late: that is when the request went
        assert await asyncio.wait_for(waiting, 2) == 101.25
        now[0] = 102.0  # 0.75 s after the request sent: not yet
        late = asyncio.create_task(_turn(gate, "h", 1.0))
        await asyncio.sleep(0.01)
        assert not late.done()
        now[0] = 102.25
        assert await asyncio.wait_for(late, 2) == 102.25
        assert await _turn(gate, "other", 1.0) == 102.25  # another host is not held

    asyncio.run(run())


def test_the_gate_counts_from_when_the_request_was_written():
    """A connection that takes long to make does not shorten the gap to the next request: the turn
    is held until the request is written, and the next counts from then (0.96 s under
    ``Crawl-delay: 1`` was seen when it counted from the turn's start)."""
    from harvester.hostgate import HostGate

    now = [100.0]
    gate = HostGate(clock=lambda: now[0])

    async def run():
        first = asyncio.create_task(_turn(gate, "h", 1.0, written_after=0.3, now=now))
        assert await first == 100.0  # taken at 100.0, written at 100.3
        now[0] = 101.0  # a second after the first turn began, 0.7 s after its request was written
        second = asyncio.create_task(_turn(gate, "h", 1.0))
        await asyncio.sleep(0.01)
        assert not second.done()
        now[0] = 101.3
        assert await asyncio.wait_for(second, 2) == 101.3

        async def failed():  # a turn whose connection failed (nothing written) counts from its end
            async with gate.turn("h", 1.0):
                now[0] = 102.75  # its connection was refused 0.45 s after its turn began
                raise OSError("connection refused")

        now[0] = 102.3  # a second after the second request was written
        with pytest.raises(OSError):
            await asyncio.wait_for(failed(), 2)
        now[0] = 103.5
        third = asyncio.create_task(_turn(gate, "h", 1.0))
        await asyncio.sleep(0.01)
        assert not third.done()
        now[0] = 103.75
        assert await asyncio.wait_for(third, 2) == 103.75

    asyncio.run(run())


def test_a_turn_holds_its_host_until_the_request_is_written():
    """While one request's connection is being made, the next to the host waits for it to be
    written, not for the turn's start; a zero interval holds nothing."""
    from harvester.hostgate import HostGate

    now = [100.0]
    gate = HostGate(clock=lambda: now[0])

    async def run():
        async with gate.turn("h", 1.0) as sent:
            now[0] = 105.0  # a slow connect: the interval has long passed, but nothing was written
            other = asyncio.create_task(_turn(gate, "h", 1.0))
            await asyncio.sleep(0.01)
            assert not other.done()
            sent()
        now[0] = 106.0
        assert await asyncio.wait_for(other, 2) == 106.0
        async with gate.turn("h", 0.0), gate.turn("h", 0.0):
            pass  # nothing held
        assert not gate._locks  # no lock kept for a host nobody waits for

    asyncio.run(run())


def test_the_frontier_books_the_next_turn_from_a_late_wake_up(monkeypatch):
    """``Frontier.pace``: the turn after a wait that ended late is a delay after it ended."""
    from harvester import frontier as frontier_module
    from harvester.frontier import Frontier

    now = [10.0]
    monkeypatch.setattr(frontier_module.time, "monotonic", lambda: now[0])

    late = [0.2]

    async def late_sleep(seconds):  # the loop was busy: woken 0.2 s after the time asked for, once
        now[0] += seconds + late.pop() if late else seconds

    monkeypatch.setattr(frontier_module.asyncio, "sleep", late_sleep)
    f = Frontier(delay=0.0, per_host=4, max_urls=10)
    f.set_host_delay("h", 1.0)  # the first request a second from now

    async def run():
        await f.pace("h")  # planned at 11.0, woke at 11.2: the request goes then
        assert now[0] == 11.2
        await f.pace("h")  # so the next is a second after 11.2, not after 11.0
        assert now[0] >= 12.2

    asyncio.run(run())

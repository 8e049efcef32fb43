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

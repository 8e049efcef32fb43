"""``strata worker``: runs queued harvests through the SSRF guard, cancels cleanly, and loses nothing
when it is killed or stopped mid-run; a job's login cookies and proxies."""

from __future__ import annotations

import asyncio
import gzip
import os
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from warcio.archiveiterator import ArchiveIterator

from demo.sample_site import serve_sample_site
from harvester.guard import GuardedTransport, NetworkPolicy
from harvester.job import validate_job
from harvester.jobs.queue import open_queue
from harvester.jobs.worker import Worker
from harvester.login import CookieTransport, harvest_transport, parse_cookies
from index.collection import Collection
from index.storage.state import HarvestState
from strata.errors import ConfigError
from tests.conftest import VENV_BIN

LOCAL = NetworkPolicy.from_strings(["127.0.0.1/32"])
STRATA = str(VENV_BIN / "strata")


def add_job(root, site, collection="c", name="sample", **fields):
    coll = Collection.open(root, collection, create=True)
    job = validate_job(name, {"seeds": [site.base_url + "/"], "delay": 0.0, "depth": 5, "timeout": 10.0, **fields})
    coll.job_path(name).write_text(job.to_toml())
    return coll


def wait_for(predicate, timeout=30.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("condition not reached in time")


def entry(root, entry_id):
    queue = open_queue(root)
    try:
        return queue.get(entry_id)
    finally:
        queue.close()


def entries(root):
    queue = open_queue(root)
    try:
        return queue.entries()
    finally:
        queue.close()


def enqueue(root, collection="c", job="sample", mode="auto"):
    queue = open_queue(root)
    try:
        return queue.enqueue(collection, job, mode)[0].id
    finally:
        queue.close()


def start_worker(root, *extra):
    return subprocess.Popen(
        [STRATA, "worker", "--root", str(root), "--poll", "0.1", "--allow-network", "127.0.0.1/32", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def assert_sealed(coll: Collection) -> None:
    names = os.listdir(coll.archive_dir)
    assert names and not [n for n in names if n.endswith(".open")]
    for name in names:
        with gzip.open(coll.archive_dir / name) as fh:
            while fh.read(1 << 20):
                pass


def test_worker_runs_queued_harvests(root, site):
    add_job(root, site)
    first = enqueue(root, mode="full")
    asyncio.run(Worker(root, LOCAL, poll=0.05).run(once=True))
    done = entry(root, first)
    assert done.status == "finished" and done.summary["urls_fetched"] > 40 and done.run_id
    assert done.progress.get("run_id") == done.run_id or done.progress == {}
    second = enqueue(root)
    asyncio.run(Worker(root, LOCAL, poll=0.05).run(once=True))
    assert entry(root, second).summary["mode"] == "incremental"


def test_without_an_allowance_the_worker_reaches_no_private_address(root, site):
    add_job(root, site)
    first = enqueue(root)
    asyncio.run(Worker(root, NetworkPolicy(), poll=0.05).run(once=True))
    done = entry(root, first)
    assert done.status == "failed" and done.summary["urls_fetched"] == 0 and done.summary["errors"] >= 1
    assert site.request_count == 0
    assert "SSRF guard" in done.summary["recent_errors"][0]["error"]
    assert "robots.txt" in done.error and "SSRF guard" in done.error  # the queue says why


def test_a_broken_job_fails_its_run_and_the_worker_goes_on(root, site):
    coll = add_job(root, site)
    coll.job_path("broken").write_text("seeds = [")
    bad, good = enqueue(root, job="broken"), enqueue(root, collection="c", job="sample")
    asyncio.run(Worker(root, LOCAL, poll=0.05).run(once=True))
    assert entry(root, bad).status == "failed" and "not valid TOML" in entry(root, bad).error
    assert entry(root, good).status == "finished"


@pytest.mark.slow
def test_cancel_stops_cleanly(root):
    with serve_sample_site(1, latency=0.2) as site:
        coll = add_job(root, site, concurrency=1)
        run = enqueue(root, mode="full")
        proc = start_worker(root)
        try:
            wait_for(lambda: (entry(root, run).progress.get("urls_fetched") or 0) >= 2)
            queue = open_queue(root)
            queue.cancel(run)
            queue.close()
            done = wait_for(lambda: (e := entry(root, run)).status != "running" and e)
        finally:
            proc.terminate()
            proc.wait(10)
    assert done.status == "cancelled" and done.summary["status"] == "cancelled"
    assert done.summary["urls_fetched"] < 40
    with HarvestState(coll.db_path) as state:
        assert state.run(done.run_id)["status"] == "cancelled"
    assert_sealed(coll)
    queue = open_queue(root)
    assert not queue.entries(statuses=("queued",))  # a cancelled run is not retried
    queue.close()


@pytest.mark.slow
def test_a_killed_worker_s_run_is_marked_and_retried(root):
    with serve_sample_site(1, latency=0.1) as site:
        coll = add_job(root, site, concurrency=1)
        run = enqueue(root, mode="full")
        proc = start_worker(root)
        wait_for(lambda: (entry(root, run).progress.get("urls_fetched") or 0) >= 2)
        first_run_id = entry(root, run).run_id
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        site.latency = 0.0
        again = subprocess.run(
            [STRATA, "worker", "--once", "--root", str(root), "--allow-network", "127.0.0.1/32"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert again.returncode == 0, again.stderr
    old = entry(root, run)
    assert old.status == "interrupted" and "queued again" in old.error
    queue = open_queue(root)
    retry = [e for e in queue.entries() if e.retry_of == run][0]
    queue.close()
    assert retry.status == "finished" and retry.attempt == 2 and retry.mode == "full"
    with HarvestState(coll.db_path) as state:
        assert state.run(first_run_id)["status"] == "interrupted"  # repaired by the next harvest
        assert state.run(retry.run_id)["status"] == "finished"
    assert_sealed(coll)


@pytest.mark.slow
def test_a_stopped_worker_stops_its_runs_cleanly_and_queues_them_again(root):
    with serve_sample_site(1, latency=0.2) as site:
        coll = add_job(root, site, concurrency=1)
        run = enqueue(root, mode="full")
        proc = start_worker(root)
        wait_for(lambda: (entry(root, run).progress.get("urls_fetched") or 0) >= 2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    old = entry(root, run)
    assert old.status == "interrupted" and "stopped during the run" in old.error
    with HarvestState(coll.db_path) as state:
        assert state.run(old.run_id)["status"] == "cancelled"
    assert_sealed(coll)
    queue = open_queue(root)
    assert [e.retry_of for e in queue.entries(statuses=("queued",))] == [run]
    queue.close()


# -- login cookies and proxies --------------------------------------------------------------------
def test_login_cookies_go_to_the_seed_hosts_and_never_into_the_warcs(root, site):
    coll = add_job(root, site, login_cookies=["session=s3cr3t-value", "lang=en"])
    run = enqueue(root)
    asyncio.run(Worker(root, LOCAL, poll=0.05).run(once=True))
    assert entry(root, run).status == "finished"
    cookies = {r.header("Cookie") for r in site.request_log}
    assert cookies == {"session=s3cr3t-value; lang=en"}
    for name in os.listdir(coll.archive_dir):
        with open(coll.archive_dir / name, "rb") as fh:
            for record in ArchiveIterator(fh):
                assert b"s3cr3t" not in record.content_stream().read()
                assert "s3cr3t" not in str(record.rec_headers) + str(record.http_headers or "")


def test_cookie_scope_and_parsing():
    transport = CookieTransport(httpx.AsyncHTTPTransport(), [("a", "b")], {"example.org"}, subdomains=True)
    assert transport.applies_to("example.org") and transport.applies_to("www.example.org")
    assert not transport.applies_to("evil-example.org") and not transport.applies_to("cdn.example.net")
    assert not CookieTransport(httpx.AsyncHTTPTransport(), [], {"example.org"}).applies_to("www.example.org")
    assert parse_cookies(["a=b=c", " x = y "]) == [("a", "b=c"), ("x", "y")]
    for bad in (["novalue"], ["=v"], ["a b=c"], ["a=b;c=d"], ["a=b\r\nX-Evil: 1"]):
        with pytest.raises(ConfigError, match="login_cookies"):
            parse_cookies(bad)
    job = validate_job("j", {"seeds": ["http://example.org/"]})
    assert harvest_transport(job) is None
    assert isinstance(harvest_transport(job, LOCAL), GuardedTransport)


class _Proxy(BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.seen.append(self.path)
        body = b"via proxy"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_proxies_are_rotated_per_request_and_checked():
    servers = []
    for _ in range(2):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
        server.seen = []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    proxies = [f"http://127.0.0.1:{s.server_address[1]}" for s in servers]

    async def go():
        transport = GuardedTransport(LOCAL, proxies=proxies)
        async with httpx.AsyncClient(transport=transport, trust_env=False) as client:
            return [(await client.get(f"http://127.0.0.1:9/page{i}")).text for i in range(4)]

    try:
        assert asyncio.run(go()) == ["via proxy"] * 4
        assert [s.seen for s in servers] == [
            ["http://127.0.0.1:9/page0", "http://127.0.0.1:9/page2"],
            ["http://127.0.0.1:9/page1", "http://127.0.0.1:9/page3"],
        ]
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


@pytest.mark.slow
def test_single_machine_services_run_worker_and_scheduler(root, site):
    """What `strata serve` starts beside the web server: a worker process with the scheduler in it."""
    from replay.hosts import start_services

    add_job(root, site, frequency="daily")
    proc = start_services(root, ["127.0.0.1/32"], parallel=1)
    try:
        done = wait_for(lambda: [e for e in entries(root) if e.status == "finished"], timeout=60)
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
    assert done[0].reason == "schedule" and done[0].job == "sample"

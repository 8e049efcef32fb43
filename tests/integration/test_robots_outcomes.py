"""robots.txt outcomes per RFC 9309 and runs that fail say so: a 4xx robots.txt allows all; a 5xx
or unreachable one (refused connection, the worker's network guard) disallows all and, when no seed
site could be harvested, is reported as the run's failure, through ``strata harvest`` (exit 1) and
through the worker and the console's queue. A run that harvested its other seed sites is finished,
and names the site it could not harvest in ``failed_hosts`` (exit 1)."""

from __future__ import annotations

import asyncio
import json
import subprocess

import lxml.html

from demo.site_server import Resource, SiteServer
from harvester.guard import NetworkPolicy
from harvester.jobs.queue import open_queue
from harvester.jobs.worker import Worker
from index.collection import Collection
from index.storage.state import HarvestState
from tests.conftest import VENV_BIN, free_port

STRATA = str(VENV_BIN / "strata")
HTML = (("Content-Type", "text/html; charset=utf-8"),)


class _Empty:
    def resolve(self, version, path, headers):
        return None


def robots_site(status: int) -> SiteServer:
    """A two-page site whose robots.txt answers ``status``."""

    def routes(path: str) -> Resource | None:
        if path == "/robots.txt":
            return Resource(status, (("Content-Type", "text/plain"),), b"User-agent: *\nDisallow: /\n")
        if path == "/":
            return Resource(200, HTML, b'<!DOCTYPE html><title>home</title><a href="/a.html">a</a>')
        if path == "/a.html":
            return Resource(200, HTML, b"<!DOCTYPE html><title>a</title><p>a</p>")
        return None

    return SiteServer(_Empty(), routes=routes)


def strata(*args, root) -> subprocess.CompletedProcess:
    return subprocess.run([STRATA, *args, "--root", str(root)], capture_output=True, text=True, timeout=120)


def test_a_robots_txt_answering_503_disallows_all_and_fails_the_run(root):
    with robots_site(503) as site:
        done = strata("harvest", "c", "--seed", site.base_url + "/", "--delay", "0", root=root)
        paths = [r.path for r in site.request_log]
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    error = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert error == [
        f"Error: the run failed: robots.txt of {site.base_url} could not be read (HTTP 503), "
        "so nothing there was fetched (RFC 9309: disallow all until it can be read)"
    ]
    assert paths == ["/robots.txt"]
    assert "of collection c (full, failed)" in done.stdout
    runs = json.loads(strata("runs", "c", "--json", root=root).stdout)
    assert runs[0]["status"] == "failed" and "HTTP 503" in runs[0]["failure"]
    with HarvestState(Collection(root, "c").db_path) as state:
        checks = state.checks(runs[0]["run_id"])
    skipped = [c for c in checks if c["url"] == site.base_url + "/"]
    assert skipped and "robots.txt could not be read (HTTP 503)" in skipped[0]["reason"]
    assert "disallowed by robots.txt" not in skipped[0]["reason"]


def test_one_seed_site_of_five_whose_robots_txt_answers_500_leaves_the_run_finished(root):
    sites = [robots_site(404) for _ in range(4)] + [robots_site(500)]
    for site in sites:
        site.__enter__()
    try:
        seeds = [arg for site in sites for arg in ("--seed", site.base_url + "/")]
        done = strata("harvest", "c", *seeds, "--delay", "0", "--json", root=root)
        requested = [[r.path for r in site.request_log] for site in sites]
    finally:
        for site in sites:
            site.__exit__(None, None, None)
    assert done.returncode == 1 and "Traceback" not in done.stderr  # not everything was harvested
    summary = json.loads(done.stdout)
    broken = sites[-1].base_url.split("//", 1)[1]
    assert summary["status"] == "finished" and summary["failure"] is None
    assert summary["failed_hosts"] == [broken]
    assert any(note.startswith(f"nothing on {sites[-1].base_url} was fetched") for note in summary["notes"])
    assert requested[-1] == ["/robots.txt"] and all(paths[1:] for paths in requested[:-1])
    assert summary["urls_fetched"] == 4 * 3 + 1  # each robots.txt (404), /, /a.html; the 500 robots.txt
    runs = json.loads(strata("runs", "c", "--json", root=root).stdout)
    assert (runs[0]["status"], runs[0]["failed_hosts"]) == ("finished", [broken])


def test_a_robots_txt_answering_404_allows_all(root):
    with robots_site(404) as site:
        done = strata("harvest", "c", "--seed", site.base_url + "/", "--delay", "0", "--json", root=root)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "finished" and summary["failure"] is None
    assert summary["urls_fetched"] == 3  # robots.txt (404), /, /a.html


def test_a_seed_on_a_closed_port_fails_the_run_with_the_reason(root):
    seed = f"http://127.0.0.1:{free_port()}/"
    done = strata("harvest", "c", "--seed", seed, root=root)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    error = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and error[0].startswith(
        f"Error: the run failed: robots.txt of {seed.rstrip('/')} could not be read (unreachable (connection failed"
    )


def test_a_closed_port_without_robots_fails_as_no_seed_fetched(root):
    seed = f"http://127.0.0.1:{free_port()}/"
    coll = Collection.open(root, "c", create=True)
    coll.job_path("nobots").write_text(f'seeds = ["{seed}"]\nrobots = "ignore"\n')
    done = strata("harvest", "c", "--job", "nobots", root=root)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"Error: the run failed: no seed could be fetched: {seed}: connection failed (" in done.stderr


def _queue_row(staff, entry_id: int) -> str:
    doc = lxml.html.fromstring(staff.get("/runs").text)
    for row in doc.cssselect("#queue tr")[1:]:
        if row.cssselect("td a")[0].text_content().strip() == str(entry_id):
            return row.text_content()
    raise AssertionError(f"run {entry_id} not in the queue page")


def test_the_worker_records_the_failure_and_the_console_queue_shows_it(staff, staff_root):
    with robots_site(503) as site:
        form = {
            "collection": "c",
            "name": "news",
            "seeds": site.base_url + "/",
            "scope": "same-host",
            "robots": "obey",
            "default_page_kind": "index",
            "delay": "0",
            "csrf_token": staff.csrf,
        }
        assert staff.post("/jobs/new", data=form).status_code == 302
        staff.post("/jobs/c/news/harvest", data={"csrf_token": staff.csrf, "mode": "full"})
        worker = Worker(staff_root, NetworkPolicy.from_strings(["127.0.0.1/32"]), poll=0.05)
        asyncio.run(worker.run(once=True))
        worker.queue.close()
    queue = open_queue(staff_root)
    entry = queue.get(1)
    queue.close()
    assert entry.status == "failed" and "robots.txt" in entry.error and "HTTP 503" in entry.error
    row = _queue_row(staff, 1)
    assert "failed" in row and f"robots.txt of {site.base_url} could not be read (HTTP 503)" in row
    page = lxml.html.fromstring(staff.get("/runs/1").text)
    assert "HTTP 503" in page.cssselect("#run-error")[0].text_content()
    errors = page.cssselect("#errors li")
    assert any("robots.txt could not be read (HTTP 503)" in li.text_content() for li in errors)


def test_the_network_guard_refusing_robots_txt_fails_the_run_and_says_so(staff, staff_root):
    with robots_site(200) as site:
        form = {
            "collection": "c",
            "name": "news",
            "seeds": site.base_url + "/",
            "scope": "same-host",
            "robots": "obey",
            "default_page_kind": "index",
            "delay": "0",
            "csrf_token": staff.csrf,
        }
        assert staff.post("/jobs/new", data=form).status_code == 302
        staff.post("/jobs/c/news/harvest", data={"csrf_token": staff.csrf, "mode": "full"})
        worker = Worker(staff_root, NetworkPolicy(), poll=0.05)  # 127.0.0.1 not allowed
        asyncio.run(worker.run(once=True))
        worker.queue.close()
        assert site.request_count == 0
    row = _queue_row(staff, 1)
    assert "failed" in row and "could not be read" in row and "SSRF guard" in row

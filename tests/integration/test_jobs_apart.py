"""Jobs kept apart inside one collection, through ``strata harvest`` as a user runs it and through
the staff console: a new job's first run is full, each job's incremental run rechecks only the URLs
its own runs queued, every run is listed with the job it belongs to (none for ``--seed``) whoever
started it, and a refused command creates nothing."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
from urllib.parse import urlsplit

import lxml.html
import pytest

from demo.sample_site import serve_sample_site
from harvester.guard import NetworkPolicy
from harvester.job import validate_job
from harvester.jobs.queue import SQLiteQueue
from harvester.jobs.scheduler import Scheduler
from harvester.jobs.worker import Worker
from index.storage.state import SCHEMA_VERSION, HarvestState
from tests.conftest import VENV_BIN

STRATA = str(VENV_BIN / "strata")


def strata(root, *args, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "STRATA_ROOT": str(root)}
    proc = subprocess.run([STRATA, *args], capture_output=True, text=True, env=env, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def write_job_file(root, collection: str, name: str, seed: str, **fields) -> None:
    """A job set up by hand, as the README says: only ``<root>/<collection>/jobs/<name>.toml``."""
    jobs = root / collection / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    (jobs / f"{name}.toml").write_text(
        validate_job(name, {"seeds": [seed], "delay": 0, "depth": 5, **fields}).to_toml()
    )


def harvest_json(root, *args) -> dict:
    return json.loads(strata(root, "harvest", *args, "--json").stdout)


def hosts_requested(site) -> int:
    return len(site.request_log)


@pytest.fixture
def sites():
    with serve_sample_site(1) as one, serve_sample_site(1) as two:
        yield one, two


@pytest.mark.slow
def test_two_jobs_in_one_collection_recheck_only_their_own_urls(tmp_path, sites):
    root = tmp_path / "collections"
    one, two = sites
    write_job_file(root, "c", "a", one.base_url + "/")
    write_job_file(root, "c", "b", two.base_url + "/")

    first_a = harvest_json(root, "c", "--job", "a")
    assert first_a["mode"] == "full" and first_a["urls_fetched"] > 20
    one.reset_counters()
    first_b = harvest_json(root, "c", "--job", "b")
    assert first_b["mode"] == "full"  # b never ran: a full run, whatever a did before
    assert first_b["new"] + first_b["redirect"] == first_b["urls_fetched"]  # every URL of its site is new to it
    assert hosts_requested(one) == 0  # nothing of a's site was looked at

    second_b = harvest_json(root, "c", "--job", "b")
    assert second_b["mode"] == "incremental"
    assert hosts_requested(one) == 0  # b's recheck leaves a's URLs to a
    assert second_b["urls_fetched"] == first_b["urls_fetched"]
    two.reset_counters()
    second_a = harvest_json(root, "c", "--job", "a")
    assert second_a["mode"] == "incremental" and hosts_requested(two) == 0
    with HarvestState(root / "c" / "strata" / "harvest.sqlite") as state:
        for run in (second_a, second_b):
            ports = {urlsplit(c["url"]).port for c in state.captures(run_id=run["run_id"])}
            site = one if run is second_a else two
            assert ports == {site.port}, run["job"]

    # a --seed run belongs to no job: full the first time, and it does not recheck the jobs' URLs
    one.reset_counters()
    seeded = harvest_json(root, "c", "--seed", two.base_url + "/about.html", "--depth", "0", "--delay", "0")
    assert seeded["mode"] == "full" and hosts_requested(one) == 0
    listed = json.loads(strata(root, "runs", "c", "--json").stdout)
    assert [(r["job"], r["mode"]) for r in listed] == [
        ("a", "full"),
        ("b", "full"),
        ("b", "incremental"),
        ("a", "incremental"),
        (None, "full"),
    ]
    text = strata(root, "runs", "c").stdout.splitlines()
    assert text[0].split()[:2] == ["run", "job"] and text[-1].split()[1] == "-"
    # each incremental run is compared with its own job's last full run, never another job's
    report = {r["run_id"]: r for r in json.loads(strata(root, "report", "c", "--json").stdout)["runs"]}
    assert report[second_b["run_id"]]["vs_full"]["full_run"] == first_b["run_id"]
    assert report[second_a["run_id"]]["vs_full"]["full_run"] == first_a["run_id"]
    assert "vs_full" not in report[seeded["run_id"]]


@pytest.mark.slow
def test_the_console_shows_runs_from_the_command_line_and_collections_of_no_job(tmp_path, staff, staff_root):
    with serve_sample_site(1) as site:
        write_job_file(staff_root, "c", "news", site.base_url + "/")
        for _ in range(2):
            strata(staff_root, "harvest", "c", "--job", "news")
        strata(staff_root, "harvest", "loose", "--seed", site.base_url + "/", "--depth", "1", "--delay", "0")
        jobs = lxml.html.fromstring(staff.get("/jobs").text)
        staff.post("/jobs/c/news/harvest", data={"csrf_token": staff.csrf, "mode": "incremental"})
        worker = Worker(staff_root, NetworkPolicy.from_strings(["127.0.0.1/32"]), poll=0.05)
        asyncio.run(worker.run(once=True))
        worker.queue.close()
    (row,) = [tr for tr in jobs.cssselect("#jobs tr")[1:] if "c/news" in tr.text_content()]
    last = row.cssselect("td.last-run")[0].text_content()
    assert "never" not in last and "finished" in last and "command line" in last
    collections = {
        tr.cssselect("td")[0].text_content().strip(): tr.text_content() for tr in jobs.cssselect("#collections tr")[1:]
    }
    assert set(collections) == {"c", "loose"}  # the collection harvested without a job is there
    assert "no job" in collections["loose"]

    runs = lxml.html.fromstring(staff.get("/runs").text)
    harvests = runs.cssselect("#harvests tr")[1:]
    assert len(harvests) == 4
    by_job = [
        (
            tr.cssselect("td")[1].text_content(),
            tr.cssselect("td.job")[0].text_content().strip(),
            tr.cssselect("td.started-by")[0].text_content(),
        )
        for tr in harvests
    ]
    assert by_job == [
        ("c", "news", "console (ana)"),
        ("loose", "none", "command line"),
        ("c", "news", "command line"),
        ("c", "news", "command line"),
    ]
    assert harvests[0].cssselect("td a")[0].get("href") == "/runs/1"  # the worker's run links to its entry
    listed = json.loads(strata(staff_root, "runs", "c", "--json").stdout)
    assert [(r["job"], r["mode"], r["started_by"]) for r in listed] == [
        ("news", "full", "command line"),
        ("news", "incremental", "command line"),
        ("news", "incremental", "console (ana)"),
    ]


def test_the_scheduler_sees_a_job_file_in_a_collection_with_nothing_else(tmp_path):
    root = tmp_path / "collections"
    write_job_file(root, "fresh", "daily", "http://127.0.0.1:9/", frequency="daily")
    assert sorted(p.name for p in (root / "fresh").iterdir()) == ["jobs"]
    queue = SQLiteQueue.for_root(root)
    try:
        queued = Scheduler(root, queue).tick().queued
        assert [(q.collection, q.job) for q in queued] == [("fresh", "daily")]
    finally:
        queue.close()


@pytest.mark.parametrize(
    "args",
    [
        ("--job", "missing"),
        ("--seed", "ftp://example.org/"),
        ("--seed", "http://127.0.0.1:9/", "--depth", "500"),
        ("--seed", "http://127.0.0.1:9/", "--job", "both"),
        (),
    ],
)
def test_a_refused_command_creates_nothing(tmp_path, args):
    root = tmp_path / "collections"
    proc = strata(root, "harvest", "new", *args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("Error: ") and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (root / "new").exists()


def test_a_bad_job_file_creates_no_archive(tmp_path):
    root = tmp_path / "collections"
    (root / "c" / "jobs").mkdir(parents=True)
    (root / "c" / "jobs" / "bad.toml").write_text('seeds = ["http://127.0.0.1:9/"]\ncolour = 1\n')
    proc = strata(root, "harvest", "c", "--job", "bad", check=False)
    assert proc.returncode == 2 and "unknown field 'colour'" in proc.stderr
    assert sorted(p.name for p in (root / "c").iterdir()) == ["jobs"]


@pytest.mark.slow
def test_an_older_database_is_rebuilt_with_each_url_owned_by_its_job(tmp_path, sites):
    """A database of schema 1 (no record of which job queued a URL) is rebuilt from the WARCs before
    the next run, and the jobs' URLs come back from the runs' warcinfo records."""
    root = tmp_path / "collections"
    one, two = sites
    write_job_file(root, "c", "a", one.base_url + "/")
    write_job_file(root, "c", "b", two.base_url + "/")
    harvest_json(root, "c", "--job", "a")
    harvest_json(root, "c", "--job", "b")
    db = root / "c" / "strata" / "harvest.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM url_jobs")
    conn.execute("UPDATE meta SET value='1' WHERE key='schema'")
    conn.commit()
    conn.close()
    one.reset_counters()
    again = harvest_json(root, "c", "--job", "b")
    assert again["mode"] == "incremental" and hosts_requested(one) == 0
    with HarvestState(db) as state:
        assert state.conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == str(SCHEMA_VERSION)
        owners = {row[0] for row in state.conn.execute("SELECT DISTINCT job FROM url_jobs")}
    assert owners == {"a", "b"}


def test_a_rebuild_gives_back_every_run_its_job_and_the_next_seed_run_is_incremental(tmp_path, sites):
    """``--seed`` runs belong to no job before and after ``strata index rebuild`` (they used to come
    back as job "cli", and the next ``--seed`` harvest then ran full, storing everything again)."""
    root = tmp_path / "collections"
    one, _ = sites
    write_job_file(root, "c", "a", one.base_url + "/")
    harvest_json(root, "c", "--job", "a")
    seeded = harvest_json(root, "c", "--seed", one.base_url + "/", "--depth", "1", "--delay", "0")
    assert seeded["mode"] == "full"
    before = json.loads(strata(root, "runs", "c", "--json").stdout)
    strata(root, "index", "rebuild", "c", "--only", "state")
    after = json.loads(strata(root, "runs", "c", "--json").stdout)
    assert [(r["run_id"], r["job"], r["mode"], r["status"]) for r in after] == [
        (r["run_id"], r["job"], r["mode"], r["status"]) for r in before
    ]
    assert [r["job"] for r in after] == ["a", None]
    again = harvest_json(root, "c", "--seed", one.base_url + "/", "--depth", "1", "--delay", "0")
    assert again["mode"] == "incremental" and again["new"] == 0
    assert again["bytes_saved"] > 0 and again["unchanged"] + again["not_modified"] > 0

"""Jobs in the console: forms validated exactly as job files, TOML written back, secrets kept out of
pages, URLs checked by the SSRF guard, pause/delete/harvest, and the history page of real runs."""

from __future__ import annotations

import asyncio
import re

import lxml.html
import pytest

from demo.sample_site import serve_sample_site
from harvester.guard import NetworkPolicy
from harvester.job import JOB_SETTINGS, load_job_file, validate_job
from harvester.jobs.queue import open_queue
from harvester.jobs.worker import Worker
from index.collection import Collection
from replay.staff.forms import CHOICES
from strata.errors import ConfigError
from tests.support.staff_helpers import ARCHIVE_URL

BASE_FORM = {
    "collection": "c",
    "name": "news",
    "seeds": "http://127.0.0.1:9/",
    "scope": "same-host",
    "robots": "obey",
    "default_page_kind": "index",
    "embeds_offsite": "1",
    "store_soft_changes": "1",
    "fulltext": "1",
    "fetch_process": "1",
}


def _error(html: str) -> str:
    found = lxml.html.fromstring(html).cssselect("#form-error")
    return found[0].text_content().strip() if found else ""


def _post_new(staff, **fields):
    data = {**BASE_FORM, "csrf_token": staff.csrf, **fields}
    return staff.post("/jobs/new", data={k: v for k, v in data.items() if v is not None})


@pytest.mark.parametrize(
    "form, toml",
    [
        ({"depth": "500"}, "depth = 500"),
        ({"depth": "deep"}, 'depth = "deep"'),
        ({"delay": "-1"}, "delay = -1"),
        ({"seeds": "ftp://example.org/"}, 'seeds = ["ftp://example.org/"]'),
        ({"seeds": ""}, "seeds = []"),
        ({"exclude": "("}, 'exclude = ["("]'),
        ({"max_resource_size": "lots"}, 'max_resource_size = "lots"'),
        ({"frequency": "every tuesday"}, 'frequency = "every tuesday"'),
        ({"scope": "galaxy"}, 'scope = "galaxy"'),
        ({"min_interval": "9d", "max_interval": "1d"}, 'min_interval = "9d"\nmax_interval = "1d"'),
        ({"change_threshold": "1.5"}, "change_threshold = 1.5"),
    ],
)
def test_the_form_rejects_what_a_job_file_rejects_with_the_same_message(staff, staff_root, tmp_path, form, toml):
    response = _post_new(staff, **form)
    assert response.status_code == 400
    path = tmp_path / "news.toml"
    seeds = "" if toml.startswith("seeds") else 'seeds = ["http://127.0.0.1:9/"]\n'
    path.write_text(seeds + toml + "\n")
    with pytest.raises(ConfigError) as exc:
        load_job_file(path)
    assert _error(response.text) == exc.value.message
    field = re.search(r"field '(\w+)'", exc.value.message).group(1)
    assert lxml.html.fromstring(response.text).cssselect(f"#field-{field}.invalid")
    assert not (staff_root / "c" / "jobs" / "news.toml").exists()


def test_create_writes_the_toml_the_loader_reads(staff, staff_root):
    response = _post_new(
        staff,
        depth="2",
        delay="0.5",
        frequency="0 3 * * 1",
        exclude="/private/\n\n/tmp/",
        min_interval="2d",
        max_resource_size="5MB",
        robots="ignore",
        embeds_offsite=None,
    )
    assert response.status_code == 302 and response.headers["Location"].endswith("/jobs/c/news?notice=created")
    path = Collection(staff_root, "c").job_path("news")
    job = load_job_file(path)
    assert job == validate_job(
        "news",
        {
            "seeds": ["http://127.0.0.1:9/"],
            "depth": 2,
            "delay": 0.5,
            "frequency": "0 3 * * 1",
            "exclude": ["/private/", "/tmp/"],
            "min_interval": "2d",
            "max_resource_size": "5MB",
            "robots": "ignore",
            "embeds_offsite": False,
        },
    )
    assert 'frequency = "0 3 * * 1"' in path.read_text()
    page = staff.get(response.headers["Location"])
    assert page.status_code == 200 and "Job created." in page.text
    again = _post_new(staff)
    assert again.status_code == 400 and "already has a job" in _error(again.text)


def test_console_only_checks_cron_and_cookies_and_names(staff):
    assert "cron" in _error(_post_new(staff, frequency="61 * * * *").text)
    assert "login_cookies" in _error(_post_new(staff, login_cookies="no equals sign").text)
    assert "collection name" in _error(_post_new(staff, collection="../etc").text)
    assert "job name" in _error(_post_new(staff, name="a/b").text)


@pytest.mark.parametrize(
    "field, value",
    [
        ("seeds", "http://127.3:9/"),
        ("seeds", "http://0x7f.0.0.2/"),
        ("seeds", "http://2130706434/"),
        ("seeds", "http://[::ffff:127.0.0.2]/"),
        ("seeds", "http://0/"),
        ("seeds", "http://169.254.169.254/latest/"),
        ("seeds", "http://10.0.0.1/"),
        ("proxies", "http://10.0.0.1:3128"),
        ("proxies", "http://127.0.0.2:3128"),
    ],
)
def test_urls_typed_in_are_checked_by_the_ssrf_guard(staff, field, value):
    message = _error(_post_new(staff, **{field: value}).text)
    assert f"field '{field}'" in message and "refused" in message


def test_secrets_are_never_shown_back(staff, staff_root):
    assert _post_new(staff, login_cookies="session=s3cr3t-cookie", proxies="http://127.0.0.1:3128").status_code == 302
    for page in (staff.get("/jobs/c/news"), staff.get("/jobs/c/news/edit"), staff.get("/jobs")):
        assert "s3cr3t" not in page.text and "3128" not in page.text
    assert "1 value(s) set (not shown)" in staff.get("/jobs/c/news").text
    path = Collection(staff_root, "c").job_path("news")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    # an edit that leaves the secret boxes empty keeps them; "remove" clears them
    edit = staff.get("/jobs/c/news/edit")
    digest = lxml.html.fromstring(edit.text).cssselect("input[name=digest]")[0].get("value")
    data = {**BASE_FORM, "csrf_token": staff.csrf, "digest": digest, "depth": "4"}
    assert staff.post("/jobs/c/news/edit", data=data).status_code == 302
    job = load_job_file(path)
    assert job.depth == 4 and job.login_cookies == ("session=s3cr3t-cookie",) and job.proxies
    edit = staff.get("/jobs/c/news/edit")
    data["digest"] = lxml.html.fromstring(edit.text).cssselect("input[name=digest]")[0].get("value")
    data["clear_login_cookies"] = "1"
    assert staff.post("/jobs/c/news/edit", data=data).status_code == 302
    assert load_job_file(path).login_cookies == ()


def test_a_file_edited_by_hand_meanwhile_is_not_overwritten(staff, staff_root):
    _post_new(staff)
    edit = staff.get("/jobs/c/news/edit")
    digest = lxml.html.fromstring(edit.text).cssselect("input[name=digest]")[0].get("value")
    path = Collection(staff_root, "c").job_path("news")
    path.write_text(path.read_text() + "depth = 7\n")
    response = staff.post(
        "/jobs/c/news/edit", data={**BASE_FORM, "csrf_token": staff.csrf, "digest": digest, "depth": "1"}
    )
    assert response.status_code == 400 and "changed on disk" in _error(response.text)
    assert load_job_file(path).depth == 7
    broken = path.read_text() + "colour = 1\n"
    path.write_text(broken)
    assert staff.get("/jobs/c/news").status_code == 409
    assert "unknown field" in staff.get("/jobs").text


def test_pause_resume_delete_and_harvest_now(backend, staff, staff_root):
    _post_new(staff, frequency="daily")
    assert "Pause schedule" in staff.get("/jobs/c/news").text
    assert staff.post("/jobs/c/news/pause", data={"csrf_token": staff.csrf}).status_code == 302
    queue = open_queue(staff_root)
    assert queue.schedule("c", "news").paused
    assert "Resume schedule" in staff.get("/jobs/c/news").text
    staff.post("/jobs/c/news/resume", data={"csrf_token": staff.csrf})
    assert not queue.schedule("c", "news").paused
    first = staff.post("/jobs/c/news/harvest", data={"csrf_token": staff.csrf, "mode": "full"})
    assert first.headers["Location"] == "/runs/1"
    second = staff.post("/jobs/c/news/harvest", data={"csrf_token": staff.csrf, "mode": "incremental"})
    assert second.headers["Location"] == "/runs/1?notice=already_active"
    entry = queue.get(1)
    assert (entry.mode, entry.requested_by, entry.status) == ("full", "ana", "queued")
    assert staff.post("/jobs/c/news/harvest", data={"csrf_token": staff.csrf, "mode": "sideways"}).status_code == 400
    wrong = staff.post("/jobs/c/news/delete", data={"csrf_token": staff.csrf, "confirm_name": "other"})
    assert wrong.status_code == 400 and Collection(staff_root, "c").job_path("news").exists()
    gone = staff.post("/jobs/c/news/delete", data={"csrf_token": staff.csrf, "confirm_name": "news"})
    assert gone.status_code == 302
    assert not Collection(staff_root, "c").job_path("news").exists()
    assert list((staff_root / "c" / "jobs").glob("news.toml.deleted-*"))
    assert queue.get(1).status == "cancelled" and queue.schedule("c", "news") is None
    assert staff.get("/jobs/c/news").status_code == 404
    queue.close()


def test_choices_agree_with_the_job_table():
    for name, choices in CHOICES.items():
        for choice in choices:
            validate_job("x", {"seeds": ["http://example.org/"], name: choice})
        with pytest.raises(ConfigError):
            validate_job("x", {"seeds": ["http://example.org/"], name: "none-of-these"})
    assert set(CHOICES) <= {s.name for s in JOB_SETTINGS}


def test_history_of_real_runs_links_each_to_its_snapshot(backend, staff, staff_root):
    """Two runs by the worker (v1 full, v2 incremental): the page lists both with charts and links."""
    with serve_sample_site(1) as site:
        _post_new(staff, seeds=site.base_url + "/", delay="0", depth="5")
        worker = Worker(staff_root, NetworkPolicy.from_strings(["127.0.0.1/32"]), poll=0.05)
        for version, mode in ((1, "full"), (2, "incremental")):
            site.version = version
            staff.post("/jobs/c/news/harvest", data={"csrf_token": staff.csrf, "mode": mode})
            asyncio.run(worker.run(once=True))
    worker.queue.close()
    page = staff.get("/jobs/c/news")
    doc = lxml.html.fromstring(page.text)
    rows = doc.cssselect("#runs tr")[1:]
    assert len(rows) == 2
    links = [a.get("href") for a in doc.cssselect("#runs a.snapshot")]
    queue = open_queue(staff_root)
    snapshots = [queue.get(i).summary["snapshot"] for i in (2, 1)]
    queue.close()
    assert links == [f"{ARCHIVE_URL}/c/{ts}/{site.base_url}/" for ts in snapshots]
    storage = doc.cssselect("#chart-storage svg")[0]
    assert len(storage.cssselect("a rect.bar-stored")) == 2 and len(storage.cssselect("a rect.bar-full")) == 2
    stored = [float(r.get("height")) for r in storage.cssselect("a rect.bar-stored")]
    assert stored[1] < stored[0]  # the incremental run stored less
    classes = doc.cssselect("#chart-classes svg")[0]
    assert classes.cssselect("rect.seg-new") and classes.cssselect("rect.seg-unchanged")
    assert {a.get("href") for a in classes.cssselect("a")} == set(links)
    progress = staff.get("/api/runs/2").get_json()
    assert progress["final"] and progress["status"] == "finished" and progress["snapshot_url"] == links[0]
    assert progress["classes"]["unchanged"] + progress["classes"]["not_modified"] > 0


def test_harvest_now_incremental_on_a_job_that_never_ran_is_a_full_run(staff, staff_root):
    """Another job harvested the same site before: an incremental first run would have written
    revisits of that job's captures. It is full, as a first run from the command line is."""
    with serve_sample_site(1) as site:
        _post_new(staff, seeds=site.base_url + "/", delay="0", depth="3")
        worker = Worker(staff_root, NetworkPolicy.from_strings(["127.0.0.1/32"]), poll=0.05)
        staff.post("/jobs/c/news/harvest", data={"csrf_token": staff.csrf, "mode": "full"})
        asyncio.run(worker.run(once=True))
        _post_new(staff, name="other", seeds=site.base_url + "/", delay="0", depth="3")
        staff.post("/jobs/c/other/harvest", data={"csrf_token": staff.csrf, "mode": "incremental"})
        asyncio.run(worker.run(once=True))
    worker.queue.close()
    queue = open_queue(staff_root)
    first_of_other = queue.get(2).summary
    queue.close()
    assert first_of_other["job"] == "other" and first_of_other["mode"] == "full"
    # a full run refers only to its own files: every payload written in full, none a revisit of news'
    assert first_of_other["revisits"] == 0 and first_of_other["urls_fetched"] > 5
    assert any("no full run yet" in note for note in first_of_other["notes"])

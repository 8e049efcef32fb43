"""The console's job editor as staff use it: fields in groups (every row of the job table in one),
durations and sizes as people write them, a collection picker, errors beside their field, the
network guard explained at the seeds; and a saved job keeps its file as written (tomlkit)."""

from __future__ import annotations

import lxml.html

from harvester.job import JOB_SETTINGS, load_job_file
from replay.staff.forms import GROUPS, as_duration, as_size
from tests.support.staff_helpers import csrf_from, write_job

HAND_WRITTEN = """# Weekly check of the city's news (asked for by the reading room, 2024)
seeds = ["http://127.0.0.1:9/news/"]  # the listing, not the home page
min_interval = "7d"   # content pages at most weekly
max_interval = "30d"
depth = 2
"""


def test_every_setting_is_in_one_group():
    names = [n for _, _, _, group in GROUPS for n in group]
    assert sorted(names) == sorted(s.name for s in JOB_SETTINGS) and len(names) == len(set(names))
    assert [g[0] for g in GROUPS] == ["basics", "scope", "politeness", "incremental", "capture", "advanced"]
    assert as_duration(604800.0) == "7d" and as_duration(90.0) == "90s" and as_duration(5400.0) == "90m"
    assert (
        as_size(100 * 10**6) == "100MB" and as_size(2**30) == "1GB" if 2**30 % 10**9 == 0 else as_size(2**30) == "1GiB"
    )


def _form(html: str) -> dict:
    doc = lxml.html.fromstring(html)
    form = doc.get_element_by_id("job-form")
    values = dict(form.form_values())
    for box in form.xpath(".//input[@type='checkbox']"):
        if box.get("checked") is None:
            values.pop(box.get("name"), None)
    return values


def test_saving_keeps_the_file_as_written(staff, staff_root):
    (staff_root / "c" / "jobs").mkdir(parents=True)
    path = staff_root / "c" / "jobs" / "weekly.toml"
    path.write_text(HAND_WRITTEN)
    page = staff.get("/jobs/c/weekly/edit")
    doc = lxml.html.fromstring(page.text)
    assert doc.get_element_by_id("in-min_interval").get("value") == "7d"
    assert doc.get_element_by_id("in-max_resource_size").get("value") == "100MB"
    assert doc.get_element_by_id("group-incremental").get("open") is not None  # it holds changed fields
    assert doc.get_element_by_id("group-advanced").get("open") is None
    data = _form(page.text)
    data["depth"] = "3"  # back to the default: the line goes
    data["delay"] = "2"
    data["adaptive_max"] = "12w"
    assert staff.post("/jobs/c/weekly/edit", data=data).status_code == 302
    text = path.read_text()
    assert text.startswith("# Weekly check of the city's news")
    assert 'seeds = ["http://127.0.0.1:9/news/"]  # the listing, not the home page' in text
    assert 'min_interval = "7d"   # content pages at most weekly' in text and 'max_interval = "30d"' in text
    assert "depth" not in text and "delay = 2" in text and 'adaptive_max = "12w"' in text
    job = load_job_file(path)
    assert (job.min_interval, job.adaptive_max, job.delay) == (7 * 86400.0, 12 * 7 * 86400.0, 2.0)


def test_a_new_job_picks_its_collection_and_errors_stand_by_their_field(staff, staff_root):
    write_job(staff_root, "existing", "daily", seeds=["http://127.0.0.1:9/"])
    page = staff.get("/jobs/new")
    doc = lxml.html.fromstring(page.text)
    assert doc.xpath('//select[@id="in-collection"]/option/@value') == ["", "existing"]
    guard = doc.get_element_by_id("network-guard").text_content()
    assert "--allow-network" in guard and "127.0.0.1/32" in guard  # what this console allows
    base = {"csrf_token": csrf_from(page.text), "name": "weekly", "seeds": "http://127.0.0.1:9/", "scope": "same-host",
            "robots": "obey", "default_page_kind": "index", "request_records": "changed"}  # fmt: skip
    bad = staff.post("/jobs/new", data={**base, "collection": "existing", "min_interval": "soon"})
    assert bad.status_code == 400
    field = lxml.html.fromstring(bad.text).get_element_by_id("field-min_interval")
    assert "invalid" in field.get("class") and "is not a duration" in field.text_content()
    assert field.xpath(".//input/@aria-invalid") == ["true"]
    assert staff.post("/jobs/new", data={**base, "collection": "existing"}).status_code == 302
    assert (staff_root / "existing" / "jobs" / "weekly.toml").is_file()
    assert staff.post("/jobs/new", data={**base, "collection": "", "new_collection": "fresh"}).status_code == 302
    assert (staff_root / "fresh" / "jobs" / "weekly.toml").is_file()
    none = staff.post("/jobs/new", data={**base, "collection": "", "new_collection": ""})
    assert none.status_code == 400 and "invalid" in lxml.html.fromstring(none.text).get_element_by_id(
        "field-collection"
    ).get("class")


def test_a_private_seed_is_refused_with_the_way_to_allow_it(staff):
    page = staff.get("/jobs/new")
    data = {"csrf_token": csrf_from(page.text), "collection": "", "new_collection": "intranet", "name": "wiki",
            "seeds": "http://10.1.2.3/wiki/", "scope": "same-host", "robots": "obey", "default_page_kind": "index",
            "request_records": "changed"}  # fmt: skip
    refused = staff.post("/jobs/new", data=data)
    assert refused.status_code == 400
    field = lxml.html.fromstring(refused.text).get_element_by_id("field-seeds")
    assert "invalid" in field.get("class") and "--allow-network" in field.text_content()

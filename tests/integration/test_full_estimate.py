"""A strategy run's "full harvest" estimate counts the pages it skipped, at their last known size,
and ``strata report`` and the console's storage chart show the same figure."""

from __future__ import annotations

import json

import lxml.html
import pytest

from demo.sample_site import SampleSite, serve_sample_site
from replay.staff.charts import human_bytes
from tests.integration.test_jobs_apart import strata, write_job_file

STRATEGY = {
    "index_patterns": list(SampleSite.INDEX_PATTERNS),
    "content_patterns": list(SampleSite.CONTENT_PATTERNS),
    "min_interval": "7d",
}


@pytest.mark.slow
def test_the_estimate_counts_skipped_pages_in_the_report_and_the_chart(staff, staff_root):
    with serve_sample_site(1) as site:
        write_job_file(staff_root, "c", "news", site.base_url + "/", **STRATEGY)
        for _ in range(2):  # the same site twice: the second run skips every content page
            strata(staff_root, "harvest", "c", "--job", "news")
    report = json.loads(strata(staff_root, "report", "c", "--json").stdout)
    full, incremental = report["runs"]
    assert (full["mode"], incremental["mode"]) == ("full", "incremental")
    assert incremental["skipped"] >= 10
    naive = incremental["bytes_stored"] + incremental["bytes_saved"]
    # nothing changed: a full harvest now would store about what the full run stored
    assert 0.9 * full["bytes_stored"] <= incremental["full_estimate"] <= 1.1 * full["bytes_stored"]
    assert naive < 0.8 * full["bytes_stored"]  # the pages skipped are what was missing
    assert incremental["vs_estimate"] == round(incremental["bytes_stored"] / incremental["full_estimate"], 4)
    # nothing skipped, no revisit: what the full run stored before its report (the last record, h/history)
    assert 0.95 * full["bytes_stored"] < full["full_estimate"] < full["bytes_stored"]

    html = staff.get("/jobs/c/news").text
    for r in (full, incremental):
        assert (
            f"run {r['run_id']} ({r['mode']}): a full harvest would have stored {human_bytes(r['full_estimate'])}"
        ) in html
    page = lxml.html.fromstring(html)
    chart = page.cssselect("#chart-storage svg")[0]
    full_bars = [float(rect.get("height")) for rect in chart.cssselect("rect.bar-full")]
    stored_bars = [float(rect.get("height")) for rect in chart.cssselect("rect.bar-stored")]
    assert full_bars[1] / stored_bars[0] == pytest.approx(incremental["full_estimate"] / full["bytes_stored"], abs=0.01)
    cells = [tr.cssselect("td.num")[-1].text for tr in page.cssselect("#runs tr")[1:]]
    assert cells == [human_bytes(r["full_estimate"]) for r in (incremental, full)]  # newest first
    text = strata(staff_root, "report", "c").stdout
    assert f"{human_bytes(incremental['full_estimate'])}".replace("kB", "KB") in text

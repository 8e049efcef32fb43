"""Per-site change rates recorded with each run, shown by ``strata report`` run by run, and used by
``frequency = "adaptive"``: the scheduler (its clock injected) queues a job sooner after runs that
saw many pages change than after runs that saw none."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest

from demo.sample_site import SampleSite, serve_sample_site
from harvester.change_rates import adaptive_interval, pooled_rate
from harvester.job import validate_job
from harvester.jobs.queue import SQLiteQueue
from harvester.jobs.scheduler import Scheduler
from harvester.schedule import PageKinds
from index.collection import Collection
from index.storage.state import HarvestState
from strata.errors import ConfigError
from tests.integration.test_jobs_apart import strata, write_job_file

KINDS = {
    "index_patterns": list(SampleSite.INDEX_PATTERNS),
    "content_patterns": list(SampleSite.CONTENT_PATTERNS),
    "noise_selectors": list(SampleSite.NOISE_SELECTORS),
    "recheck_all": True,
}


def test_each_run_records_what_share_of_each_kind_of_page_changed(tmp_path):
    root = tmp_path / "collections"
    with serve_sample_site(1) as site:
        write_job_file(root, "c", "news", site.base_url + "/", **KINDS)
        strata(root, "harvest", "c", "--job", "news")
        site.version = 2
        strata(root, "harvest", "c", "--job", "news")
    report = json.loads(strata(root, "report", "c", "--json").stdout)
    first, second = report["runs"]
    rows = [r for r in report["change_rates"] if r["run_id"] == second["run_id"]]
    assert len(rows) == 1 and rows[0]["job"] == "news"
    assert not [r for r in report["change_rates"] if r["run_id"] == first["run_id"]]  # nothing checked again

    # the generator's truth for the pages the second run checked again
    kinds = PageKinds(KINDS["index_patterns"], KINDS["content_patterns"], "index", [site.base_url + "/"])
    truth = {"index": [0, 0], "content": [0, 0]}
    with HarvestState(root / "c" / "strata" / "harvest.sqlite") as state:
        for capture in state.captures(run_id=second["run_id"]):
            row = state.url(capture["url"])
            if not row["page_kind"] or capture["class"] in ("new", "error"):
                continue
            assert row["page_kind"] == kinds.kind(capture["url"])
            kind = SampleSite.change_kind(1, 2, urlsplit(capture["url"]).path)
            truth[row["page_kind"]][0] += 1
            truth[row["page_kind"]][1] += kind in ("changed", "deleted")
    got = rows[0]
    assert truth["index"][0] >= 3 and truth["content"][0] >= 10
    for kind in ("index", "content"):
        assert (got[kind]["checked"], got[kind]["changed"]) == tuple(truth[kind]), kind
        assert got[kind]["share_changed"] == round(truth[kind][1] / truth[kind][0], 4)
    assert 0 < got["content"]["changed"] < got["content"]["checked"]

    text = strata(root, "report", "c").stdout
    line = [ln for ln in text.splitlines() if ln.startswith(second["run_id"]) and "%)" in ln]
    assert line and f"{truth['content'][1]}/{truth['content'][0]}" in line[0]


# -- adaptive frequency -------------------------------------------------------------------------------

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def history(root, collection: str, job: str, changed: int, checked: int = 100, runs: int = 3) -> None:
    """A job's past runs, a week apart, each having checked ``checked`` pages of which ``changed`` had
    changed (as ``harvester.run_end`` records them)."""
    coll = Collection.open(root, collection, create=True)
    coll.job_path(job).write_text(
        validate_job(
            job,
            {"seeds": ["http://example.org/"], "frequency": "adaptive", "adaptive_min": "1d", "adaptive_max": "60d"},
        ).to_toml()
    )
    with HarvestState(coll.db_path) as state:
        for i in range(runs):
            started = T0 - timedelta(days=7 * (runs - 1 - i), hours=1)
            run_id = f"{started:%Y%m%d%H%M%S}-{job[:4]}"
            state.begin_run(run_id, job, "incremental", _iso(started), 1)
            rates = {"example.org": {"content": {"checked": checked, "changed": changed, "interval_days": 7.0}}}
            state.update_run(
                run_id,
                status="finished",
                finished=_iso(started + timedelta(minutes=5)),
                figures={"change_rates": rates},
            )


def first_queued(scheduler: Scheduler, clock: Clock, queue: SQLiteQueue, days: int = 70) -> dict[str, float]:
    """Tick hourly for ``days``; when (days after T0) each job was first queued."""
    seen: dict[str, float] = {}
    for hour in range(days * 24):
        clock.now = T0 + timedelta(hours=hour)
        for queued in scheduler.tick().queued:
            seen.setdefault(queued.job, hour / 24)
        while (entry := queue.claim("w", now=clock.now)) is not None:
            queue.finish(entry.id, "finished", now=clock.now)
    return seen


@pytest.mark.slow
def test_an_adaptive_job_comes_back_sooner_after_runs_that_saw_changes(tmp_path):
    root = tmp_path / "collections"
    history(root, "c", "busy", changed=40)  # 40% of pages changed in a week
    history(root, "c", "some", changed=5)
    history(root, "c", "calm", changed=0)
    queue = SQLiteQueue.for_root(root)
    clock = Clock(T0)
    try:
        seen = first_queued(Scheduler(root, queue, clock), clock, queue)
    finally:
        queue.close()
    # the rule: the interval at which the expected share of changed pages reaches adaptive_target (0.1)
    rate_busy = -math.log((100 - 40 + 0.5) / 100.5) / 7  # per day, Cho and Garcia-Molina
    rate_some = -math.log((100 - 5 + 0.5) / 100.5) / 7
    last_run = -1 / 24  # the last run started an hour before T0
    assert seen["busy"] == pytest.approx(last_run + -math.log(0.9) / rate_busy, abs=1 / 24)
    assert seen["some"] == pytest.approx(last_run + -math.log(0.9) / rate_some, abs=1 / 24)
    assert seen["calm"] == pytest.approx(last_run + 60, abs=1 / 24)  # never a change: adaptive_max
    assert seen["busy"] < seen["some"] < seen["calm"]


def test_adaptive_bounds_and_a_job_with_no_history(tmp_path):
    root = tmp_path / "collections"
    history(root, "c", "churn", changed=100)  # every page changed: held at adaptive_min
    write_job_file(root, "c", "new", "http://example.org/", frequency="adaptive")
    queue = SQLiteQueue.for_root(root)
    clock = Clock(T0)
    try:
        seen = first_queued(Scheduler(root, queue, clock), clock, queue, days=3)
    finally:
        queue.close()
    assert seen["new"] == 0  # never run: due at once
    assert seen["churn"] == pytest.approx(1 - 1 / 24, abs=1 / 24)
    assert pooled_rate([]) is None and adaptive_interval(None, 0.1, 3600, 7200) == 3600
    with pytest.raises(ConfigError, match="adaptive_min"):
        validate_job("x", {"seeds": ["http://example.org/"], "adaptive_min": "9d", "adaptive_max": "1d"})

"""The scheduler with an injected clock: due jobs queued once, missed slots collapsed, state kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from harvester.frequency import add_months, check_frequency, next_slot
from harvester.job import validate_job
from harvester.jobs.queue import open_queue
from harvester.jobs.scheduler import Scheduler, set_paused
from index.collection import Collection
from index.storage.state import HarvestState
from strata.errors import ConfigError

T0 = datetime(2024, 1, 31, 10, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


def write_job(root, collection: str, name: str, **fields) -> None:
    coll = Collection.open(root, collection, create=True)
    job = validate_job(name, {"seeds": ["http://example.org/"], **fields})
    coll.job_path(name).write_text(job.to_toml())


@pytest.fixture
def env(tmp_path, backend):
    root = tmp_path / "collections"
    root.mkdir()
    queue = open_queue(root)
    clock = Clock(T0)
    yield root, queue, clock, Scheduler(root, queue, clock)
    queue.close()


def finish_all(queue, clock) -> None:
    while (entry := queue.claim("w", now=clock())) is not None:
        queue.finish(entry.id, "finished", now=clock())


def test_interval_job_runs_when_due_and_not_before(env):
    root, queue, clock, scheduler = env
    write_job(root, "c", "news", frequency="daily")
    write_job(root, "c", "adhoc")  # manual: never scheduled
    first = scheduler.tick()
    assert [(q.collection, q.job, q.reason) for q in first.queued] == [("c", "news", "schedule")]
    finish_all(queue, clock)
    clock.advance(hours=23, minutes=59)
    assert scheduler.tick().queued == []
    clock.advance(minutes=1)
    assert len(scheduler.tick().queued) == 1
    assert queue.schedule("c", "news").next_due == T0 + timedelta(days=2)
    assert queue.schedule("c", "adhoc") is None


def test_after_downtime_a_missed_job_runs_once(env):
    root, queue, clock, scheduler = env
    write_job(root, "c", "news", frequency="hourly")
    scheduler.tick()
    finish_all(queue, clock)
    clock.advance(days=3, minutes=20)  # 72 missed hourly slots
    for _ in range(5):
        scheduler.tick()
    runs = queue.entries(job="news")
    assert len(runs) == 2
    assert queue.schedule("c", "news").next_due == T0 + timedelta(days=3, hours=1)  # keeps the :00 cadence


def test_a_job_still_running_is_not_queued_twice(env):
    root, queue, clock, scheduler = env
    write_job(root, "c", "news", frequency="hourly")
    scheduler.tick()
    queue.claim("w", now=clock())
    clock.advance(hours=1)
    result = scheduler.tick()
    assert result.queued == [] and "still running" in result.skipped[0][2]
    assert queue.schedule("c", "news").next_due == T0 + timedelta(hours=2)


def test_state_survives_a_restart(env, tmp_path):
    root, queue, clock, scheduler = env
    write_job(root, "c", "news", frequency="weekly")
    scheduler.tick()
    finish_all(queue, clock)
    reopened = open_queue(root)
    clock.advance(days=6)
    assert Scheduler(root, reopened, clock).tick().queued == []
    clock.advance(days=1)
    assert len(Scheduler(root, reopened, clock).tick().queued) == 1
    reopened.close()


def test_first_run_follows_the_last_harvest_of_the_job(env):
    root, queue, clock, scheduler = env
    write_job(root, "c", "news", frequency="daily")
    with HarvestState(Collection(root, "c").db_path) as state:
        state.begin_run("r1", "news", "full", "2024-01-31T02:00:00.000Z", 1)
    assert scheduler.tick().queued == []
    assert queue.schedule("c", "news").next_due == datetime(2024, 2, 1, 2, 0, tzinfo=UTC)


def test_pause_and_resume(env):
    root, queue, clock, scheduler = env
    write_job(root, "c", "news", frequency="daily")
    job = validate_job("news", {"seeds": ["http://example.org/"], "frequency": "daily"})
    set_paused(queue, "c", job, True)
    result = scheduler.tick()
    assert result.queued == [] and result.skipped == [("c", "news", "paused")]
    clock.advance(days=5)
    assert scheduler.tick().queued == []
    set_paused(queue, "c", job, False)
    assert len(scheduler.tick().queued) == 1


def test_cron_expressions_in_utc(env):
    root, queue, clock, scheduler = env
    write_job(root, "c", "nightly", frequency="0 3 * * *")
    assert scheduler.tick().queued == []
    assert queue.schedule("c", "nightly").next_due == datetime(2024, 2, 1, 3, 0, tzinfo=UTC)
    clock.now = datetime(2024, 2, 1, 3, 0, tzinfo=UTC)
    assert len(scheduler.tick().queued) == 1
    finish_all(queue, clock)
    clock.now = datetime(2024, 2, 6, 14, 0, tzinfo=UTC)  # five nights missed
    assert len(scheduler.tick().queued) == 1
    assert scheduler.tick().queued == []
    assert queue.schedule("c", "nightly").next_due == datetime(2024, 2, 7, 3, 0, tzinfo=UTC)


def test_changing_the_frequency_recomputes_the_next_time(env):
    root, queue, clock, scheduler = env
    write_job(root, "c", "news", frequency="weekly")
    scheduler.tick()
    finish_all(queue, clock)
    write_job(root, "c", "news", frequency="*/15 * * * *")
    scheduler.tick()
    assert queue.schedule("c", "news").next_due == datetime(2024, 1, 31, 10, 15, tzinfo=UTC)


def test_monthly_and_quarterly_follow_the_calendar():
    assert add_months(datetime(2024, 1, 31, tzinfo=UTC), 1) == datetime(2024, 2, 29, tzinfo=UTC)
    assert add_months(datetime(2024, 11, 15, tzinfo=UTC), 3) == datetime(2025, 2, 15, tzinfo=UTC)
    start = datetime(2024, 1, 15, tzinfo=UTC)
    assert next_slot("quarterly", start, datetime(2024, 9, 1, tzinfo=UTC)) == datetime(2024, 10, 15, tzinfo=UTC)
    assert next_slot("monthly", start, datetime(2024, 3, 15, tzinfo=UTC)) == datetime(2024, 4, 15, tzinfo=UTC)
    assert next_slot("daily", start, datetime(2024, 1, 20, 1, tzinfo=UTC)) == datetime(2024, 1, 21, tzinfo=UTC)


def test_bad_jobs_are_reported_not_fatal(env):
    root, queue, clock, scheduler = env
    write_job(root, "c", "good", frequency="daily")
    # a cron expression with no next time, written by hand: the job table refuses it, with the field
    Collection(root, "c").job_path("impossible").write_text(
        'seeds = ["http://example.org/"]\nfrequency = "61 * * * *"\n'
    )
    (Collection(root, "c").jobs_dir / "broken.toml").write_text("seeds = [")
    result = scheduler.tick()
    assert [q.job for q in result.queued] == ["good"]
    errors = {job: why for _, job, why in result.errors}
    assert "cron" in errors["impossible"] and "not valid TOML" in errors["broken"]
    with pytest.raises(ConfigError, match="field 'frequency'"):
        check_frequency("61 * * * *")
    check_frequency("*/5 1-3 * * 1,3")

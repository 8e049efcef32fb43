"""The persisted run queue: one run per job, one writer per collection, nothing lost on restart."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from harvester.jobs.queue import MAX_ATTEMPTS, ScheduleEntry, open_queue, worker_alive, worker_id
from strata.errors import ConfigError, HarvestError

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def queue(tmp_path, backend):
    q = open_queue(tmp_path)
    assert type(q).__name__ == {"sqlite": "SQLiteQueue", "redis": "RedisQueue"}[backend]
    yield q
    q.close()


def test_one_active_entry_per_job(queue):
    first, created = queue.enqueue("c", "news", "incremental", requested_by="ana", now=T0)
    assert created and first.status == "queued" and first.requested_by == "ana"
    again, created = queue.enqueue("c", "news", "full", now=T0)
    assert not created and again.id == first.id and again.mode == "incremental"
    other, created = queue.enqueue("c", "blog", now=T0)
    assert created and other.id != first.id
    with pytest.raises(ConfigError, match="run mode"):
        queue.enqueue("c", "x", "sideways")


def test_claim_takes_oldest_and_keeps_one_run_per_collection(queue):
    a, _ = queue.enqueue("c1", "a", now=T0)
    b, _ = queue.enqueue("c1", "b", now=T0)
    c, _ = queue.enqueue("c2", "c", now=T0)
    first = queue.claim("w1", now=T0)
    assert first.id == a.id and first.status == "running" and first.worker == "w1"
    second = queue.claim("w2", now=T0)
    assert second.id == c.id  # c1 is busy: b waits
    assert queue.claim("w3", now=T0) is None
    queue.finish(a.id, "finished", {"run_id": "r1", "new": 3}, now=T0)
    third = queue.claim("w1", now=T0)
    assert third.id == b.id
    done = queue.get(a.id)
    assert done.status == "finished" and done.run_id == "r1" and done.summary["new"] == 3
    # a finished job may be queued again
    assert queue.enqueue("c1", "a", now=T0)[1]


def test_a_worker_skips_the_collections_it_helps_a_shared_run_of(queue):
    a, _ = queue.enqueue("c1", "a", now=T0)
    b, _ = queue.enqueue("c2", "b", now=T0)
    assert queue.claim("w1", now=T0, skip=frozenset({"c1"})).id == b.id  # c1's entry is left for others
    assert queue.claim("w1", now=T0, skip=frozenset({"c1"})) is None
    assert queue.claim("w2", now=T0).id == a.id


def test_cancel_queued_and_running(queue):
    a, _ = queue.enqueue("c", "a", now=T0)
    assert queue.cancel(a.id).status == "cancelled"
    b, _ = queue.enqueue("c", "b", now=T0)
    queue.claim("w", now=T0)
    assert queue.heartbeat(b.id, "w", progress={"done": 1}) is False
    running = queue.cancel(b.id)
    assert running.status == "running" and running.cancel_requested
    assert queue.heartbeat(b.id, "w") is True
    queue.finish(b.id, "cancelled")
    assert queue.get(b.id).status == "cancelled"
    with pytest.raises(HarvestError):
        queue.cancel(999)


def test_heartbeat_records_progress_only_for_the_owner(queue):
    a, _ = queue.enqueue("c", "a", now=T0)
    queue.claim("w", now=T0)
    queue.heartbeat(a.id, "w", progress={"done": 5, "queued": 2}, run_id="20240501120000-ab", now=T0)
    queue.heartbeat(a.id, "intruder", progress={"done": 999})
    entry = queue.get(a.id)
    assert entry.progress == {"done": 5, "queued": 2} and entry.run_id == "20240501120000-ab"


def test_a_run_interrupted_by_a_restart_is_marked_and_retried(tmp_path, backend):
    """A worker process dies mid-run; the next worker finds the entry and queues it again."""
    queue = open_queue(tmp_path)
    entry, _ = queue.enqueue("c", "news", "full", requested_by="ana", now=T0)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    ghost = f"{worker_id().split(':')[0]}:{dead.stdout.strip()}:abcdef"
    assert worker_alive(ghost) is False and worker_alive(worker_id()) is True
    assert worker_alive("elsewhere.example:1:aa") is None
    queue.claim(ghost, now=T0)
    queue.close()

    queue = open_queue(tmp_path)  # "after the restart"
    marked = queue.recover(now=T0 + timedelta(seconds=1))
    assert [m.id for m in marked] == [entry.id]
    old = queue.get(entry.id)
    assert old.status == "interrupted" and "queued again" in old.error
    retry = queue.entries(statuses=("queued",))[0]
    assert (retry.retry_of, retry.attempt, retry.mode, retry.reason, retry.requested_by) == (
        entry.id,
        2,
        "full",
        "retry",
        "ana",
    )
    queue.close()


def test_stale_heartbeats_from_another_host_and_attempt_limit(queue):
    entry, _ = queue.enqueue("c", "a", now=T0)
    queue.claim("elsewhere.example:42:aa", now=T0)
    assert queue.recover(now=T0 + timedelta(seconds=30), stale_after=60) == []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        marked = queue.recover(now=T0 + timedelta(seconds=61 * attempt), stale_after=60)
        assert len(marked) == 1
        if attempt < MAX_ATTEMPTS:
            assert (
                queue.claim("elsewhere.example:42:aa", now=T0 + timedelta(seconds=61 * attempt)).attempt == attempt + 1
            )
    assert "not retried" in queue.get(marked[0].id).error
    assert queue.entries(statuses=("queued", "running")) == []


def test_a_live_local_worker_is_trusted_longer_than_a_silent_remote_one(queue):
    entry, _ = queue.enqueue("c", "a", now=T0)
    queue.claim(worker_id(), now=T0)  # this very process: alive
    assert queue.stale(now=T0 + timedelta(seconds=120), stale_after=60) == []
    assert [e.id for e in queue.stale(now=T0 + timedelta(seconds=601), stale_after=60)] == [entry.id]


def test_cancel_requested_runs_are_not_retried(queue):
    entry, _ = queue.enqueue("c", "a", now=T0)
    queue.claim("w", now=T0)
    queue.cancel(entry.id)
    queue.interrupt(entry.id, "worker stopped")
    assert queue.entries(statuses=("queued",)) == []


def test_schedule_rows_and_forgetting_a_job(queue):
    assert queue.schedule("c", "a") is None
    queue.save_schedule(ScheduleEntry("c", "a", "daily", T0, None, False))
    queue.save_schedule(ScheduleEntry("c", "a", "daily", T0 + timedelta(days=1), T0, True))
    row = queue.schedule("c", "a")
    assert (row.next_due, row.last_queued, row.paused) == (T0 + timedelta(days=1), T0, True)
    queued, _ = queue.enqueue("c", "a", now=T0)
    queue.forget_job("c", "a")
    assert queue.schedule("c", "a") is None and queue.get(queued.id).status == "cancelled"


def test_unknown_backend_is_named(tmp_path):
    with pytest.raises(ConfigError, match="unknown queue backend 'mongo'"):
        open_queue(tmp_path, "mongo")


@pytest.fixture
def redis_queue(tmp_path, redis_url, monkeypatch):
    from harvester.jobs import redisqueue

    monkeypatch.setattr(redisqueue, "LOCK_SECONDS", 0.3)
    monkeypatch.setattr(redisqueue, "LOCK_WAIT", 0.3)
    q = redisqueue.RedisQueue(redis_url)
    yield q
    q.close()


def test_a_change_whose_queue_lock_expired_while_held_writes_nothing_and_says_so(redis_queue, monkeypatch):
    """A worker paused inside a claim (SIGSTOP, swapped out) past the lock's expiry: another may
    have taken the lock and the run meanwhile, so the claim writes nothing and is a
    BackendUnavailable (the worker waits and tries again), not a traceback at release."""
    from strata.errors import BackendUnavailable

    entry, _ = redis_queue.enqueue("c", "news", now=T0)
    reads = redis_queue._all

    def paused_read(*args, **kwargs):
        rows = reads(*args, **kwargs)
        time.sleep(0.6)  # the lock expires meanwhile
        return rows

    monkeypatch.setattr(redis_queue, "_all", paused_read)
    with pytest.raises(BackendUnavailable, match="expired while this process held it"):
        redis_queue.claim("w1", now=T0)
    monkeypatch.undo()
    assert redis_queue.get(entry.id).status == "queued"  # nothing written
    assert redis_queue.claim("w2", now=T0).worker == "w2"  # and the next change goes through


def test_a_queue_lock_held_elsewhere_past_the_wait_is_a_clear_error(redis_queue, redis_url):
    from harvester.jobs import redisqueue
    from index.storage import redisdb
    from strata.errors import BackendUnavailable

    other = redisdb.connect(redis_url)
    held = other.lock(redisqueue.LOCK, timeout=5.0)
    assert held.acquire(blocking=False)
    try:
        with pytest.raises(BackendUnavailable, match="stayed taken"):
            redis_queue.enqueue("c", "news", now=T0)
    finally:
        held.release()
        other.close()
    assert redis_queue.enqueue("c", "news", now=T0)[1]

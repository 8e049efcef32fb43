"""The run page's figures once a run has ended come from its summary, not its last heartbeat."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from harvester.jobs.queue import QueuedRun
from replay.staff.runs import progress_view


def entry(progress: dict, summary: dict, status: str) -> QueuedRun:
    start = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    return QueuedRun(
        id=1,
        collection="c",
        job="j",
        mode="full",
        status=status,
        reason="staff",
        requested_by="ana",
        queued_at=start,
        started_at=start,
        finished_at=start + timedelta(seconds=2) if summary else None,
        worker="w",
        heartbeat=start,
        cancel_requested=False,
        attempt=1,
        retry_of=None,
        run_id="r",
        progress=progress,
        summary=summary,
        error=None,
    )


def test_a_run_that_ended_between_heartbeats_shows_its_final_count():
    # the last heartbeat came one second into a two-second run: one URL handed out then
    view = progress_view(
        entry({"done": 1, "queued": 40, "urls_fetched": 1}, {"requests": 51, "urls_fetched": 51}, "finished")
    )
    assert (view["done"], view["urls_fetched"], view["queued"], view["final"]) == (51, 51, 0, True)


def test_a_running_run_shows_its_last_heartbeat():
    view = progress_view(entry({"done": 7, "queued": 40, "urls_fetched": 6}, {}, "running"))
    assert (view["done"], view["queued"], view["final"]) == (7, 40, False)

"""``strata backend copy``, the root part: every queue entry (history included) and every job
schedule from one ``RunQueue`` to another, under the same ids; counts to compare after."""

from __future__ import annotations

from harvester.jobs.queue_model import RunQueue


def copy_queue(source: RunQueue, target: RunQueue) -> dict[str, tuple[int, int]]:
    entries = source.entries(limit=10**9)
    for entry in reversed(entries):  # oldest first
        target.put_entry(entry)
    schedules = source.schedules()
    for schedule in schedules:
        target.save_schedule(schedule)
    held = {e.id for e in target.entries(limit=10**9)}
    have = {(s.collection, s.job) for s in target.schedules()}
    return {
        "queue entries": (len(entries), sum(e.id in held for e in entries)),
        "schedules": (len(schedules), sum((s.collection, s.job) in have for s in schedules)),
    }

"""Who started a harvest run: the scheduler, a staff member in the console (both through the run
queue and the worker), or ``strata harvest`` on the command line (no queue entry); a run made of
another tool's files came with ``strata import``."""

from __future__ import annotations

from pathlib import Path

from harvester.jobs.queue import QueuedRun, RunQueue, open_queue
from index.capture.rebuild import IMPORTED_MODE
from index.collection import root_state_dir

COMMAND_LINE = "command line"
IMPORT = "import"  # a run made of another tool's files by ``strata import`` (or a rebuild of them)


def started_by(entry: QueuedRun | None, mode: str | None = None) -> str:
    """``mode``: the run's (an ``imported`` run without a queue entry came with ``strata import``)."""
    if entry is None:
        return IMPORT if mode == IMPORTED_MODE else COMMAND_LINE
    if entry.reason == "schedule":
        return "scheduler"
    return f"console ({entry.requested_by})" if entry.requested_by else "console"


def queue_entries_by_run(queue: RunQueue, collection: str | None = None) -> dict[tuple[str, str], QueuedRun]:
    """(collection, run id) -> the queue entry that ran it."""
    return {(e.collection, e.run_id): e for e in queue.entries(collection=collection, limit=100_000) if e.run_id}


def run_origins(root: Path, collection: str) -> dict[str, str]:
    """run id -> who started it, for the runs the root's queue knows; {} when there is no queue yet
    (nothing is created: a root without the console has none)."""
    if not (root_state_dir(root) / "queue.sqlite").is_file():
        return {}
    queue = open_queue(root)
    try:
        return {run_id: started_by(e) for (_, run_id), e in queue_entries_by_run(queue, collection).items()}
    finally:
        queue.close()

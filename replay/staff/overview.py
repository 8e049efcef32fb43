"""Every harvest run the collections hold, whoever started it: the console's worker (queued by staff
or the scheduler) or ``strata harvest`` on the command line (a job, or ``--seed`` URLs of no job).

The collection databases are the record of runs; the run queue only says who asked for those the
worker ran. Read-only: nothing here creates a collection or a database.
"""

from __future__ import annotations

from pathlib import Path

from harvester.jobs.origin import queue_entries_by_run, started_by
from harvester.jobs.queue import RunQueue
from index.collection import Collection, list_known_collections
from index.storage.state import open_readonly
from index.storage.state import runs as runs_of


def collection_runs(root: Path, collection: str) -> list[dict]:
    """A collection's runs, newest first, figures decoded ([] when it has no database yet)."""
    conn = open_readonly(Collection(root, collection).db_path)
    if conn is None:
        return []
    try:
        return runs_of(conn)
    finally:
        conn.close()


def all_runs(root: Path, queue: RunQueue, limit: int = 200) -> list[dict]:
    """Every collection's runs, newest first, each with its collection, its job (None for a run of
    no job) and who started it; ``entry_id`` links it to its queue entry when the worker ran it."""
    entries = queue_entries_by_run(queue)
    out = []
    for collection in list_known_collections(root):
        for run in collection_runs(root, collection):
            entry = entries.get((collection, run["run_id"]))
            out.append(
                {
                    **run,
                    "collection": collection,
                    "started_by": started_by(entry, run.get("mode")),
                    "entry_id": entry.id if entry else None,
                }
            )
    out.sort(key=lambda r: (r["started"] or "", r["run_id"]), reverse=True)
    return out[:limit]


def collections_overview(root: Path, runs: list[dict], jobs_by_collection: dict[str, int]) -> list[dict]:
    """Per collection (harvested into or holding jobs): its jobs, its runs (``all_runs``' rows), how
    many of them belong to no job, and its latest run."""
    out = []
    for collection in list_known_collections(root):
        mine = [r for r in runs if r["collection"] == collection]
        out.append(
            {
                "collection": collection,
                "jobs": jobs_by_collection.get(collection, 0),
                "runs": len(mine),
                "no_job_runs": sum(1 for r in mine if r["job"] is None),
                "latest": mine[0] if mine else None,
            }
        )
    return out

"""Harvester: fetch seeds and the links they lead to, and write what comes back to WARC files.

``run.Harvest`` is a run's lifecycle; ``visit`` the path of one URL (through ``fetcher`` and
``recorder``); ``job`` the one table of job settings; ``jobs/`` runs harvests for machines (queue,
worker, scheduler) and sits above the rest (tests/unit/strata/test_layout.py)."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "browser",
    "change",
    "collection_report",
    "frequency",
    "guard",
    "job",
    "jobs",
    "login",
    "patch",
    "recovery",
    "run",
]

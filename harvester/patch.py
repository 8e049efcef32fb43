"""A patch: the resources QA found missing in a run's replay (``replay.qa``, queued by staff), captured
by a follow-up run of that run (``strata harvest COLL --patch RUN``, the console's "capture the
patch").

The follow-up is a run of its own, incremental, of the patched run's job (its file, as the run
recorded it; a run from ``--seed`` URLs is followed by one from the queued URLs), with
``patch_of = RUN`` among its figures: each queued URL is one request as an embed of the page
that asked for it (scope as embeds, ``embeds_offsite``; robots.txt, politeness, the decision and
the records as for every request), and nothing else: no seed, no recheck, no link followed (in
HTTP capture a patched stylesheet's own embeds come with it, as any stylesheet's do). Its
snapshot, the patched run's pages with what they lacked, is the run's own. Only the collection's
latest run can be patched: a later run's captures would come between the patched run's and its
patch in that snapshot.

The queue itself is QA's (``replay.qa.store``); the command reads it and takes off what the patch
captured.
"""

from __future__ import annotations

from dataclasses import dataclass

from harvester.job import JobSettings, load_job_file, validate_job
from index.collection import Collection
from index.storage.state import HarvestState
from strata.errors import ConfigError
from strata.urls import normalize_url


@dataclass(frozen=True)
class Patch:
    """What a follow-up run captures: ``run_id``'s queued resources, each (URL, the page that asked)."""

    run_id: str
    resources: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, run_id: str, queued: list[dict]) -> Patch:
        """From QA's queue (``{"url", "page", ...}`` items): each URL normalised, once; what is not an
        http(s) URL left out."""
        resources: dict[str, str] = {}
        for item in queued:
            url = normalize_url(str(item.get("url") or ""))
            if url is not None:
                resources.setdefault(url, normalize_url(str(item.get("page") or "")) or "")
        return cls(run_id, tuple(resources.items()))


def patch_job(collection: Collection, patch: Patch, overrides: dict) -> tuple[JobSettings, bool]:
    """The job the follow-up runs (with ``overrides``), and whether it is a run of no job (adhoc).
    ``ConfigError`` when the run cannot be patched: unknown, still running, not the latest, or
    nothing queued."""
    name = collection.name
    if not collection.db_path.is_file():
        raise ConfigError(f"collection {name!r} has no runs to patch")
    with HarvestState(collection.db_path) as state:
        run = state.run(patch.run_id)
        runs = state.runs()
    if run is None:
        raise ConfigError(f"no run {patch.run_id!r} in {name}; see: strata runs {name}")
    if run["status"] == "running":
        raise ConfigError(f"run {patch.run_id} of {name} is still running; patch it once it has ended")
    later = [r["run_id"] for r in runs if (r["started"] or "") > (run["started"] or "")]
    if later:
        raise ConfigError(
            f"run {patch.run_id} is not the latest run of {name} ({later[-1]} came after it): a patch now would "
            f"show that run's captures beside this one's; check the latest with strata qa {name} --run {later[-1]}"
        )
    if not patch.resources:
        raise ConfigError(
            f"nothing is queued for a patch of run {patch.run_id}; queue missing resources with "
            f"strata qa {name} --run {patch.run_id} --patch, or on the run's QA page"
        )
    # The run's seeds are the resources (whether it failed is whether none of them answered); the
    # harvest enqueues them as embeds of their pages, not as seeds.
    seeds = [url for url, _page in patch.resources]
    job_name = run["job"]
    if job_name and collection.job_path(job_name).is_file():
        return load_job_file(collection.job_path(job_name)).replace(**overrides, seeds=seeds), False
    return validate_job("patch", {**overrides, "seeds": seeds}), True

"""The collection report: per site, how often pages change and how many are due; per run, what it
fetched, stored and saved, per site the share of its pages of each kind that changed (over time,
run by run), how that compares with what a full harvest would have stored instead
(``index.storage.state.full_harvest_estimate``, the console's storage chart shows the same figure), and how
each incremental run compares with the last full run of the same job before it (another job's runs
harvest other sites: comparing with them says nothing). An imported run (another tool's files) has
no duration of its own: its start and end are its first and last capture."""

from __future__ import annotations

import collections
from datetime import UTC, datetime

from harvester.change_rates import KINDS
from harvester.schedule import due_at, parse_iso
from index.capture.rebuild import IMPORTED_MODE
from index.storage.state import HarvestState, full_harvest_estimate


def build_report(
    state: HarvestState, min_interval: float = 86400.0, max_interval: float = 90 * 86400.0, now: datetime | None = None
) -> dict:
    now = now or datetime.now(UTC)
    sites: dict[str, dict] = collections.defaultdict(
        lambda: {
            "urls": 0,
            "pages": 0,
            "index_pages": 0,
            "content_pages": 0,
            "checks": 0,
            "changes": 0,
            "deleted": 0,
            "due": 0,
            "rates": [],
        }
    )
    for row in state.known_urls():
        site = sites[row["host"] or "?"]
        site["urls"] += 1
        if row["page_kind"]:
            site["pages"] += 1
            site[f"{row['page_kind']}_pages"] = site.get(f"{row['page_kind']}_pages", 0) + 1
        site["checks"] += row["checks"] or 0
        site["changes"] += row["changes"] or 0
        site["deleted"] += 1 if row["deleted_at"] else 0
        if row["page_kind"] == "content" and not row["deleted_at"]:
            when, rate = due_at(row, min_interval, max_interval)
            site["rates"].append(rate)
            if when is None or when <= now:
                site["due"] += 1
    site_rows = []
    for host, site in sorted(sites.items()):
        rates = site.pop("rates")
        site_rows.append(
            {"site": host, **site, "change_rate_per_day": round(sum(rates) / len(rates), 4) if rates else 0.0}
        )

    runs = []
    last_full: dict[str | None, dict] = {}  # job (None: runs of no job) -> its last finished full run
    for run in state.runs():
        fig = run["figures"] or {}
        seconds = None
        if run["started"] and run["finished"] and run["mode"] != IMPORTED_MODE:
            seconds = (parse_iso(run["finished"]) - parse_iso(run["started"])).total_seconds()
        row = {
            "run_id": run["run_id"],
            "job": run["job"],
            "mode": run["mode"],
            "status": run["status"],
            "snapshot": run["snapshot"],
            "full_estimate": full_harvest_estimate(state.conn, run),
            "seconds": seconds,
            "requests": fig.get("requests") or 0,
            "urls_fetched": fig.get("urls_fetched") or 0,
            "bytes_downloaded": fig.get("bytes_downloaded") or 0,
            "bytes_stored": fig.get("bytes_stored") or 0,
            "bytes_saved": fig.get("bytes_saved") or 0,
            "skipped": fig.get("skipped") or 0,
            "failed_hosts": fig.get("failed_hosts") or [],
            **{
                k: fig.get(k) or 0
                for k in ("new", "changed", "soft", "unchanged", "not_modified", "deleted", "redirect", "errors")
            },
        }
        row["vs_estimate"] = _ratio(row["bytes_stored"], row["full_estimate"])
        full = last_full.get(run["job"])
        if run["mode"] == "full" and run["status"] == "finished":
            last_full[run["job"]] = row
        elif full is not None and run["mode"] == "incremental":
            row["vs_full"] = {
                "full_run": full["run_id"],
                "storage": _ratio(row["bytes_stored"], full["bytes_stored"]),
                "bandwidth": _ratio(row["bytes_downloaded"], full["bytes_downloaded"]),
                "requests": _ratio(row["requests"], full["requests"]),
                "time": _ratio(row["seconds"], full["seconds"]),
            }
        runs.append(row)
    return {"sites": site_rows, "runs": runs, "change_rates": change_rates_over_time(state.runs())}


def change_rates_over_time(runs: list[dict]) -> list[dict]:
    """Per run (oldest first) and site: the pages of each kind it checked again and how many had
    changed, as recorded when the run ended (``harvester.change_rates``)."""
    out = []
    for run in runs:
        for site, kinds in sorted(((run["figures"] or {}).get("change_rates") or {}).items()):
            row = {"run_id": run["run_id"], "job": run["job"], "snapshot": run["snapshot"], "site": site}
            for kind in KINDS:
                figures = kinds.get(kind) or {}
                checked, changed = figures.get("checked", 0), figures.get("changed", 0)
                row[kind] = {
                    "checked": checked,
                    "changed": changed,
                    "share_changed": round(changed / checked, 4) if checked else None,
                    "rate_per_day": figures.get("rate_per_day", 0.0) if checked else None,
                }
            out.append(row)
    return out


def _ratio(a, b) -> float | None:
    if a is None or not b:
        return None
    return round(a / b, 4)

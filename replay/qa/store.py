"""QA's files, one folder per run under ``collections/<c>/qa/<run id>/``; the one module that knows them.

- ``report.json``: the last QA of the run (``replay.qa.check``): per page what failed in replay and
  how close it came to its capture, and the run's summary. Derived: ``strata qa`` writes it again.
- ``reviews.json``: staff's review of pages (``good`` or ``bad``, a note, who and when), as
  Browsertrix keeps a review status beside its QA. Staff's judgement: nothing rebuilds it.
- ``patch.json``: the resources staff queued for a follow-up capture of the same run (a "patch"):
  ``{"run": ..., "urls": [{"url", "page", "kind", "queued", "by"}, ...]}``, each URL once. The
  harvest reads it (``read_patch``) when browser capture is wired in, fetches the URLs into the
  run's snapshot and clears what it captured (``clear_patch``).

Every file is written whole to a temporary name and renamed over the old one, so a reader never
sees half a file.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from index.collection import Collection
from strata.errors import ConfigError
from strata.times import iso, utc_now

REVIEWS = ("good", "bad")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def run_dir(collection: Collection, run_id: str) -> Path:
    if not _RUN_ID.match(run_id) or ".." in run_id:
        raise ConfigError(f"{run_id!r} is not a run id")
    return collection.path / "qa" / run_id


def _read(path: Path, default):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} is not readable QA data ({exc}); delete it to start again") from None


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def write_report(collection: Collection, run_id: str, report: dict) -> Path:
    path = run_dir(collection, run_id) / "report.json"
    _write(path, report)
    return path


def read_report(collection: Collection, run_id: str) -> dict | None:
    return _read(run_dir(collection, run_id) / "report.json", None)


def reviews(collection: Collection, run_id: str) -> dict[str, dict]:
    return _read(run_dir(collection, run_id) / "reviews.json", {})


def review(collection: Collection, run_id: str, page: str, status: str | None, note: str = "", by: str = "") -> None:
    """Set (``good`` or ``bad``) or clear (None) staff's review of one page of the run."""
    if status is not None and status not in REVIEWS:
        raise ConfigError(f"a review is {' or '.join(REVIEWS)}, not {status!r}")
    found = reviews(collection, run_id)
    if status is None:
        found.pop(page, None)
    else:
        found[page] = {"status": status, "note": note[:2000], "by": by, "at": iso(utc_now())}
    _write(run_dir(collection, run_id) / "reviews.json", found)


def read_patch(collection: Collection, run_id: str) -> list[dict]:
    """The resources queued for a follow-up capture of the run, oldest first."""
    return list(_read(run_dir(collection, run_id) / "patch.json", {}).get("urls", []))


def queue_patch(collection: Collection, run_id: str, items: list[dict], by: str = "") -> int:
    """Add resources (``{"url", "page", "kind"}``) to the run's patch; each URL once. Returns how
    many were new."""
    queued = read_patch(collection, run_id)
    known = {item["url"] for item in queued}
    now = iso(utc_now())
    added = 0
    for item in items:
        url = item.get("url") or ""
        if not url.startswith(("http://", "https://")) or url in known:
            continue
        known.add(url)
        queued.append(
            {"url": url, "page": item.get("page") or "", "kind": item.get("kind") or "", "queued": now, "by": by}
        )
        added += 1
    _write(run_dir(collection, run_id) / "patch.json", {"run": run_id, "urls": queued})
    return added


def clear_patch(collection: Collection, run_id: str, urls: set[str] | None = None) -> None:
    """Take ``urls`` (all of them: None) off the run's patch."""
    kept = [] if urls is None else [item for item in read_patch(collection, run_id) if item["url"] not in urls]
    _write(run_dir(collection, run_id) / "patch.json", {"run": run_id, "urls": kept})

"""Runs: the queue, a run's live progress page (polling a JSON endpoint once a second), cancel."""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Blueprint, abort, jsonify, redirect, render_template, url_for

from harvester.job import load_job_file
from harvester.jobs.queue import QueuedRun
from index.collection import Collection
from replay.staff import overview
from replay.staff.context import ext
from replay.staff.jobs import snapshot_url
from replay.staff.security import queue
from strata.errors import StrataError

bp = Blueprint("runs", __name__)

CLASSES = ("new", "changed", "soft", "unchanged", "not_modified", "deleted", "redirect", "errors")


def _entry_or_404(entry_id: int) -> QueuedRun:
    entry = queue().get(entry_id)
    if entry is None:
        abort(404, f"No run {entry_id} in the queue.")
    return entry


def _seed(entry: QueuedRun) -> str | None:
    try:
        return load_job_file(Collection(ext()["root"], entry.collection).job_path(entry.job)).seeds[0]
    except StrataError:
        return None


def progress_view(entry: QueuedRun) -> dict:
    """What the progress page shows, for the page itself and for its JSON endpoint."""
    figures = dict(entry.progress)
    if entry.summary:
        figures.update(entry.summary)
    now = entry.finished_at or datetime.now(UTC)
    elapsed = (now - entry.started_at).total_seconds() if entry.started_at else 0.0
    fetched = figures.get("urls_fetched", 0)
    seed = _seed(entry) if entry.summary.get("snapshot") else None
    return {
        "id": entry.id,
        "collection": entry.collection,
        "job": entry.job,
        "mode": entry.mode,
        "status": entry.status,
        "reason": entry.reason,
        "attempt": entry.attempt,
        "requested_by": entry.requested_by,
        "cancel_requested": entry.cancel_requested,
        "queued_at": _iso(entry.queued_at),
        "started_at": _iso(entry.started_at),
        "finished_at": _iso(entry.finished_at),
        "error": entry.error,
        "run_id": entry.run_id,
        # a run's last heartbeat may be older than its end: once it ended, its summary says
        "done": entry.summary.get("requests", fetched) if entry.summary else figures.get("done", fetched),
        "queued": 0 if entry.summary else figures.get("queued", 0),
        "in_flight": 0 if entry.summary else figures.get("in_flight", 0),
        "urls_fetched": fetched,
        "classes": {c: figures.get(c, 0) for c in CLASSES},
        "bytes_downloaded": figures.get("bytes_downloaded", 0),
        "bytes_stored": figures.get("bytes_stored", 0),
        "elapsed": round(elapsed, 1),
        "rate": round(fetched / elapsed, 2) if elapsed > 0 else 0.0,
        "byte_rate": round(figures.get("bytes_downloaded", 0) / elapsed) if elapsed > 0 else 0,
        "recent_errors": _errors(figures.get("recent_errors") or []),
        "snapshot": entry.summary.get("snapshot"),
        "snapshot_url": snapshot_url(entry.collection, entry.summary.get("snapshot"), seed) if seed else None,
        "final": entry.status in ("finished", "failed", "cancelled", "interrupted"),
    }


def _errors(items) -> list[dict]:
    out = []
    for item in items[-10:]:
        if isinstance(item, dict):
            out.append({"url": str(item.get("url", "")), "error": str(item.get("error", ""))})
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            out.append({"url": str(item[0]), "error": str(item[1])})
    return out


def _iso(dt: datetime | None) -> str | None:
    return dt.strftime("%Y-%m-%d %H:%M:%S") if dt else None


@bp.get("/runs")
def index():
    return render_template(
        "staff/runs.html", entries=queue().entries(limit=100), harvests=overview.all_runs(ext()["root"], queue())
    )


@bp.get("/runs/<int:entry_id>")
def show(entry_id: int):
    entry = _entry_or_404(entry_id)
    return render_template("staff/run.html", entry=entry, view=progress_view(entry), classes=CLASSES)


@bp.get("/api/runs/<int:entry_id>")
def api_show(entry_id: int):
    return jsonify(progress_view(_entry_or_404(entry_id)))


@bp.post("/runs/<int:entry_id>/cancel")
def cancel(entry_id: int):
    _entry_or_404(entry_id)
    queue().cancel(entry_id)
    return redirect(url_for("runs.show", entry_id=entry_id))

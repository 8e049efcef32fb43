"""QA of a run in the console: its last report (``strata qa``, ``replay.qa``), a check started in the
background, staff's review of each page, and the patch queue (the missing resources staff choose
for a follow-up capture of the run), captured in the background (``strata harvest --patch``,
``harvester.patch``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flask import Blueprint, abort, g, redirect, render_template, request, url_for

from index.collection import Collection
from replay.qa import store
from replay.qa.check import patch_candidates
from replay.staff.context import ext
from strata.errors import StrataError

bp = Blueprint("qa", __name__)

CHECK_LOG = "check.log"
CHECK_PID = "check.pid"
PATCH_LOG = "patch.log"
PATCH_PID = "patch.pid"


def _collection(name: str) -> Collection:
    try:
        return Collection.open(ext()["root"], name)
    except StrataError:
        abort(404, f"No collection {name!r}.")


def _run_dir(coll: Collection, run_id: str) -> Path:
    try:
        return store.run_dir(coll, run_id)
    except StrataError:
        abort(404, f"No run {run_id!r}.")


def _running(folder: Path, pid_file: str = CHECK_PID) -> bool:
    """A command started from here (a check, a patch capture) is still running."""
    try:
        pid = int((folder / pid_file).read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _start(folder: Path, command: list[str], log_file: str, pid_file: str) -> None:
    """``strata COMMAND ... --root ROOT`` in the background, its output in ``log_file``."""
    folder.mkdir(parents=True, exist_ok=True)
    command = [str(Path(sys.executable).parent / "strata"), *command, "--root", str(ext()["root"])]
    with open(folder / log_file, "wb") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    (folder / pid_file).write_text(str(proc.pid))


@bp.get("/qa/<collection>/<run_id>")
def show(collection: str, run_id: str):
    coll = _collection(collection)
    folder = _run_dir(coll, run_id)
    report = store.read_report(coll, run_id)
    candidates = patch_candidates(report) if report else []
    queued = {item["url"] for item in store.read_patch(coll, run_id)}
    return render_template(
        "staff/qa.html",
        collection=collection,
        run_id=run_id,
        report=report,
        reviews=store.reviews(coll, run_id),
        patch=store.read_patch(coll, run_id),
        candidates=[c for c in candidates if c["url"] not in queued],
        checking=_running(folder),
        patching=_running(folder, PATCH_PID),
        archive_url=ext()["settings"]["archive_url"],
    )


@bp.post("/qa/<collection>/<run_id>/check")
def check(collection: str, run_id: str):
    """Start ``strata qa`` for the run in the background; its report replaces the last one."""
    coll = _collection(collection)
    folder = _run_dir(coll, run_id)
    if not _running(folder):
        command = ["qa", collection, "--run", run_id]
        for selector in request.form.getlist("click"):
            if selector.strip():
                command += ["--click", selector.strip()]
        _start(folder, command, CHECK_LOG, CHECK_PID)
    return redirect(url_for("qa.show", collection=collection, run_id=run_id))


@bp.post("/qa/<collection>/<run_id>/patch")
def patch(collection: str, run_id: str):
    """Queue the chosen missing resources (``url`` fields) for a patch capture of the run."""
    coll = _collection(collection)
    report = store.read_report(coll, run_id) or {}
    chosen = set(request.form.getlist("url"))
    items = [c for c in patch_candidates(report) if c["url"] in chosen]
    store.queue_patch(coll, run_id, items, by=g.user or "")
    return redirect(url_for("qa.show", collection=collection, run_id=run_id) + "#patch")


@bp.post("/qa/<collection>/<run_id>/capture-patch")
def capture_patch(collection: str, run_id: str):
    """Start ``strata harvest COLLECTION --patch RUN`` in the background: the queued resources captured
    by a follow-up run (``harvester.patch``); what it captured leaves the queue."""
    coll = _collection(collection)
    folder = _run_dir(coll, run_id)
    if store.read_patch(coll, run_id) and not _running(folder, PATCH_PID):
        _start(folder, ["harvest", collection, "--patch", run_id, "--wait-for-index"], PATCH_LOG, PATCH_PID)
    return redirect(url_for("qa.show", collection=collection, run_id=run_id) + "#patch")


@bp.post("/qa/<collection>/<run_id>/review")
def review(collection: str, run_id: str):
    coll = _collection(collection)
    status = request.form.get("status") or None
    store.review(coll, run_id, request.form.get("page", ""), status, request.form.get("note", ""), g.user or "")
    return redirect(url_for("qa.show", collection=collection, run_id=run_id) + "#pages")

"""Jobs: list, create, edit, pause/resume, delete (with confirmation), "Harvest now", and each job's
history with its charts. Job files under ``<root>/<collection>/jobs/`` are the source of truth."""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Blueprint, abort, g, redirect, render_template, request, url_for

from harvester.job import JOB_SETTINGS, SECRET_SETTINGS, JobSettings, load_job_file
from harvester.jobs.scheduler import iter_jobs, set_paused
from index.collection import Collection, check_name, list_collections
from index.storage.state import full_harvest_estimate, open_readonly
from index.storage.state import job_runs as job_runs_of
from replay.staff import charts, overview
from replay.staff.context import ext
from replay.staff.fixity import last_verifications
from replay.staff.forms import (
    CHOICES,
    FREQUENCY_SUGGESTIONS,
    field_of,
    fields_for,
    file_digest,
    groups_of,
    validate_and_raw,
    write_job,
)
from replay.staff.security import queue
from strata.errors import CollectionError, ConfigError, StrataError

bp = Blueprint("jobs", __name__)


@bp.get("/")
def home():
    return redirect(url_for("jobs.index"))


def _job_or_404(collection: str, name: str) -> tuple[Collection, JobSettings]:
    try:
        coll = Collection.open(ext()["root"], collection)
        path = coll.job_path(name)
    except CollectionError:
        abort(404, f"No collection {collection!r}.")
    if not path.is_file():
        abort(404, f"No job {name!r} in collection {collection!r}.")
    try:
        return coll, load_job_file(path)
    except StrataError as exc:
        abort(409, f"The job file {collection}/jobs/{name}.toml cannot be used: {exc.message}. Fix it on disk.")


def snapshot_url(collection: str, snapshot: str | None, seed: str) -> str | None:
    base = ext()["settings"]["archive_url"]
    if not snapshot or not base:
        return None
    return f"{base}/{collection}/{snapshot}/{seed}"


@bp.get("/jobs")
def index():
    rows = []
    active = {(e.collection, e.job): e for e in queue().entries(statuses=("queued", "running"), limit=1000)}
    runs = overview.all_runs(ext()["root"], queue(), limit=100_000)
    last_runs: dict[tuple[str, str], dict] = {}
    for run in runs:  # newest first: the first seen is the last run
        if run["job"] is not None and run["status"] != "running":
            last_runs.setdefault((run["collection"], run["job"]), run)
    jobs_by_collection: dict[str, int] = {}
    for collection, name, job in iter_jobs(ext()["root"]):
        jobs_by_collection[collection] = jobs_by_collection.get(collection, 0) + 1
        schedule = queue().schedule(collection, name)
        rows.append(
            {
                "collection": collection,
                "name": name,
                "job": job if isinstance(job, JobSettings) else None,
                "error": job.message if isinstance(job, ConfigError) else None,
                "schedule": schedule,
                "active": active.get((collection, name)),
                "last": last_runs.get((collection, name)),
            }
        )
    return render_template(
        "staff/jobs.html",
        rows=rows,
        collections=overview.collections_overview(ext()["root"], runs, jobs_by_collection),
        archive_url=ext()["settings"]["archive_url"],
        verifications=last_verifications(ext()["root"]),
    )


def _form_page(
    template_job: JobSettings | None,
    collection: str,
    name: str,
    is_new: bool,
    error: str | None = None,
    submitted: dict | None = None,
    digest: str = "",
    status: int = 200,
):
    fields = fields_for(template_job, submitted)
    error_field = field_of(error or "") or (_form_field_of(error) if error else None)
    return render_template(
        "staff/job_form.html",
        groups=groups_of(fields, error_field),
        collection=collection,
        name=name,
        is_new=is_new,
        error=error,
        error_field=error_field,
        allowed_networks=ext()["policy"].describe(),
        choices=CHOICES,
        suggestions=FREQUENCY_SUGGESTIONS,
        secrets=SECRET_SETTINGS,
        digest=digest,
        collections=list_collections(ext()["root"]),
    ), status


def _form_field_of(message: str) -> str | None:
    """The form's own fields (collection, job name) that a message is about."""
    for field, words in (("collection", "collection"), ("name", "job name")):
        if message.lower().startswith(words) or f"{words} name" in message.lower():
            return field
    return None


@bp.route("/jobs/new", methods=["GET", "POST"])
def new():
    if request.method == "GET":
        return _form_page(None, request.args.get("collection", ""), "", True)
    # the picker names an existing collection; the box beside it, a new one
    collection = request.form.get("new_collection", "").strip() or request.form.get("collection", "").strip()
    name = request.form.get("name", "").strip()
    try:
        if not collection:
            raise ConfigError("collection: choose one, or give the name of a new one")
        check_name(collection)
        if not name:
            raise ConfigError("job name: give the job a name, e.g. weekly")
        path = Collection(ext()["root"], collection).job_path(name)
        if path.exists():
            raise ConfigError(f"job name: collection {collection!r} already has a job {name!r}; edit it instead")
        job, raw = validate_and_raw(name, request.form, None, ext()["policy"])
    except StrataError as exc:
        return _form_page(None, collection, name, True, exc.message, request.form, status=400)
    coll = Collection.open(ext()["root"], collection, create=True)
    write_job(coll.job_path(name), job, raw)
    return redirect(url_for("jobs.show", collection=collection, name=name, notice="created"))


@bp.route("/jobs/<collection>/<name>/edit", methods=["GET", "POST"])
def edit(collection: str, name: str):
    coll, job = _job_or_404(collection, name)
    path = coll.job_path(name)
    if request.method == "GET":
        return _form_page(job, collection, name, False, digest=file_digest(path))
    try:
        if request.form.get("digest") != file_digest(path):
            raise ConfigError(
                "the job file changed on disk since this form was opened; reload it and redo your changes"
            )
        updated, raw = validate_and_raw(name, request.form, job, ext()["policy"])
    except StrataError as exc:
        return _form_page(job, collection, name, False, exc.message, request.form, file_digest(path), status=400)
    write_job(path, updated, raw)
    return redirect(url_for("jobs.show", collection=collection, name=name, notice="saved"))


@bp.post("/jobs/<collection>/<name>/pause")
def pause(collection: str, name: str):
    _, job = _job_or_404(collection, name)
    set_paused(queue(), collection, job, True)
    return redirect(url_for("jobs.show", collection=collection, name=name, notice="paused"))


@bp.post("/jobs/<collection>/<name>/resume")
def resume(collection: str, name: str):
    _, job = _job_or_404(collection, name)
    set_paused(queue(), collection, job, False)
    return redirect(url_for("jobs.show", collection=collection, name=name, notice="resumed"))


@bp.route("/jobs/<collection>/<name>/delete", methods=["GET", "POST"])
def delete(collection: str, name: str):
    coll, job = _job_or_404(collection, name)
    if request.method == "GET":
        return render_template("staff/job_delete.html", collection=collection, name=name, job=job)
    if request.form.get("confirm_name") != name:
        return render_template(
            "staff/job_delete.html", collection=collection, name=name, job=job, error="Type the job's name to confirm."
        ), 400
    path = coll.job_path(name)
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    path.rename(path.with_name(f"{name}.toml.deleted-{stamp}"))  # kept beside, out of the scheduler's sight
    queue().forget_job(collection, name)
    return redirect(url_for("jobs.index", notice="deleted"))


@bp.post("/jobs/<collection>/<name>/harvest")
def harvest(collection: str, name: str):
    _job_or_404(collection, name)
    mode = request.form.get("mode", "incremental")
    if mode not in ("incremental", "full", "auto"):
        abort(400, "mode must be incremental or full")
    entry, created = queue().enqueue(collection, name, mode, reason="manual", requested_by=g.user)
    return redirect(url_for("runs.show", entry_id=entry.id, notice=None if created else "already_active"))


@bp.get("/jobs/<collection>/<name>")
def show(collection: str, name: str):
    coll, job = _job_or_404(collection, name)
    runs = job_runs(coll, name)
    seed = job.seeds[0]
    for run in runs:
        run["snapshot_url"] = snapshot_url(collection, run["snapshot"], seed)
    entries = queue().entries(collection=collection, job=name, limit=20)
    by_run = {e.run_id: e for e in entries if e.run_id}
    for run in runs:
        entry = by_run.get(run["run_id"])
        run["entry_id"] = entry.id if entry else None
    secrets = {s: len(job.values[s]) for s in sorted(SECRET_SETTINGS)}
    shown = [
        (s.name, job.values[s.name])
        for s in JOB_SETTINGS
        if s.name not in SECRET_SETTINGS and job.values[s.name] != s.default or s.name == "seeds"
    ]
    return render_template(
        "staff/job.html",
        collection=collection,
        name=name,
        job=job,
        runs=runs,
        entries=entries,
        schedule=queue().schedule(collection, name),
        shown=shown,
        secrets=secrets,
        active=next((e for e in entries if e.active), None),
        storage_svg=charts.storage_chart(runs),
        classes_svg=charts.classes_chart(runs),
    )


def job_runs(coll: Collection, name: str) -> list[dict]:
    """The job's harvest runs, oldest first, with their figures (from the collection database)."""
    conn = open_readonly(coll.db_path)
    if conn is None:
        return []
    try:
        rows = job_runs_of(conn, name)
        estimates = [full_harvest_estimate(conn, run) for run in rows]  # as `strata report` says
    finally:
        conn.close()
    runs = []
    for run, estimate in zip(rows, estimates, strict=True):
        figures = run.pop("figures")
        run.update({k: v for k, v in figures.items() if k not in run})
        run["full_estimate"] = estimate
        runs.append(run)
    return runs

"""A collection's description in the console: ``/collections/<coll>``, one field per row of
``index.collection_meta.METADATA_FIELDS`` with its help, checked by the same code as ``strata
collection COLL set``; a field's error is shown next to it."""

from __future__ import annotations

from flask import Blueprint, abort, redirect, render_template, request, url_for

from index.collection import Collection, list_collections
from index.collection_meta import METADATA_FIELDS, read_metadata, update_metadata
from replay.staff.context import ext
from strata.errors import CollectionError, ConfigError

bp = Blueprint("describe", __name__)


def _collection(name: str) -> Collection:
    try:
        return Collection.open(ext()["root"], name)
    except CollectionError:
        abort(404, f"No collection {name!r}.")


@bp.get("/collections")
def index():
    root = ext()["root"]
    rows = [(name, read_metadata(Collection(root, name))) for name in list_collections(root)]
    return render_template("staff/collections.html", rows=rows, archive_url=ext()["settings"]["archive_url"])


@bp.route("/collections/<name>", methods=["GET", "POST"])
def edit(name: str):
    coll = _collection(name)
    values = read_metadata(coll)
    error, error_field, status = None, None, 200
    if request.method == "POST":
        changes = {f.name: request.form.get(f.name, "") for f in METADATA_FIELDS}
        try:
            update_metadata(coll, changes)
            return redirect(url_for("describe.edit", name=name, notice="described"))
        except ConfigError as exc:
            error, status = exc.message, 400
            error_field = exc.message.split("'")[1] if exc.message.startswith("field '") else None
            values = {**values, **changes}
    shown = {k: "; ".join(v) if isinstance(v, tuple) else v for k, v in values.items()}
    return render_template(
        "staff/collection.html",
        name=name,
        fields=METADATA_FIELDS,
        values=shown,
        error=error,
        error_field=error_field,
        archive_url=ext()["settings"]["archive_url"],
    ), status

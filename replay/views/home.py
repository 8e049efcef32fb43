"""The home page: every collection with its counts and latest harvest."""

from __future__ import annotations

from flask import Blueprint, render_template

from index.access.counts import VisibleCounts
from replay import access
from replay.context import ext
from replay.views.lasting import default_collection

bp = Blueprint("home", __name__)


@bp.get("/")
def index():
    collections = ext()["collections"]
    rows = []
    for name in collections.names():
        with collections.db(name) as conn:
            counts = VisibleCounts(conn, collections.rules(name), access.level()) if conn is not None else None
            info = counts.summary() if counts is not None else None
            seeds = counts.seeds() if counts is not None else []
        rows.append({"name": name, "summary": info, "seeds": seeds})
    return render_template("home/index.html", collections=rows, default_collection=default_collection())

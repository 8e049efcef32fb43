"""The home page: every collection with its counts and latest harvest."""

from __future__ import annotations

from flask import Blueprint, render_template

from index import state
from replay.context import ext
from replay.views.lasting import default_collection

bp = Blueprint("home", __name__)


@bp.get("/")
def index():
    collections = ext()["collections"]
    rows = []
    for name in collections.names():
        with collections.db(name) as conn:
            info = state.summary(conn) if conn is not None else None
            seeds = state.seeds(conn) if conn is not None else []
        rows.append({"name": name, "summary": info, "seeds": seeds})
    return render_template("home/index.html", collections=rows, default_collection=default_collection())

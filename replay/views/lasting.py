"""Lasting addresses: ``/web/<ts>/<url>`` in the default collection, and ``/id/<pid>``, the
resolver of permanent capture ids (``index.cdx.pid``). Both redirect to the collection's own replay
address, so what a reader then sees (banner, links, Memento headers) is the collection's."""

from __future__ import annotations

from urllib.parse import quote

from flask import Blueprint, redirect, render_template, request

from index.cdx.pid import resolve
from index.cdx.versions import NoSuchCapture
from replay import access
from replay.context import ext
from replay.views.rawpath import raw_rest
from strata.errors import CollectionError

bp = Blueprint("lasting", __name__)
_PRINTABLE = "".join(map(chr, range(0x21, 0x7F)))


def default_collection() -> str | None:
    """The ``default_collection`` setting, else the only collection when there is just one."""
    chosen = ext()["settings"]["default_collection"]
    if chosen:
        return chosen
    names = ext()["collections"].names()
    return names[0] if len(names) == 1 else None


def viewer() -> dict:
    """Who asks, as ``index.cdx.versions.filter_captures`` is told it: the request's access level."""
    return {"host": request.host, "level": access.level()}


@bp.route("/web/<path:rest>", methods=["GET", "HEAD"])
def web(rest: str):
    name = default_collection()
    if name is None:
        raise CollectionError(
            "/web/ addresses need a default collection: there are several; start the server with "
            "strata serve --default-collection NAME (or give the collection: /NAME/<timestamp>/<url>)"
        )
    ext()["collections"].require(name)
    return redirect(request.script_root + quote(f"/{name}/{raw_rest('/web/')}", safe=_PRINTABLE), code=302)


@bp.get("/id/<pid>")
def permanent(pid: str):
    found = resolve(ext()["collections"].root, pid, viewer())
    if not found:
        raise NoSuchCapture(f"No capture in this archive has the permanent id {pid!r}.")
    targets = [
        (name, v, request.script_root + quote(f"/{name}/{v.timestamp}/{v.url}", safe=_PRINTABLE)) for name, v in found
    ]
    if len(targets) == 1:
        return redirect(targets[0][2], code=302)
    return render_template("lasting/choices.html", pid=pid, targets=targets), 300

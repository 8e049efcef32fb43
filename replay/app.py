"""The public replay application: ``create_app(root, config)`` builds it.

Flask serves Strata's pages (home, collection, calendar, error pages) and hands replay addresses
to ``replay.engine``, which runs pywb's rewriter and warcserver in this process. pywb is imported
here, inside the factory, never at import time: importing ``pywb.apps.frontendapp`` would
monkey-patch the whole process with gevent, and Strata does not use it (see ``replay.transport``).

The replay origin keeps no state about readers: no session, no cookies of its own, and archived
``Set-Cookie`` headers are dropped (``replay.headers``). The staff console runs elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from flask import Flask
from flask.sessions import SessionInterface

from replay.config import build_config
from replay.context import EXTENSION


def create_app(root: Path, config: dict | None = None) -> Flask:
    settings = build_config(config)
    app = Flask(__name__, static_folder="static", static_url_path="/static/strata")
    app.url_map.merge_slashes = False  # archived URLs keep their "//"
    app.config.update(DEBUG=settings["debug"], PROPAGATE_EXCEPTIONS=False, MAX_CONTENT_LENGTH=1 << 20)
    app.session_interface = _NoSessions()

    from replay.cdxapi import CdxApi
    from replay.collections import Collections
    from replay.engine import ReplayEngine

    collections = Collections(Path(root))
    app.extensions[EXTENSION] = {
        "settings": settings,
        "collections": collections,
        "engine": ReplayEngine(Path(root), settings, collections.deletion, collections.rules),
        "cdx": CdxApi(Path(root), settings["cdx_limit"], settings["cdx_time_limit"]),
    }

    from replay import access, filters, origins, search
    from replay.views import (
        capture_api,
        cdx,
        changes,
        collection,
        diff,
        errors,
        holdings,
        home,
        lasting,
        publications,
        pywb_static,
        replay,
        sitemap,
    )

    policy = access.AccessPolicy(Path(root), settings)
    origins.register(app, policy.origins, settings["hsts_seconds"])
    access.register(app, policy)
    filters.register(app)
    errors.register(app)
    app.register_blueprint(home.bp)
    app.register_blueprint(pywb_static.bp)
    app.register_blueprint(search.bp)
    app.register_blueprint(collection.bp)
    app.register_blueprint(publications.bp)
    app.register_blueprint(capture_api.bp)
    app.register_blueprint(cdx.bp)  # /<coll>/cdx before /<coll>/<path:rest> (werkzeug ranks the fixed part first)
    app.register_blueprint(lasting.bp)
    app.register_blueprint(diff.bp)
    app.register_blueprint(sitemap.bp)
    app.register_blueprint(holdings.bp)
    app.register_blueprint(changes.bp)
    app.register_blueprint(replay.bp)
    app.jinja_env.globals["has_search"] = "search.page" in app.view_functions
    return app


class _NoSessions(SessionInterface):
    """Never reads or writes a session cookie; writing to ``flask.session`` raises."""

    def open_session(self, app, request):
        return None

    def save_session(self, app, session, response) -> None:
        return None

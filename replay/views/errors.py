"""The one error handler: every failure becomes a page with the right status, never a traceback.

Strata's errors carry their template and context (``replay.errors``); pywb's ``WbException`` and
werkzeug's HTTP errors keep their status; anything else is logged and shown as a plain 500. A 404
for a request that escaped rewriting in a replayed page is redirected into that page's snapshot
(``views/escaped.py``).
"""

from __future__ import annotations

import logging

from flask import Flask, redirect, render_template
from werkzeug.exceptions import HTTPException, NotFound

from replay.context import public
from replay.errors import ReplayError, UnknownCollection
from replay.views import escaped
from strata.errors import StrataError

log = logging.getLogger(__name__)


def register(app: Flask) -> None:
    app.register_error_handler(Exception, _handle)


def _handle(exc: Exception):
    from pywb.utils.wbexception import WbException

    if isinstance(exc, (UnknownCollection, NotFound)) and (target := escaped.redirect_target()):
        return redirect(target, code=307)
    if isinstance(exc, ReplayError):
        return _page(exc.template, exc.http_status, message=public(exc.message), **exc.context())
    if isinstance(exc, StrataError):
        return _page("errors/generic.html", exc.http_status, message=public(exc.message))
    if isinstance(exc, HTTPException):
        return _page("errors/generic.html", exc.code or 500, message=exc.description, title=exc.name)
    if isinstance(exc, WbException):
        status = exc.status_code or 500
        return _page("errors/generic.html", status, message=_wb_message(exc), title=exc.status())
    log.exception("replay failed")
    return _page(
        "errors/generic.html", 500, message="Something went wrong while serving this page.", title="Internal error"
    )


def _page(template: str, status: int, **context):
    try:
        return render_template(template, status=status, **context), status
    except Exception:  # a broken template must not turn an error page into a traceback
        log.exception("error page %s failed to render", template)
        return FALLBACK.format(status=status), status, {"Content-Type": "text/html; charset=utf-8"}


FALLBACK = (
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Error {status}</title></head>'
    '<body><h1>Error {status}</h1><p>This page could not be shown. <a href="/">All collections</a></p>'
    "</body></html>"
)


def _wb_message(exc) -> str:
    if exc.status_code == 503:
        return "The archive file holding this capture could not be read."
    msg = exc.msg if isinstance(exc.msg, str) else ""
    return public(msg) if msg else "The archive could not serve this address."

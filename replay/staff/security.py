"""What every staff request passes through: session, background-request refusal, login, CSRF,
response headers, and the one error handler.

- **Session**: an HttpOnly, SameSite=Lax, host-only cookie (``__Host-`` prefixed and Secure over
  HTTPS) holding a random token; the staff database (``replay.staff.users``) maps its hash to the user.
- **Other sites' pages**: a browser labels each request with ``Sec-Fetch-Site``. The replay origin
  (``archive.example.org``) is *same-site* with the console (``staff.example.org``), so SameSite
  cookies do not stop its scripts; the console therefore refuses every cross-site or same-site
  request except a top-level GET navigation (a staff member following a link). Requests without
  the header (old browsers, command-line clients) go on to the checks below.
- **Login**: every endpoint except ``PUBLIC_ENDPOINTS`` needs a session; pages redirect to the
  login page, ``/api/`` answers 401 JSON, anything else 401.
- **CSRF**: every request that is not GET/HEAD/OPTIONS must carry the session's token (form field
  ``csrf_token`` or header ``X-CSRF-Token``) and, when the browser sends one, an ``Origin`` equal to
  the console's own. The login form, before any session exists, uses a double-submit token (a
  SameSite=Strict cookie that must match the form field).
"""

from __future__ import annotations

import hmac
import logging
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

from flask import Flask, g, jsonify, redirect, render_template, request, url_for
from werkzeug.exceptions import BadRequest, HTTPException, SecurityError

from harvester.jobs.queue import open_queue
from replay.access import client_address
from replay.staff.context import ext
from replay.staff.users import Users
from strata.errors import StrataError

log = logging.getLogger(__name__)

PUBLIC_ENDPOINTS = frozenset({"auth.login", "static"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SESSION_COOKIE = "strata_staff"
LOGIN_COOKIE = "strata_login"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def users() -> Users:
    if "staff_users" not in g:
        settings = ext()["settings"]
        g.staff_users = Users.for_root(
            ext()["root"],
            session_lifetime=timedelta(hours=settings["session_hours"]),
            idle_timeout=timedelta(minutes=settings["idle_minutes"]),
        )
    return g.staff_users


def queue():
    if "staff_queue" not in g:
        g.staff_queue = open_queue(ext()["root"], ext()["settings"]["queue_backend"])
    return g.staff_queue


def client_id() -> str:
    """The client's address (through ``trusted_proxies`` as the replay app reads it), for pacing logins."""
    nets = ext()["trusted"]
    return str(client_address(request.environ, nets) or "unknown")


def secure() -> bool:
    setting = ext()["settings"]["https"]
    return request.is_secure if setting == "auto" else bool(setting)


def cookie_name(base: str) -> str:
    return f"__Host-{base}" if secure() else base


def set_cookie(response, base: str, value: str, max_age: int | None, samesite: str = "Lax") -> None:
    response.set_cookie(
        cookie_name(base), value, max_age=max_age, path="/", secure=secure(), httponly=True, samesite=samesite
    )


def clear_cookie(response, base: str) -> None:
    response.delete_cookie(cookie_name(base), path="/", secure=secure(), httponly=True, samesite="Lax")


def csrf_token() -> str:
    """The token forms must echo: the session's, or (on the login page) the pre-login one."""
    if g.get("staff_session") is not None:
        return g.staff_session.csrf
    if "login_csrf" not in g:
        g.login_csrf = request.cookies.get(cookie_name(LOGIN_COOKIE)) or secrets.token_urlsafe(32)
    return g.login_csrf


def register(app: Flask) -> None:
    app.before_request(_before)
    app.after_request(_after)
    app.teardown_request(_teardown)
    app.register_error_handler(Exception, _handle_error)
    app.jinja_env.globals["csrf_token"] = csrf_token


def _refuse(status: int, message: str):
    if request.path.startswith("/api/") or not request.accept_mimetypes.accept_html:
        return jsonify({"error": message}), status
    return render_template("staff/error.html", status=status, message=message), status


def _before():
    g.staff_session = None
    g.user = None
    if isinstance(request.routing_exception, SecurityError):
        raise BadRequest("This host name does not serve the staff console.")
    site = request.headers.get("Sec-Fetch-Site")
    if site in ("cross-site", "same-site"):
        navigation = request.method == "GET" and request.headers.get("Sec-Fetch-Mode") == "navigate"
        if not navigation:
            return _refuse(403, "The staff console does not answer requests sent by other sites' pages.")
    if request.endpoint == "static":
        return None
    # Each value of the cookie is tried: over plain HTTP another host of the domain (an archived
    # page's script) can send one more under the same name, with a longer path that comes first.
    for token in request.cookies.getlist(cookie_name(SESSION_COOKIE))[:4]:
        session = users().session(token)
        if session is not None:
            g.staff_session, g.user = session, session.user
            break
    if g.user is None and request.endpoint not in PUBLIC_ENDPOINTS:
        if request.method == "GET" and not request.path.startswith("/api/"):
            return redirect(url_for("auth.login", next=request.full_path.rstrip("?")))
        return _refuse(401, "Log in first.")
    if request.method not in SAFE_METHODS:
        problem = _csrf_problem()
        if problem:
            log.warning("refused %s %s: %s", request.method, request.path, problem)
            return _refuse(403, problem)
    return None


def _csrf_problem() -> str | None:
    origin = request.headers.get("Origin")
    if origin is not None:
        parts = urlsplit(origin)
        if origin == "null" or (parts.scheme, parts.netloc) != (request.scheme, request.host):
            return "This form was sent from another site."
    sent = request.headers.get("X-CSRF-Token") or request.form.get("csrf_token") or ""
    if g.staff_session is not None:
        expected = g.staff_session.csrf
    else:
        expected = request.cookies.get(cookie_name(LOGIN_COOKIE)) or ""
    if not expected or not sent or not hmac.compare_digest(sent.encode(), expected.encode()):
        return "The form's security token is missing or out of date; reload the page and try again."
    return None


def _after(response):
    for key, value in HEADERS.items():
        response.headers.setdefault(key, value)
    hsts = ext()["settings"]["hsts_seconds"]
    if hsts and request.is_secure:
        response.headers["Strict-Transport-Security"] = f"max-age={hsts}"
    if request.endpoint == "auth.login" and g.get("staff_session") is None and "login_csrf" in g:
        set_cookie(response, LOGIN_COOKIE, g.login_csrf, max_age=3600, samesite="Strict")
    return response


def _teardown(exc) -> None:
    for key in ("staff_users", "staff_queue"):
        obj = g.pop(key, None)
        if obj is not None:
            obj.close()


def _handle_error(exc: Exception):
    if isinstance(exc, StrataError):
        response = _refuse(exc.http_status, exc.message)
        retry = getattr(exc, "retry_after", None)
        return (*response, {"Retry-After": str(retry)}) if retry else response
    if isinstance(exc, HTTPException):
        return _refuse(exc.code or 500, exc.description or exc.name)
    log.exception("staff console failed")
    return _refuse(500, "Something went wrong; the error was logged.")
